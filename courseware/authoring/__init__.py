"""Tools an author runs on the source notebooks and commits the result of: exercise tags, quiz cells, the bootstrap cell, the map of the files."""
