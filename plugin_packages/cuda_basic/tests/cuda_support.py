"""A device played by NumPy, for the cuda_basic tests on machines without a GPU."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.plugin import Device, Stream
from mini_infer_core.registry import PluginRegistry

__all__ = ["NumpyDevice", "cupy_or_skip", "registry"]


class NumpyDevice(Device):
    """Host memory under any device name (``host`` for the plugin kit, ``cuda`` to run CUDA
    plugins' NumPy paths through the engine)."""

    def __init__(self, name: str = "host") -> None:
        self.name = name

    def allocate(self, nbytes: int) -> Any:
        return np.empty(nbytes, np.uint8)

    def view(self, buffer: Any, offset: int, dtype: Any, shape: tuple[int, ...]) -> Any:
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        return buffer[offset:offset + n].view(dtype).reshape(shape)

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return np.empty(shape, dtype)

    def to_device(self, host: Any) -> Any:
        return np.array(host)

    def to_host(self, array: Any) -> Any:
        return np.array(array)

    def copy(self, dst: Any, src: Any, stream: Stream | None = None) -> None:
        np.copyto(dst, src)


def registry(cuda: Device | None = None) -> PluginRegistry:
    """The cpu plugins (they fold constants and run what the cuda ones lack) and the cuda
    plugins, with ``cuda`` as the cuda device (default: the real one)."""
    from mini_infer_cpu_plugins.catalog import lazy_creators as cpu_creators
    from mini_infer_cpu_plugins.device import CpuDevice
    from mini_infer_cuda_plugins.catalog import lazy_creators
    from mini_infer_cuda_plugins.device import CudaDevice

    reg = PluginRegistry()
    reg.register_device(CpuDevice())
    reg.register_device(cuda if cuda is not None else CudaDevice())
    for creator in [*cpu_creators(), *lazy_creators()]:
        reg.register_creator(creator)
    return reg


def cupy_or_skip() -> Any:
    """CuPy, or a skip that says why no GPU can be used here."""
    import pytest
    from mini_infer_cuda_plugins.device import probe_cuda

    ok, reason = probe_cuda()
    if not ok:
        pytest.skip(f"no usable CUDA device: {reason}")
    import cupy

    return cupy
