"""The compiled kernels' thread pool (``_pool.c``) as threadpoolctl sees it.

Registered as a threadpoolctl controller (user API ``mini_infer``), so that what limits the
BLAS limits the pool too: ``threadpoolctl.threadpool_limits(n)``, mini-infer's
``set_num_threads(n)`` and ``mini-infer bench --threads n``; and ``threadpool_info()`` (the
benchmarks' and ``bench``'s report) lists it next to the BLAS with its thread count.
"""

from __future__ import annotations

from typing import Any

__all__ = ["controller", "register"]


def controller(threadpoolctl: Any) -> type[Any]:
    """The pool's threadpoolctl controller class (made once threadpoolctl is imported:
    loading an engine does not import it, issue 30)."""

    class PoolController(threadpoolctl.LibController):  # type: ignore[misc]
        user_api = "mini_infer"
        internal_api = "mini_infer_cpu_native"
        filename_prefixes = ("_kernels",)
        #: another library whose file name starts with ``_kernels`` is not this one
        check_symbols = ("mi_pool_get_threads",)

        def _symbol(self, name: str) -> Any:
            return getattr(self.dynlib, name, None)

        def get_num_threads(self) -> int | None:
            fn = self._symbol("mi_pool_get_threads")
            return None if fn is None else int(fn())

        def set_num_threads(self, num_threads: int) -> None:
            fn = self._symbol("mi_pool_set_threads")
            if fn is not None:
                fn(int(num_threads))

        def get_version(self) -> str | None:
            from importlib import metadata  # only when threadpoolctl lists the pools (it
            # costs the mail parser's import: a tenth of a second of every start, issue 30)

            try:
                return metadata.version("mini-infer-cpu-native")
            except metadata.PackageNotFoundError:
                return None

    return PoolController


_registered = False


def register(lib: Any = None) -> None:
    """Give the pool (the library ``lib``) the process's CPU budget as its default thread
    count, make threadpoolctl see it (once; when threadpoolctl is imported), and give it the
    thread count mini-infer was asked for before this library loaded."""
    global _registered
    if _registered:
        return
    _registered = True
    from mini_infer_core.threads import cpu_budget, reapply_num_threads, with_threadpoolctl

    set_budget = getattr(lib, "mi_pool_set_budget", None)
    if set_budget is not None:
        set_budget(int(cpu_budget().threads))
    # now if threadpoolctl is imported, else when anything imports it
    with_threadpoolctl(lambda threadpoolctl: threadpoolctl.register(controller(threadpoolctl)))
    reapply_num_threads()
