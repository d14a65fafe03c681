"""Setting a computer up for the course without make: the install, lab and test commands, and the doctor."""
