"""Threads: how many the BLAS (and other native pools) may use, and which BLAS runs.

NumPy kernels spend their time in BLAS, whose thread pool is process-wide; mini-infer limits it
through threadpoolctl, and with it every pool a plugin registers with threadpoolctl (the
compiled kernels' own). Default: all cores (the pools' own default)."""

from __future__ import annotations

import os
from typing import Any

__all__ = ["set_num_threads", "get_num_threads", "blas_info", "reapply_num_threads"]

_limiter: Any = None
_requested: int | None = None


def set_num_threads(n: int | None) -> None:
    """Limit native thread pools to ``n`` threads (None: back to their defaults)."""
    global _limiter, _requested
    from threadpoolctl import threadpool_limits

    if _limiter is not None:
        _limiter.restore_original_limits()
        _limiter = None
    if n is not None:
        if n < 1:
            raise ValueError(f"thread count must be at least 1, got {n}")
        _limiter = threadpool_limits(limits=n)
    _requested = n


def reapply_num_threads() -> None:
    """Apply the count last given to :func:`set_num_threads` again, to every pool threadpoolctl
    knows now: a plugin whose pool registers after that call (the compiled kernels' does, when
    its library loads) gets the limit, and a later ``set_num_threads(None)`` restores it too."""
    if _requested is not None:
        set_num_threads(_requested)


def get_num_threads() -> int:
    info = blas_info()
    return max((int(i["num_threads"]) for i in info), default=os.cpu_count() or 1)


def blas_info() -> list[dict[str, Any]]:
    """Each native pool: library, internal API (openblas, mkl, ...), version, threads."""
    import numpy  # noqa: F401 - loads the BLAS so threadpoolctl can see it
    from threadpoolctl import threadpool_info

    return [{k: i.get(k) for k in ("user_api", "internal_api", "version", "num_threads",
                                   "prefix", "architecture")} for i in threadpool_info()]
