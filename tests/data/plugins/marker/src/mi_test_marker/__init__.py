"""A plugin distribution with an import-time side effect (tests blocking)."""
