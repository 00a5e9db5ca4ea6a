"""nvq: a GPU job queue for your own machines, over SSH."""

__version__ = "0.1.0"
