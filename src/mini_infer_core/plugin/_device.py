"""The device interface. Devices come from plugin packages (the core has none).

A device allocates flat byte buffers, views them as typed arrays, copies between host and
device, and orders work through streams. Arrays on the device are those of the device's array
module (NumPy for ``cpu``, CuPy for ``cuda``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


__all__ = ["Device", "Stream"]


class Stream:
    """An ordered queue of work. The CPU runs synchronously, so its stream is a no-op."""

    def synchronize(self) -> None:
        """Wait until all work queued on the stream has finished."""


class Device(ABC):
    #: device name used in BuilderConfig and on creators, e.g. "cpu"
    name: str = ""
    #: whether its arrays are host NumPy arrays that its work writes synchronously:
    #: ``to_device`` and ``to_host`` hand them over as they are (``np.asarray``), ``copy``
    #: is ``np.copyto``, its streams' ``synchronize`` does nothing. Execution contexts then
    #: run small models' plans as one generated function (``engine/_direct.py``)
    host_arrays: bool = False

    def availability(self) -> tuple[bool, str]:
        """(available, reason when not). Must not raise."""
        return True, ""

    def identity(self) -> str:
        """What tactic timings on this device depend on besides its name and the host CPU
        (a GPU's model and compute capability): part of the timing cache's keys. Must not
        raise; ``""`` when nothing (the CPU is described by the cache itself)."""
        return ""

    @abstractmethod
    def allocate(self, nbytes: int) -> Any:
        """A flat uint8 buffer of ``nbytes`` bytes on the device."""

    @abstractmethod
    def view(self, buffer: Any, offset: int, dtype: np.dtype[Any], shape: tuple[int, ...]
             ) -> Any:
        """A typed, shaped array over ``buffer`` starting at byte ``offset``."""

    @abstractmethod
    def empty(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Any:
        """A new array on the device."""

    @abstractmethod
    def to_device(self, host: np.ndarray[Any, Any]) -> Any:
        """Copy a host array to the device (may return the same memory on ``cpu``)."""

    @abstractmethod
    def to_host(self, array: Any) -> np.ndarray[Any, Any]:
        """Copy a device array to a host NumPy array."""

    @abstractmethod
    def copy(self, dst: Any, src: Any, stream: Stream | None = None) -> None:
        """Copy ``src`` into ``dst`` (both on this device)."""

    def create_stream(self) -> Stream:
        return Stream()

    # -- graphs (CUDA graphs): record a whole run once, replay it cheaply ------------------
    def supports_graphs(self) -> bool:
        return False

    def capture_graph(self, fn: Callable[[], None], stream: Stream) -> Any:
        """Record the work ``fn`` queues on ``stream`` without running it; returns a graph."""
        self.begin_capture(stream)
        try:
            fn()
        finally:
            graph = self.end_capture(stream)
        return graph

    def begin_capture(self, stream: Stream) -> None:
        raise NotImplementedError(f"device {self.name!r} cannot capture graphs")

    def end_capture(self, stream: Stream) -> Any:
        raise NotImplementedError(f"device {self.name!r} cannot capture graphs")

    def launch_graph(self, graph: Any, stream: Stream) -> None:
        raise NotImplementedError(f"device {self.name!r} cannot launch graphs")

    def synchronize(self) -> None:
        """Wait for all work on the device."""
