"""Memory planning: place tensors in one arena, reusing bytes whose lifetimes do not overlap.

Greedy by size (as TFLite's arena planner): the largest tensors are placed first, each at the
lowest 64-byte-aligned offset that does not collide with an already placed tensor alive at the
same time.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._record import record

__all__ = ["ALIGNMENT", "MemoryPlan", "plan_memory"]

ALIGNMENT = 64


def _align(n: int) -> int:
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


@record(frozen=True)
class MemoryPlan:
    offsets: tuple[int, ...]
    peak_bytes: int  # the arena size
    naive_bytes: int  # what one buffer per tensor would take

    def to_json(self) -> dict[str, int | float]:
        return {"planned_peak_bytes": self.peak_bytes, "naive_bytes": self.naive_bytes,
                "tensors": len(self.offsets),
                "saving": round(1 - self.peak_bytes / self.naive_bytes, 4)
                if self.naive_bytes else 0.0}


def plan_memory(sizes: Sequence[int], lifetimes: Sequence[tuple[int, int]]) -> MemoryPlan:
    """``sizes[i]`` bytes alive from step ``lifetimes[i][0]`` to ``lifetimes[i][1]`` inclusive."""
    n = len(sizes)
    order = sorted(range(n), key=lambda i: (-sizes[i], lifetimes[i][0], i))
    offsets = [0] * n
    placed: list[tuple[int, int, int, int]] = []  # (first, last, start, end)
    peak = 0
    for i in order:
        size = _align(max(int(sizes[i]), 1))
        first, last = lifetimes[i]
        busy = sorted((s, e) for f, la, s, e in placed if f <= last and first <= la)
        offset = 0
        for s, e in busy:
            if offset + size <= s:
                break
            offset = max(offset, _align(e))
        offsets[i] = offset
        placed.append((first, last, offset, offset + size))
        peak = max(peak, offset + size)
    naive = sum(_align(max(int(s), 1)) for s in sizes)
    return MemoryPlan(tuple(offsets), peak, naive)
