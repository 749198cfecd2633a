"""isocloth: inextensible cloth simulation."""
__version__ = "0.1.0"
