"""Fails on import, as a plugin with a missing dependency would."""

import this_module_does_not_exist  # noqa: F401
