"""Buffers a plugin instance keeps between runs, by key (shape, tag...), so that steady-state
runs allocate nothing."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

__all__ = ["BufferCache"]


class BufferCache:
    """At most ``capacity`` values by key, the oldest dropped first (dynamic shapes would
    otherwise grow it without bound). Each execution context clones its plugins, so a
    plugin's cache never serves two contexts at once. Device packages add the methods that
    make their buffers (``buffer(...)``) on top of ``get``/``put``."""

    def __init__(self, capacity: int = 12) -> None:
        self.capacity = capacity
        self._items: dict[Hashable, Any] = {}

    def get(self, key: Hashable) -> Any:
        return self._items.get(key)

    def put(self, key: Hashable, value: Any) -> Any:
        if key not in self._items and len(self._items) >= self.capacity:
            self._items.pop(next(iter(self._items)))
        self._items[key] = value
        return value
