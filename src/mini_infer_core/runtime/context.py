"""ExecutionContext: one engine's memory and plugin state for one thread at a time.

Each context clones the engine's plugins, so several contexts of one engine run concurrently
from different threads. A context keeps its schedule (shapes, arena, configured plugins) while
input shapes repeat and re-plans when they change. The per-run loop only binds inputs and
outputs and calls ``enqueue``.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..engine.schedule import Schedule
from ._dynamic import run_dynamic
from ..errors import ExecutionError, InputError, MiniInferError
from ..plugin import IPluginV2
from ..plugin import _adapter as adapter

if TYPE_CHECKING:
    from ..engine.engine import Engine

__all__ = ["ExecutionContext"]

log = logging.getLogger("mini_infer.lifecycle")


def _debug_level() -> int:
    try:
        return int(os.environ.get("MINI_INFER_DEBUG", "0"))
    except ValueError:
        return 0


def _fits(profile: Mapping[str, Any], feeds: Mapping[str, Any]) -> bool:
    for name, r in profile.items():
        shape = tuple(feeds[name].shape)
        if len(shape) != len(r["min"]) or any(
                not (lo <= x <= hi) for lo, x, hi in zip(r["min"], shape, r["max"], strict=True)):
            return False
    return True


class ExecutionContext:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.device = engine.device
        ok, reason = self.device.availability()
        if not ok:
            raise MiniInferError(
                f"engine {engine.name!r} was built for device {self.device.name!r}, which is "
                f"unavailable here: {reason}")
        self.stream = self.device.create_stream()
        self._lock = threading.Lock()
        self.plugins: list[IPluginV2] = []
        for node in engine.nodes:
            self.plugins.append(node.plugin.clone())
            log.debug("construct %s (clone for context)", node.describe())
        self._constants = {n: self.device.to_device(a) for n, a in engine.constants.items()}
        self._schedule: Schedule | None = None
        self._signature: tuple[tuple[int, ...], ...] | None = None
        self._initialized = False
        self._closed = False
        self._debug = _debug_level()
        self._dynamic = any(getattr(p, "data_dependent", False) for p in self.plugins)
        self._configured: dict[int, Any] = {}

    # -- inputs ---------------------------------------------------------------------------
    def _bind(self, feeds: Mapping[str, Any]) -> dict[str, int]:
        eng = self.engine
        missing = [n for n in eng.input_names if n not in feeds]
        unknown = [n for n in feeds if n not in eng.input_names]
        if missing or unknown:
            raise InputError(
                f"engine {eng.name!r} takes inputs {list(eng.input_names)}; "
                + (f"missing {missing}" if missing else "")
                + ("; " if missing and unknown else "")
                + (f"unknown {unknown}" if unknown else ""))
        bindings: dict[str, int] = {}
        for name in eng.input_names:
            spec, arr = eng.tensors[name], feeds[name]
            want = spec.dtype.numpy
            if getattr(arr, "dtype", None) != want:
                raise InputError(
                    f"input {name!r} has dtype {getattr(arr, 'dtype', type(arr).__name__)}, the "
                    f"engine expects {want} (convert with .astype(np.{want}))")
            shape = tuple(arr.shape)
            if len(shape) != len(spec.dims):
                raise InputError(f"input {name!r} has shape {shape}, the engine expects rank "
                                 f"{len(spec.dims)} {spec.shape}")
            for axis, (d, actual) in enumerate(zip(spec.dims, shape, strict=True)):
                if d.is_constant():
                    if d.get_constant_value() != actual:
                        raise InputError(
                            f"input {name!r} has shape {shape}, the engine expects "
                            f"{spec.shape} (axis {axis} is fixed at {d.get_constant_value()})")
                else:
                    sym = str(d)
                    if bindings.setdefault(sym, actual) != actual:
                        raise InputError(
                            f"input {name!r} axis {axis} is {actual}, but dimension {sym!r} "
                            f"is {bindings[sym]} in another input")
        profiles = eng.build_info.get("profiles") or []
        if profiles and not any(_fits(p, feeds) for p in profiles):
            ranges = "; ".join(", ".join(f"{n}: min {tuple(r['min'])} max {tuple(r['max'])}"
                                         for n, r in p.items()) for p in profiles)
            got = ", ".join(f"{n} {tuple(feeds[n].shape)}" for n in eng.input_names)
            raise InputError(f"input shapes ({got}) are outside every optimization profile of "
                             f"engine {eng.name!r} ({ranges}); rebuild with a profile that "
                             "covers them")
        return bindings

    # -- planning -------------------------------------------------------------------------
    def _prepare(self, bindings: dict[str, int]) -> None:
        sched = Schedule(self.engine, bindings, self.plugins)
        for step, plugin in enumerate(self.plugins):
            adapter.configure_concrete(plugin, sched.in_descs[step], sched.out_descs[step])
            if self._debug:
                log.debug("configure %s", self.engine.nodes[step].describe())
        if not self._initialized:
            for step, plugin in enumerate(self.plugins):
                plugin.initialize()
                log.debug("initialize %s", self.engine.nodes[step].describe())
            self._initialized = True
        arena = self.device.allocate(max(sched.plan.peak_bytes, 1))
        views: dict[str, Any] = dict(self._constants)
        tensors = self.engine.tensors
        for name, off in sched.offsets.items():
            views[name] = self.device.view(arena, off, tensors[name].dtype.numpy,
                                           sched.shapes[name])
        for name in sched.separate_tensors:
            views[name] = self.device.empty(sched.shapes[name], tensors[name].dtype.numpy)
        self._steps: list[tuple[IPluginV2, list[Any], list[Any], Any]] = []
        self._patches: list[tuple[str, list[Any], int]] = []
        io = set(self.engine.input_names) | {
            n for n in self.engine.output_names if tensors[n].kind == "output"}
        for step, (node, plugin) in enumerate(zip(self.engine.nodes, self.plugins, strict=True)):
            ins = [views.get(n) if n else None for n in node.inputs]
            outs = [views.get(o) for o in node.outputs]
            for lst, names in ((ins, node.inputs), (outs, node.outputs)):
                for k, n in enumerate(names):
                    if n in io:
                        self._patches.append((n, lst, k))
            ws = None
            if step in sched.workspace_offsets:
                ws = self.device.view(arena, sched.workspace_offsets[step], np.dtype(np.uint8),
                                      (sched.workspace[step],))
            self._steps.append((plugin, ins, outs, ws))
        self._arena = arena
        self._schedule = sched

    @property
    def schedule(self) -> Schedule | None:
        return self._schedule

    # -- running --------------------------------------------------------------------------
    def execute(self, feeds: Mapping[str, Any]) -> dict[str, np.ndarray[Any, Any]]:
        """Run once; returns every engine output as a host NumPy array."""
        if self._closed:
            raise MiniInferError("this execution context has been closed")
        with self._lock:
            bindings = self._bind(feeds)
            if self._dynamic:
                return self._execute_dynamic(feeds, bindings)
            signature = tuple(tuple(feeds[n].shape) for n in self.engine.input_names)
            if signature != self._signature:
                self._prepare(bindings)
                self._signature = signature
            sched = self._schedule
            assert sched is not None
            bound: dict[str, Any] = {n: self.device.to_device(np.asarray(feeds[n], order="C"))
                                     for n in self.engine.input_names}
            tensors = self.engine.tensors
            for n in self.engine.output_names:
                if tensors[n].kind == "output":
                    bound[n] = self.device.empty(sched.shapes[n], tensors[n].dtype.numpy)
            for name, lst, k in self._patches:
                lst[k] = bound[name]
            nodes = self.engine.nodes
            for step, (plugin, ins, outs, ws) in enumerate(self._steps):
                if self._debug >= 2:
                    log.debug("enqueue   %s in=%s", nodes[step].describe(),
                              [getattr(x, "shape", None) for x in ins])
                try:
                    plugin.enqueue(ins, outs, ws, self.stream)
                except MiniInferError:
                    raise
                except Exception as exc:
                    raise ExecutionError(
                        f"{nodes[step].describe()} failed: {type(exc).__name__}: {exc}"
                    ) from exc
            self.stream.synchronize()
            result: dict[str, np.ndarray[Any, Any]] = {}
            for n in self.engine.output_names:
                if n in bound:
                    result[n] = self.device.to_host(bound[n])
                else:  # an output that is a constant or a graph input
                    src = self._constants.get(n)
                    result[n] = np.array(self.device.to_host(src if src is not None
                                                             else bound[n]))
            return result

    def _execute_dynamic(self, feeds: Mapping[str, Any], bindings: dict[str, int]
                         ) -> dict[str, np.ndarray[Any, Any]]:
        if not self._initialized:
            for step, plugin in enumerate(self.plugins):
                plugin.initialize()
                log.debug("initialize %s", self.engine.nodes[step].describe())
            self._initialized = True
        inputs = {n: self.device.to_device(np.asarray(feeds[n], order="C"))
                  for n in self.engine.input_names}
        values = run_dynamic(self.engine, self.plugins, self.device, self.stream,
                             self._constants, inputs, bindings, self._configured, self._debug)
        return {n: np.array(self.device.to_host(values[n])) for n in self.engine.output_names}

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for node, plugin in zip(self.engine.nodes, self.plugins, strict=True):
            if self._initialized:
                plugin.terminate()
                log.debug("terminate %s", node.describe())
            plugin.destroy()
            log.debug("destroy   %s", node.describe())

    def __enter__(self) -> ExecutionContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
