"""The ``cpu`` device: NumPy arrays in host memory; work runs synchronously."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mini_infer_core.plugin import Device, Stream

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CpuDevice"]


class CpuDevice(Device):
    name = "cpu"
    host_arrays = True

    def allocate(self, nbytes: int) -> np.ndarray[Any, Any]:
        # 64 spare bytes let every view start 64-byte aligned
        import numpy as np
        raw = np.empty(nbytes + 64, dtype=np.uint8)
        shift = (-raw.ctypes.data) % 64
        return raw[shift : shift + nbytes]

    def view(self, buffer: Any, offset: int, dtype: np.dtype[Any], shape: tuple[int, ...]
             ) -> np.ndarray[Any, Any]:
        import numpy as np
        n = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        view: np.ndarray[Any, Any] = buffer[offset : offset + n].view(dtype).reshape(shape)
        return view

    def empty(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
        import numpy as np
        return np.empty(shape, dtype=dtype)

    def to_device(self, host: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        return host

    def to_host(self, array: Any) -> np.ndarray[Any, Any]:
        import numpy as np
        return np.asarray(array)

    def copy(self, dst: Any, src: Any, stream: Stream | None = None) -> None:
        import numpy as np
        np.copyto(dst, src)
