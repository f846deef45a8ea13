"""Implements a hook that does not exist: must fail when registering, named."""

from mini_infer_core.registry import hookimpl


@hookimpl
def mini_infer_creator() -> list[object]:  # misspelt: the spec is mini_infer_creators
    return []
