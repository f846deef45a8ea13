"""Entry point of ``mini_infer.plugins``. Imports neither CuPy nor kernels."""

from __future__ import annotations

from typing import Any

from mini_infer_core.registry import hookimpl


@hookimpl
def mini_infer_plugin_api_version() -> str:
    return "1"


@hookimpl
def mini_infer_creators() -> list[Any]:
    return []  # CUDA kernels arrive with the CUDA backend


@hookimpl
def mini_infer_devices() -> list[Any]:
    from .device import CudaDevice

    return [CudaDevice()]
