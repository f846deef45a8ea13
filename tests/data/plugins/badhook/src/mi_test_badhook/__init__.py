"""A plugin distribution with a misspelt hook (tests validation)."""
