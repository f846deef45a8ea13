"""The ``cuda`` device on CuPy. CuPy is imported only when the device is used."""

from __future__ import annotations

import ctypes
import importlib.util
from functools import cache
from typing import Any

import numpy as np

from mini_infer_core.errors import DeviceError
from mini_infer_core.plugin import Device, Stream

__all__ = ["CudaDevice", "probe_cuda"]

_INSTALL = ('pip install "mini-infer-cuda-plugins[cuda12]" (CUDA 12) or '
            '"mini-infer-cuda-plugins[cuda13]" (CUDA 13)')


@cache
def probe_cuda() -> tuple[bool, str]:
    """(available, reason) without importing CuPy: the driver is asked through ctypes."""
    if importlib.util.find_spec("cupy") is None:
        return False, f"CuPy is not installed; {_INSTALL}"
    lib = None
    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            continue
    if lib is None:
        return False, "no NVIDIA driver found (libcuda could not be loaded)"
    if lib.cuInit(0) != 0:
        return False, "the NVIDIA driver failed to initialise (cuInit)"
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return False, "the NVIDIA driver reports no CUDA device"
    return True, ""


class CudaStream(Stream):
    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def synchronize(self) -> None:
        self.stream.synchronize()


class CudaDevice(Device):
    name = "cuda"

    def availability(self) -> tuple[bool, str]:
        return probe_cuda()

    def _cp(self) -> Any:
        ok, reason = self.availability()
        if not ok:
            raise DeviceError(f"device 'cuda' is unavailable: {reason}")
        import cupy

        return cupy

    def allocate(self, nbytes: int) -> Any:
        return self._cp().empty(nbytes, dtype=np.uint8)

    def view(self, buffer: Any, offset: int, dtype: np.dtype[Any], shape: tuple[int, ...]
             ) -> Any:
        n = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return buffer[offset : offset + n].view(dtype).reshape(shape)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Any:
        return self._cp().empty(shape, dtype=dtype)

    def to_device(self, host: np.ndarray[Any, Any]) -> Any:
        return self._cp().asarray(host)

    def to_host(self, array: Any) -> np.ndarray[Any, Any]:
        host: np.ndarray[Any, Any] = self._cp().asnumpy(array)
        return host

    def copy(self, dst: Any, src: Any, stream: Stream | None = None) -> None:
        self._cp().copyto(dst, src)

    def create_stream(self) -> Stream:
        return CudaStream(self._cp().cuda.Stream(non_blocking=True))

    def synchronize(self) -> None:
        self._cp().cuda.Device().synchronize()
