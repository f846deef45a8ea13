"""The device interface. Devices come from plugin packages (the core has none).

A device allocates flat byte buffers, views them as typed arrays, copies between host and
device, and orders work through streams. Arrays on the device are those of the device's array
module (NumPy for ``cpu``, CuPy for ``cuda``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

__all__ = ["Device", "Stream"]


class Stream:
    """An ordered queue of work. The CPU runs synchronously, so its stream is a no-op."""

    def synchronize(self) -> None:
        """Wait until all work queued on the stream has finished."""


class Device(ABC):
    #: device name used in BuilderConfig and on creators, e.g. "cpu"
    name: str = ""

    def availability(self) -> tuple[bool, str]:
        """(available, reason when not). Must not raise."""
        return True, ""

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

    def synchronize(self) -> None:
        """Wait for all work on the device."""
