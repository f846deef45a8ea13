"""The ``cuda`` device on CuPy. CuPy is imported only when the device is used.

Streams: a context's work runs on its own ``cupy.cuda.Stream`` (a :class:`CudaStream`;
kernels enter it with ``with stream.stream:``, see :func:`on_stream`). The stream is a
*blocking* one, ordered with CuPy's default (legacy) stream, so that work a plugin queues
without entering the stream (CuPy's default) is still ordered with the rest. Host-to-device
copies complete before ``to_device`` returns; ``copy`` runs on the stream it is given.

CUDA graphs (for the engine): ``supports_graphs``, ``capture_graph(fn, stream)`` (which runs
``fn`` once eagerly first: kernels compile, plugins allocate their buffers and cuBLAS its
workspace outside the capture, see ``CudaPlugin.graph_safe``), ``begin_capture(stream)``,
``end_capture(stream) -> graph`` and ``launch_graph(graph, stream)`` wrap CuPy's stream capture.
"""

from __future__ import annotations

import ctypes
import importlib.util
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from mini_infer_core.errors import DeviceError
from mini_infer_core.plugin import Device, Stream

from ._stream import on_stream

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CudaDevice", "CudaStream", "on_stream", "probe_cuda"]

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
    """A mini-infer stream around a ``cupy.cuda.Stream`` (``.stream``)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def synchronize(self) -> None:
        self.stream.synchronize()

    def __enter__(self) -> Any:
        return self.stream.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.stream.__exit__(*exc)


class CudaDevice(Device):
    name = "cuda"

    def availability(self) -> tuple[bool, str]:
        return probe_cuda()

    def identity(self) -> str:
        """The GPU's model and compute capability (part of the timing cache's keys)."""
        if not self.availability()[0]:
            return ""
        try:
            import cupy

            dev = cupy.cuda.Device()
            name = cupy.cuda.runtime.getDeviceProperties(dev.id)["name"]
            name = name.decode() if isinstance(name, bytes) else str(name)
            return f"{name} sm_{dev.compute_capability}"
        except Exception:  # noqa: BLE001 - an identity is best effort, never an error
            return ""

    def _cp(self) -> Any:
        ok, reason = self.availability()
        if not ok:
            raise DeviceError(f"device 'cuda' is unavailable: {reason}")
        import cupy

        return cupy

    def allocate(self, nbytes: int) -> Any:
        import numpy as np
        return self._cp().empty(nbytes, dtype=np.uint8)

    def view(self, buffer: Any, offset: int, dtype: np.dtype[Any], shape: tuple[int, ...]
             ) -> Any:
        import numpy as np
        n = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return buffer[offset : offset + n].view(dtype).reshape(shape)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Any:
        return self._cp().empty(shape, dtype=dtype)

    def to_device(self, host: np.ndarray[Any, Any]) -> Any:
        cp = self._cp()
        array = cp.asarray(host)
        # from pageable memory the copy may still be in flight: finish it, so that kernels
        # on other (non-blocking) streams read the data
        cp.cuda.get_current_stream().synchronize()
        return array

    def to_host(self, array: Any) -> np.ndarray[Any, Any]:
        host: np.ndarray[Any, Any] = self._cp().asnumpy(array)
        return host

    def copy(self, dst: Any, src: Any, stream: Stream | None = None) -> None:
        cp = self._cp()
        with on_stream(stream):
            cp.copyto(dst, src)

    def create_stream(self) -> Stream:
        return CudaStream(self._cp().cuda.Stream(non_blocking=False))

    def synchronize(self) -> None:
        self._cp().cuda.Device().synchronize()

    # -- CUDA graphs ------------------------------------------------------------------------
    def supports_graphs(self) -> bool:
        """Whether streams of this device can be captured into CUDA graphs (a GPU, and a
        CuPy with stream capture, not on ROCm)."""
        if not self.availability()[0]:
            return False
        try:
            cp = self._cp()
            return hasattr(cp.cuda.Stream, "begin_capture") and \
                not getattr(cp.cuda.runtime, "is_hip", False)
        except Exception:  # noqa: BLE001 - a capability probe answers, never raises
            return False

    def capture_graph(self, fn: Callable[[], None], stream: Stream) -> Any:
        """Run ``fn`` (which queues work on ``stream``) once eagerly, then capture it into a
        graph. The eager run does what must not happen during a capture: compiling kernels,
        first allocations of plugin buffers, library handles and workspaces."""
        fn()
        stream.synchronize()
        self.begin_capture(stream)
        try:
            fn()
        except BaseException:
            self.end_capture(stream)  # leave the stream usable; the partial graph is dropped
            raise
        return self.end_capture(stream)

    def begin_capture(self, stream: Stream) -> None:
        """Start capturing the work enqueued on ``stream`` (nothing runs until the graph is
        launched). Relaxed mode: CuPy's memory pool may still grow during the capture."""
        _raw_stream(stream).begin_capture()

    def end_capture(self, stream: Stream) -> Any:
        """Stop capturing; returns the instantiated graph (a ``cupy.cuda.Graph``)."""
        return _raw_stream(stream).end_capture()

    def launch_graph(self, graph: Any, stream: Stream) -> None:
        """Replay ``graph`` on ``stream`` (asynchronously, as any enqueue)."""
        graph.launch(stream=_raw_stream(stream))


def _raw_stream(stream: Any) -> Any:
    inner = getattr(stream, "stream", None)
    if inner is None:
        raise DeviceError(f"{stream!r} is not a stream of the cuda device")
    return inner
