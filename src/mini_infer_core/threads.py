"""Threads: the process's CPU budget, how many threads the native pools may use, which BLAS.

The budget (:func:`cpu_budget`, read once, at first use) is what the process may really run
on: the CPUs of its affinity mask (``os.sched_getaffinity``: ``taskset``, a container's
cpuset) and, where its cgroup has a CPU quota (cgroup v2 ``cpu.max``, v1
``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``, the smallest along the cgroup's path), that
quota in CPUs **rounded up** (1.5 CPUs: 2 threads, as Go, Java and .NET count a quota: a
quota is spent over a period, 100 ms by default, and an inference of a few milliseconds on
2 threads stays within 1.5 CPUs of it unless the process runs flat out). The compiled
kernels' pool (mini-infer-cpu-native) uses that many threads by default, and
:func:`set_num_threads` never gives a pool more: more runnable compute threads than the
process has CPUs only queue behind each other, and a preempted one holds its share of every
parallel job.

NumPy kernels spend their time in BLAS, whose thread pool is process-wide; mini-infer limits it
through threadpoolctl, and with it every pool a plugin registers with threadpoolctl (the
compiled kernels' own). Without a limit the BLAS keeps its own default (all CPUs of the
affinity mask).

``MINI_INFER_CGROUP`` names a directory to read as the process's cgroup instead of the one
``/proc/self/cgroup`` names (it holds ``cpu.max`` or ``cpu.cfs_quota_us`` and
``cpu.cfs_period_us``): for tests, and for a cgroup mounted somewhere unusual."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from typing import Any

from ._record import record

__all__ = ["set_num_threads", "get_num_threads", "blas_info", "reapply_num_threads",
           "CpuBudget", "cpu_budget", "read_cpu_budget", "thread_choice", "with_threadpoolctl"]

_limiter: Any = None
_requested: int | None = None
_budget: CpuBudget | None = None

CGROUP_ENV = "MINI_INFER_CGROUP"


@record(frozen=True)
class CpuBudget:
    """The CPUs the process may use: ``threads`` (the thread count mini-infer's pools use by
    default), from ``affinity`` (CPUs in the affinity mask) and ``quota`` (the cgroup's CPU
    quota in CPUs, None: no quota), read from ``quota_file``."""

    threads: int
    affinity: int
    quota: float | None = None
    quota_file: str | None = None

    @property
    def reason(self) -> str:
        cpus = f"affinity {self.affinity} CPU{'s' if self.affinity != 1 else ''}"
        if self.quota is None:
            return f"{cpus}, no cgroup quota"
        quota = f"cgroup quota {self.quota:g} CPUs ({self.quota_file})"
        if self.threads < self.affinity:
            return f"{quota}, rounded up; {cpus}"
        return f"{cpus}; {quota}"


def _affinity() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _quota_of(directory: str | os.PathLike[str]) -> tuple[float, str] | None:
    """The CPU quota set in one cgroup directory, in CPUs, and the file it came from."""
    v2 = os.path.join(directory, "cpu.max")
    try:
        fields = _read(v2).split()
        if fields and fields[0] != "max":
            period = float(fields[1]) if len(fields) > 1 else 100000.0
            return float(fields[0]) / period, v2
        return None
    except (OSError, ValueError, IndexError):
        pass
    v1 = os.path.join(directory, "cpu.cfs_quota_us")
    try:
        quota = float(_read(v1).strip())
        period = float(_read(os.path.join(directory, "cpu.cfs_period_us")).strip())
    except (OSError, ValueError):
        return None
    if quota <= 0 or period <= 0:  # -1: no quota
        return None
    return quota / period, v1


def _cgroup_dirs(proc_cgroup: str | os.PathLike[str] = "/proc/self/cgroup",
                 mount: str | os.PathLike[str] = "/sys/fs/cgroup") -> list[str]:
    """The process's cgroup directories that can hold a CPU quota (v2's unified one, v1's
    ``cpu`` controller's), each with its ancestors up to the mount point: a quota set on a
    parent limits its children too. In a container (a cgroup namespace) the path is ``/``
    and the mount point is the container's own cgroup. Plain ``os.path`` strings: pathlib
    is not imported on the engine path (issue 30: about 3 ms of a cold start)."""
    try:
        lines = _read(os.fspath(proc_cgroup)).splitlines()
    except OSError:
        return []
    base = os.path.normpath(os.fspath(mount))
    dirs: list[str] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            roots = [base, os.path.join(base, "unified")]
        elif "cpu" in controllers.split(","):
            roots = [os.path.join(base, "cpu"), os.path.join(base, "cpu,cpuacct"),
                     os.path.join(base, "cpuacct,cpu")]
        else:
            continue
        rel = path.lstrip("/")
        for root in roots:
            here = os.path.normpath(os.path.join(root, rel))
            while True:
                if os.path.isdir(here):
                    dirs.append(here)
                parent = os.path.dirname(here)
                if here == root or not parent or parent == here:
                    break
                here = parent
    return dirs


def read_cpu_budget(cgroup: str | os.PathLike[str] | None = None,
                    affinity: int | None = None) -> CpuBudget:
    """Read the CPU budget now: ``affinity`` CPUs (default: the affinity mask's) and the
    quota of the cgroup directory ``cgroup`` (default: ``$MINI_INFER_CGROUP``, else the
    process's own cgroups)."""
    cpus = affinity if affinity is not None else _affinity()
    where = cgroup if cgroup is not None else os.environ.get(CGROUP_ENV)
    dirs = [os.fspath(where)] if where else _cgroup_dirs()
    best: tuple[float, str] | None = None
    for d in dirs:
        q = _quota_of(d)
        if q is not None and (best is None or q[0] < best[0]):
            best = q
    if best is None:
        return CpuBudget(threads=cpus, affinity=cpus)
    threads = max(1, min(cpus, math.ceil(best[0] - 1e-9)))
    return CpuBudget(threads=threads, affinity=cpus, quota=best[0], quota_file=best[1])


def cpu_budget() -> CpuBudget:
    """The CPU budget, read at the first call and kept for the life of the process."""
    global _budget
    if _budget is None:
        _budget = read_cpu_budget()
    return _budget


#: callbacks waiting for threadpoolctl to be imported (:func:`with_threadpoolctl`)
_pending: list[Callable[[Any], None]] = []


class _WhenImported:
    """A ``sys.meta_path`` finder that finds nothing itself: it lets the other finders find
    threadpoolctl and runs the pending callbacks right after that module has run, whoever
    imports it (mini-infer or the user), then leaves ``sys.meta_path``."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "threadpoolctl":
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        run = getattr(loader, "exec_module", None)
        if run is None:  # pragma: no cover - every loader of Python 3.11 has it
            return None

        def exec_module(module: Any) -> None:
            run(module)
            _flush(module)

        loader.exec_module = exec_module  # this spec's loader only
        return spec


_hook = _WhenImported()


def _flush(module: Any) -> None:
    if _hook in sys.meta_path:
        sys.meta_path.remove(_hook)
    while _pending:
        _pending.pop(0)(module)


def with_threadpoolctl(callback: Callable[[Any], None]) -> None:
    """Call ``callback(threadpoolctl)`` now if threadpoolctl is imported, else as soon as
    anything imports it (mini-infer's :func:`set_num_threads` and :func:`blas_info` do; a
    user's ``threadpool_limits`` or ``threadpool_info`` too). A plugin registers its pool's
    controller this way (mini-infer-cpu-native's), so that loading an engine does not
    import threadpoolctl (a few milliseconds of a cold start, issue 30) unless something
    asks for the pools."""
    module = sys.modules.get("threadpoolctl")
    if module is not None:
        callback(module)
        return
    _pending.append(callback)
    if _hook not in sys.meta_path:
        sys.meta_path.insert(0, _hook)


def set_num_threads(n: int | None) -> None:
    """Limit native thread pools to ``n`` threads, at most the CPU budget (None: back to
    their defaults: the budget for the compiled kernels' pool)."""
    global _limiter, _requested
    from threadpoolctl import threadpool_limits

    if n is not None and n < 1:
        raise ValueError(f"thread count must be at least 1, got {n}")
    if _limiter is not None:
        _limiter.restore_original_limits()
        _limiter = None
    if n is not None:
        _limiter = threadpool_limits(limits=min(n, cpu_budget().threads))
    _requested = n


def thread_choice() -> tuple[int, str]:
    """The thread count mini-infer's pools run with, and why (the CLI prints both)."""
    budget = cpu_budget()
    if _requested is None:
        return budget.threads, budget.reason
    used = min(_requested, budget.threads)
    capped = f", capped at the CPU budget ({budget.reason})" if used < _requested else \
        f"; CPU budget {budget.threads} ({budget.reason})"
    return used, f"asked {_requested}{capped}"


def reapply_num_threads() -> None:
    """Apply the count last given to :func:`set_num_threads` again, to every pool threadpoolctl
    knows now: a plugin whose pool registers after that call (the compiled kernels' does, when
    its library loads) gets the limit, and a later ``set_num_threads(None)`` restores it too."""
    if _requested is not None:
        set_num_threads(_requested)


def get_num_threads() -> int:
    info = blas_info()
    return max((int(i["num_threads"]) for i in info), default=cpu_budget().threads)


def blas_info() -> list[dict[str, Any]]:
    """Each native pool: library, internal API (openblas, mkl, ...), version, threads."""
    import numpy  # noqa: F401 - loads the BLAS so threadpoolctl can see it
    from threadpoolctl import threadpool_info

    return [{k: i.get(k) for k in ("user_api", "internal_api", "version", "num_threads",
                                   "prefix", "architecture")} for i in threadpool_info()]
