"""Input and output at the edges: document readers and JSON-lines writers."""
