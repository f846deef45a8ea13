"""Arrays a plugin makes from a weight once (packed, transformed) and keeps while the weight
stays the same array (:class:`Derived`: Conv's layers, Gemm)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from mini_infer_core.plugin.arrays import NDArray

__all__ = ["Derived"]

Array = NDArray[Any]
T = TypeVar("T")


class Derived:
    """Arrays made from a weight once (packed, transformed) and kept while it stays."""

    #: key -> (the weight it was made from, what was made)
    _derived_cache: dict[Any, tuple[Array, Any]] | None = None

    def _derived(self, w: Array, key: Any, make: Callable[[Array], T]) -> T:
        """``make(w)``, kept while ``w`` is the same read-only array (a constant: the engine's
        weights); recomputed on every call for a writable one, whose values may change. Each
        key keeps its own (Gemm derives from B and from C)."""
        if w.flags.writeable:
            return make(w)
        if self._derived_cache is None:
            self._derived_cache = {}
        cached = self._derived_cache.get(key)
        if cached is None or cached[0] is not w:
            cached = self._derived_cache[key] = (w, make(w))
        made: T = cached[1]
        return made

