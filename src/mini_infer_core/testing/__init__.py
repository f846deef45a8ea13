"""Test helpers for mini-infer and its plugin authors."""
