"""The version of mini-infer-core (one place; the bottom of the layers)."""

__version__ = "0.1.0"
