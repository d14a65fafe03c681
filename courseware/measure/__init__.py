"""The course measured as a reader meets it: minutes per section, run times, slide heights, timing asserts, the results table."""
