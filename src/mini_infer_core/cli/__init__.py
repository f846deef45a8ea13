"""The ``mini-infer`` command line."""
