"""The compiled extension module; its functions are reached through ctypes (_native)."""
