"""Entry point of ``mini_infer.plugins``: hands mini-infer this package's lazy creators and the
``cuda`` device. Imports neither CuPy nor any kernel module."""

from __future__ import annotations

from typing import Any

from mini_infer_core.registry import hookimpl

__all__ = ["mini_infer_creators", "mini_infer_devices", "mini_infer_plugin_api_version"]


@hookimpl
def mini_infer_plugin_api_version() -> str:
    return "1"


@hookimpl
def mini_infer_creators() -> list[Any]:
    from .catalog import lazy_creators

    return lazy_creators()


@hookimpl
def mini_infer_devices() -> list[Any]:
    from .device import CudaDevice

    return [CudaDevice()]
