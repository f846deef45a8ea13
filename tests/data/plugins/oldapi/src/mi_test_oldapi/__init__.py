"""A plugin distribution targeting another plugin API version."""
