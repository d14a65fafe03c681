"""The three editions built from the one source: the student release and nbgrader course, the lecture decks and hand-outs, the website and its PDF."""
