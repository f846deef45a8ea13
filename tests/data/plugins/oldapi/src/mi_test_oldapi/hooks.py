"""Targets plugin API 0: must be listed as incompatible and not loaded."""

from mini_infer_core.registry import hookimpl


@hookimpl
def mini_infer_plugin_api_version() -> str:
    return "0"


@hookimpl
def mini_infer_creators() -> list[object]:
    raise AssertionError("an incompatible plugin's creators must not be asked for")
