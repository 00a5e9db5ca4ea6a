"""nvq_runner: the resident agent on every node. Importable without the rest of nvq."""

__version__ = "0.1.0"
