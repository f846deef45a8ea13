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
import time
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..engine.schedule import Schedule
from ..errors import ExecutionError, InputError, MiniInferError, node_errors
from ..plugin import IPluginV2
from ..plugin import _adapter as adapter
from ..plugin._kinds import check_value, describe_value, map_tensors
from .keyed import KeyedPlans, PlanMismatch
from .plans import Plan, PlanCache, Step
from .segments import SegmentedRun

if TYPE_CHECKING:
    from ..engine.engine import Engine

__all__ = ["ExecutionContext", "Step"]

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
        self.devices = dict(engine.devices)
        for dev in self.devices.values():
            ok, reason = dev.availability()
            if not ok:
                raise MiniInferError(
                    f"engine {engine.name!r} runs nodes on device {dev.name!r}, which is "
                    f"unavailable here: {reason}. The engine can be inspected here; run it "
                    "on a machine with that device")
        self.streams = {name: dev.create_stream() for name, dev in self.devices.items()}
        self.stream = self.streams[self.device.name]
        self._stream_list = list(self.streams.values())
        self._lock = threading.Lock()
        self.plugins: list[IPluginV2] = []
        for node in engine.nodes:
            self.plugins.append(adapter.clone(node.plugin))
            log.debug("construct %s (clone for context)", node.describe())
        # constants live on every device that reads them
        self._constants: dict[str, dict[str, Any]] = {d: {} for d in self.devices}
        for node in engine.nodes:
            for n in node.inputs:
                if n in engine.constants and n not in self._constants[node.device]:
                    self._constants[node.device][n] = \
                        self.devices[node.device].to_device(engine.constants[n])
        self._plans = PlanCache(engine, self.plugins, self.devices, self.streams,
                                self._constants)
        #: the plan the last run used
        self._plan: Plan | None = None
        self._initialized = False
        self._closed = False
        self._debug = _debug_level()
        #: inputs and outputs that are sequences, optionals or maps (lists, None, dicts)
        self._values = {n for n in (*engine.input_names, *engine.output_names)
                        if not engine.tensors[n].is_tensor}
        self._dynamic = bool(self._values) or any(adapter.is_data_dependent(p)
                                                  for p in self.plugins)
        #: how an engine with data-dependent nodes runs: in planned segments around them
        self._segmented = SegmentedRun(engine, self.plugins, self.devices, self.streams,
                                       self._constants) if self._dynamic else None
        #: such an engine planned per input shapes and small inputs' values, where its
        #: data-dependent nodes are Ifs on those (None: it runs in segments)
        self._keyed = KeyedPlans.of(engine, self.plugins, self._plans.capacity) \
            if self._dynamic and not self._values else None
        self._use_graphs = False
        self._graph: Any = None
        #: why graph capture failed and the context went back to eager runs (None: it did not)
        self.graph_error: str | None = None
        self._io: dict[str, Any] = {}
        #: the (dtype, shape) of each input of the last run that passed the checks, and the
        #: dimension values it bound
        self._checked: tuple[tuple[Any, ...] | None, dict[str, int]] = (None, {})

    # -- graphs ---------------------------------------------------------------------------
    @property
    def graphs_possible(self) -> bool:
        """One device that can capture graphs, no data-dependent shapes, no plugin that
        allocates while it runs (``graphs_refused`` says which of these fails)."""
        return self.graphs_refused is None

    @property
    def graphs_refused(self) -> str | None:
        """Why this context cannot run as a device graph (None: it can)."""
        if len(self.devices) != 1:
            return f"the engine runs on several devices ({', '.join(sorted(self.devices))})"
        if self._dynamic:
            return "its shapes depend on data: it runs in segments around data-dependent nodes"
        if not self.device.supports_graphs():
            return f"device {self.device.name!r} cannot capture graphs"
        unsafe = [node.describe() for node, p in zip(self.engine.nodes, self.plugins,
                                                     strict=True)
                  if not adapter.graph_safe(p)]
        if unsafe:
            return f"{unsafe[0]} allocates while it runs (graph_safe is False)"
        return None

    def enable_graphs(self, enabled: bool = True) -> bool:
        """Capture the whole run as a device graph and replay it while input shapes repeat
        (CUDA graphs). Returns whether graphs are in use (False where the engine or device
        cannot). Inputs and outputs then go through buffers owned by the context. Where a
        capture fails (a plugin calls something a capture refuses) the run is done eagerly,
        with a RuntimeWarning, and the context stays eager; ``graph_error`` says why."""
        self._use_graphs = bool(enabled) and self.graphs_possible
        self._graph = None
        self.graph_error = None
        self._plan = None  # inputs and outputs move to buffers of the context's own
        self._plans.clear()
        self._plans.stage_io = not self._use_graphs
        return self._use_graphs

    # -- inputs ---------------------------------------------------------------------------
    def _bind(self, feeds: Mapping[str, Any]) -> dict[str, int]:
        """The inputs checked against the engine (names, dtypes, shapes, profiles); the
        values of the symbolic dimensions. Inputs of the dtypes and shapes of the last
        checked run pass without the checks again (they depend on nothing else)."""
        eng = self.engine
        key: tuple[Any, ...] | None = None
        if not self._values and len(feeds) == len(eng.input_names):
            try:
                key = tuple((feeds[n].dtype, feeds[n].shape) for n in eng.input_names)
            except (KeyError, AttributeError):
                key = None
            if key is not None and key == self._checked[0]:
                return dict(self._checked[1])
        bindings = self._check(feeds)
        if key is not None:
            self._checked = (key, dict(bindings))
        return bindings

    def _check(self, feeds: Mapping[str, Any]) -> dict[str, int]:
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
            if not spec.is_tensor:
                dims = [d.get_constant_value() if d.is_constant() else None for d in spec.dims]
                problem = check_value(arr, spec.value_kind, spec.dtype, dims)
                if problem:
                    raise InputError(f"input {name!r} is a {spec.type_string}: {problem}")
                continue
            want = spec.dtype.numpy
            if not hasattr(arr, "shape") or not hasattr(arr, "dtype"):
                raise InputError(f"input {name!r} is a {spec.type_string} of shape "
                                 f"{spec.shape}: pass an array (got {describe_value(arr)})")
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
    def _use_plan(self, signature: tuple[tuple[int, ...], ...], bindings: dict[str, int]
                  ) -> Plan:
        """The plan for these input shapes (made now, or kept from an earlier run), with every
        plugin configured for its shapes when the plan changes."""
        plan, made = self._plans.get(signature, bindings)
        if plan is self._plan:
            return plan
        sched = plan.schedule
        for step, plugin in enumerate(self.plugins):
            adapter.configure_concrete(plugin, sched.in_descs[step], sched.out_descs[step])
            if self._debug and made:
                log.debug("configure %s", self.engine.nodes[step].describe())
        if not self._initialized:
            for step, plugin in enumerate(self.plugins):
                plugin.initialize()
                log.debug("initialize %s", self.engine.nodes[step].describe())
            self._initialized = True
        self._plan = plan
        self._graph = None
        return plan

    @property
    def plans_cached(self) -> int:
        """How many input signatures this context keeps a plan for (``MINI_INFER_PLAN_CACHE``
        bounds it, 8 by default)."""
        return len(self._plans)

    @property
    def steps(self) -> list[Step]:
        """Per node of the last prepared shapes, as ``execute`` runs them; empty before the
        first run and for engines with data-dependent nodes that run in segments (those
        planned per key, :mod:`.keyed`, have steps)."""
        return self._plan.steps if self._plan is not None else []

    @property
    def steps_left_out(self) -> list[int]:
        """The nodes (indices) whose steps the runs of the last prepared shapes leave out:
        plugins with nothing to do once their input is planned inside their output
        (``in_place_only``: an Identity, a Reshape). ``time_steps`` still times them."""
        if self._plan is None:
            return []
        run = {step for step, _ in self._plan.calls}
        return [k for k in range(len(self._plan.steps)) if k not in run]

    def time_steps(self) -> list[float]:
        """Every step of the last prepared shapes once more, in order, each followed by a
        synchronize of its stream; the seconds each took (per-layer profiles and the builder's
        tactic timing). Call after ``execute``, so that every tensor holds values."""
        if not self.steps:
            raise MiniInferError(
                f"engine {self.engine.name!r} has no prepared steps to time: "
                + ("its shapes depend on data: it runs in segments around its data-dependent "
                   "nodes" if self._dynamic
                   else "call execute() once first"))
        took = []
        step = 0
        assert self._plan is not None
        into = self._plan.into
        with self._lock, node_errors(lambda: self.engine.nodes[step].describe(),
                                     ExecutionError, "the plugin failed while running"):
            for step, s in enumerate(self.steps):  # noqa: B007 - names the failing node
                start = time.perf_counter()
                if step in into:
                    into[step]()
                else:
                    s.plugin.enqueue(s.inputs, s.outputs, s.workspace, s.stream)
                s.stream.synchronize()
                took.append(time.perf_counter() - start)
        return took

    @property
    def schedule(self) -> Schedule | None:
        return self._plan.schedule if self._plan is not None else None

    # -- running --------------------------------------------------------------------------
    def execute(self, feeds: Mapping[str, Any]) -> dict[str, Any]:
        """Run once; returns every engine output as a host NumPy array (a sequence as a list
        of them, an optional as None or its value, a map as a dict)."""
        if self._closed:
            raise MiniInferError("this execution context has been closed")
        with self._lock:
            bindings = self._bind(feeds)
            if self._dynamic:
                if self._keyed is not None:
                    result = self._execute_keyed(feeds, bindings)
                    if result is not None:
                        return result
                return self._execute_dynamic(feeds, bindings)
            signature = tuple(tuple(feeds[n].shape) for n in self.engine.input_names)
            plan = self._use_plan(signature, bindings)
            if self._use_graphs:
                return self._execute_graph(feeds, plan.schedule)
            return self._execute_plan(feeds, plan)

    def _execute_keyed(self, feeds: Mapping[str, Any], bindings: dict[str, int]
                       ) -> dict[str, Any] | None:
        """A run of the keyed plan of these inputs (:mod:`.keyed`); None where it goes in
        segments instead. A new key is first run in segments, to learn its shapes."""
        keyed = self._keyed
        assert keyed is not None
        key = keyed.key(feeds)
        if key is None:
            return None
        full = keyed.bindings(key)
        if full is None:  # a new key: a run in segments binds every dimension, then the plan
            full = dict(bindings)
            self._execute_dynamic(feeds, full)
            keyed.learn(key, full)
        plan = self._use_plan(key, full)
        try:
            return self._execute_plan(feeds, plan)
        except PlanMismatch as exc:  # shapes that no key decides: segments from now on
            log.debug("keyed plans given up for engine %r: %s", self.engine.name, exc)
            self._keyed = None
            self._plan = None
            self._plans.clear()
            return None

    def _execute_plan(self, feeds: Mapping[str, Any], plan: Plan) -> dict[str, Any]:
        to_device = self.device.to_device
        bound: dict[str, Any] = {n: to_device(np.asarray(feeds[n], order="C"))
                                 for n in self.engine.input_names}
        copy = self.device.copy
        for n, buf in plan.staged_in:
            copy(buf, bound[n], self.stream)
        for n, empty, shape, dtype in plan.fresh:
            bound[n] = empty(shape, dtype)
        for name, lst, k in plan.patches:
            lst[k] = bound[name]
        self._enqueue_all()
        if not plan.staged_out:
            return self._results(bound, plan.schedule.home)
        for n, buf in plan.staged_out:
            bound[n] = buf
        result = self._results(bound, plan.schedule.home)
        for n, buf in plan.staged_out:  # the caller's own array, not the plan's buffer
            if np.may_share_memory(result[n], buf):
                result[n] = np.array(result[n])
        return result

    def _execute_graph(self, feeds: Mapping[str, Any], sched: Schedule
                       ) -> dict[str, np.ndarray[Any, Any]]:
        tensors = self.engine.tensors
        if self._graph is None:  # new shapes: fixed IO buffers, then capture
            self._io = {n: self.device.empty(sched.shapes[n], tensors[n].dtype.numpy)
                        for n in (*self.engine.input_names, *self.engine.output_names)
                        if n in self.engine.input_names or tensors[n].kind == "output"}
            assert self._plan is not None
            for name, lst, k in self._plan.patches:
                lst[k] = self._io[name]
        for n in self.engine.input_names:
            self.device.copy(self._io[n], self.device.to_device(np.asarray(feeds[n], order="C")),
                             self.stream)
        if self._graph is None:
            try:
                self._graph = self.device.capture_graph(self._enqueue_all_async, self.stream)
            except Exception as exc:  # noqa: BLE001 - an eager run below says if it was real
                return self._graphs_failed(exc, sched)
            log.debug("captured a graph of %d steps", len(self.steps))
        self.device.launch_graph(self._graph, self.stream)
        self.stream.synchronize()
        return self._results(self._io, sched.home)

    def _graphs_failed(self, exc: Exception, sched: Schedule) -> dict[str, np.ndarray[Any, Any]]:
        """A capture failed: run eagerly (an error there is the run's own and propagates);
        if that works, the context stays eager and says why (``graph_error``, a warning)."""
        self._enqueue_all()
        self._use_graphs = False
        self.graph_error = f"{type(exc).__name__}: {exc}"
        warnings.warn(f"mini-infer: CUDA-graph capture failed, this context runs eagerly "
                      f"from now on ({self.graph_error})", RuntimeWarning, stacklevel=3)
        return self._results(self._io, sched.home)

    def _enqueue_all_async(self) -> None:
        self._enqueue_all(sync=False)

    def _enqueue_all(self, sync: bool = True) -> None:
        nodes = self.engine.nodes
        step = 0
        plan = self._plan
        try:
            if self._debug >= 2 and plan is not None:  # every step, each logged
                into = plan.into
                for step, s in enumerate(plan.steps):
                    log.debug("enqueue   %s in=%s", nodes[step].describe(),
                              [getattr(x, "shape", None) for x in s.inputs])
                    if step in into:
                        into[step]()
                    else:
                        s.plugin.enqueue(s.inputs, s.outputs, s.workspace, s.stream)
            elif plan is not None:
                for step, call in plan.calls:  # noqa: B007 - names the failing node
                    call()
        except Exception:  # named after its node (the context manager costs every run)
            with node_errors(nodes[step].describe(), ExecutionError,
                             "the plugin failed while running"):
                raise
        if sync:
            for stream in self._stream_list:
                stream.synchronize()

    def _results(self, values: Mapping[str, Any], home: Mapping[str, str]
                 ) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for n in self.engine.output_names:
            if n in self._values:
                host = self.devices[home.get(n, self.device.name)].to_host
                result[n] = map_tensors(host, values[n], self.engine.tensors[n].value_kind)
            elif n in self.engine.constants:
                result[n] = np.array(self.engine.constants[n])
            elif n in self.engine.input_names:
                result[n] = np.array(self.device.to_host(values[n]))
            else:
                result[n] = self.devices[home.get(n, self.device.name)].to_host(values[n])
        return result

    def _execute_dynamic(self, feeds: Mapping[str, Any], bindings: dict[str, int]
                         ) -> dict[str, Any]:
        if not self._initialized:
            for step, plugin in enumerate(self.plugins):
                plugin.initialize()
                log.debug("initialize %s", self.engine.nodes[step].describe())
            self._initialized = True
        tensors, dev = self.engine.tensors, self.device
        inputs = {n: map_tensors(lambda a: dev.to_device(np.asarray(a, order="C")), feeds[n],
                                 tensors[n].value_kind)
                  for n in self.engine.input_names}
        assert self._segmented is not None
        if self._plan is not None:  # a keyed plan configured the plugins for its shapes
            self._plan = None
            for seg in self._segmented.segments:
                seg.current = None
        values, home = self._segmented.run(inputs, bindings, self._debug)
        return self._results(values, home)

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
