"""A device played by NumPy, for the cuda_basic tests on machines without a GPU."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.plugin import Device, Stream

__all__ = ["NumpyDevice"]


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
