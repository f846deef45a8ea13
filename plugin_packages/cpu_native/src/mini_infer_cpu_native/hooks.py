"""Entry point of ``mini_infer.plugins``: hands mini-infer this package's creators
(the CPU device itself comes from mini-infer-cpu-plugins)."""

from __future__ import annotations

from typing import Any

from mini_infer_core.registry import hookimpl


@hookimpl
def mini_infer_plugin_api_version() -> str:
    return "1"


@hookimpl
def mini_infer_creators() -> list[Any]:
    from .catalog import lazy_creators

    return lazy_creators()
