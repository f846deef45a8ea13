"""ExecutionContext: one engine's memory and plugin state for one thread at a time.

Each context clones the engine's plugins, so several contexts of one engine run concurrently
from different threads. A context keeps its schedule (shapes, arena, configured plugins) while
input shapes repeat and re-plans when they change. The per-run loop only binds inputs and
outputs and calls ``enqueue``.

Its jobs, a module each: checking the inputs (``_inputs.py``), running the plan of their
shapes and timing its steps (``_running.py``, plans in ``plans.py``), device graphs
(``_graphs.py``); here, what each run goes through -- a plan, a plan per key (``keyed.py``) or
segments around data-dependent nodes (``segments.py``) -- and the plugins' lifecycle.
Those modules, and the device graphs', are imported only by an engine or a call that needs
them: a static engine's start does without them (issue 30).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .._debug import lifecycle_logger
from ..errors import MiniInferError
from ..plugin import _adapter as adapter
from ..plugin._kinds import map_tensors
from ._inputs import InputCheck
from ._running import PlannedRuns
from .plans import Plan, PlanCache, Step, values_at_the_end

if TYPE_CHECKING:
    from .engine import Engine
    from .keyed import KeyedPlans
    from .segments import SegmentedRun

__all__ = ["ExecutionContext", "Step"]

log = lifecycle_logger()  # imports logging only once something else has (issue 30)


def _debug_level() -> int:
    try:
        return int(os.environ.get("MINI_INFER_DEBUG", "0"))
    except ValueError:
        return 0


class ExecutionContext(PlannedRuns):
    """Runs one engine (``Engine.create_execution_context()``): ``execute(feeds)`` returns
    every output; ``enable_graphs()`` replays runs as device graphs (``graphs_refused`` says
    why not, ``graph_error`` why a capture failed); ``steps``, ``steps_left_out``,
    ``time_steps()``, ``schedule`` and ``plans_cached`` describe the last prepared shapes;
    ``close()`` (or ``with``) ends the plugins' lifecycle."""

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
        self.plugins = [adapter.clone(node.plugin) for node in engine.nodes]
        if log.debugging():
            for node in engine.nodes:
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
        self._plan = None
        self._initialized = False
        self._closed = False
        self._debug = _debug_level()
        #: whether plans may run as one generated function (``engine/_direct.py``);
        #: ``MINI_INFER_DIRECT_RUN=0`` turns it off (benchmarks/overhead.py compares both)
        self._direct_runs = os.environ.get("MINI_INFER_DIRECT_RUN", "1") != "0"
        #: inputs and outputs that are sequences, optionals or maps (lists, None, dicts)
        self._values: set[str] = {n for n in (*engine.input_names, *engine.output_names)
                        if not engine.tensors[n].is_tensor}
        self._dynamic = bool(self._values) or any(adapter.is_data_dependent(p)
                                                  for p in self.plugins)
        #: such an engine whose data-dependent nodes only make the values it returns
        #: (ZipMap's dicts): planned like a static one, those nodes steps of its plans
        self._planned_values = self._dynamic and values_at_the_end(engine, self.plugins)
        if self._planned_values:
            self._dynamic = False
        #: how an engine with data-dependent nodes runs: in planned segments around them
        self._segmented: SegmentedRun | None = None
        #: such an engine planned per input shapes and small inputs' values, where its
        #: data-dependent nodes are Ifs on those (None: it runs in segments)
        self._keyed: KeyedPlans | None = None
        if self._dynamic:
            from .keyed import KeyedPlans
            from .segments import SegmentedRun
            self._segmented = SegmentedRun(engine, self.plugins, self.devices, self.streams,
                                           self._constants)
            if not self._values:
                self._keyed = KeyedPlans.of(engine, self.plugins, self._plans.capacity)
        self._use_graphs = False
        self._graph = None
        #: why graph capture failed and the context went back to eager runs (None: it did not)
        self.graph_error: str | None = None
        #: the buffers of the inputs and outputs of a captured run
        self._io: dict[str, Any] = {}
        #: the plan of the last run of a static engine: a run of the same input dtypes
        #: and shapes goes straight to it (no checks, no plan look-up)
        self._repeat: Plan | None = None
        self._inputs = InputCheck(engine, {n for n in self._values if n in engine.input_names})

    def execute(self, feeds: Mapping[str, Any]) -> dict[str, Any]:
        """Run once; returns every engine output as a host NumPy array (a sequence as a list
        of them, an optional as None or its value, a map as a dict)."""
        if self._closed:
            raise MiniInferError("this execution context has been closed")
        with self._lock:
            repeat = self._repeat
            if repeat is not None and repeat.direct is not None and repeat is self._plan \
                    and self._keyed is None and not self._use_graphs:
                out = repeat.direct(feeds)  # None: not the last run's names, dtypes, shapes
                if out is not None:
                    return dict(zip(self.engine.output_names, out, strict=True))
            if repeat is not None and repeat is self._plan and not self._use_graphs and \
                    self._inputs.same_as_last(feeds):  # the last run's shapes: its plan
                keyed = self._keyed
                if keyed is None:
                    return self._execute_plan(feeds, repeat)
                if keyed.same_key(feeds):  # and the last run's key (a keyed plan)
                    from .keyed import run_keyed
                    result = run_keyed(self, feeds, repeat)
                    if result is not None:
                        return result
            bindings = self._inputs.bind(feeds)
            if self._dynamic:
                if self._keyed is not None:
                    from .keyed import execute_keyed
                    result = execute_keyed(self, feeds, bindings)
                    if result is not None:
                        return result
                return self._execute_dynamic(feeds, bindings)
            signature = tuple(tuple(feeds[n].shape) for n in self.engine.input_names)
            plan = self._use_plan(signature, bindings)
            self._repeat = plan
            if self._use_graphs:
                from ._graphs import execute_graph
                return execute_graph(self, feeds, plan.schedule)
            return self._execute_plan(feeds, plan)

    def run_direct(self, feeds: Mapping[str, Any]) -> list[Any] | None:
        """The outputs in engine order where ``feeds`` have the names, dtypes and shapes of
        the last run and its plan runs as one generated function (:mod:`._direct`, small
        models on the CPU); None, having run nothing, otherwise (``execute`` then)."""
        if self._closed:
            return None
        with self._lock:
            repeat = self._repeat
            if repeat is None or repeat.direct is None or repeat is not self._plan or \
                    self._keyed is not None or self._use_graphs:
                return None
            return repeat.direct(feeds)

    def _execute_dynamic(self, feeds: Mapping[str, Any], bindings: dict[str, int]
                         ) -> dict[str, Any]:
        self._initialize()
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

    @property
    def graphs_possible(self) -> bool:
        """One device that can capture graphs, no data-dependent shapes, no plugin that
        allocates while it runs (``graphs_refused`` says which of these fails)."""
        return self.graphs_refused is None

    @property
    def graphs_refused(self) -> str | None:
        """Why this context cannot run as a device graph (None: it can)."""
        from ._graphs import refused
        return refused(self)

    def enable_graphs(self, enabled: bool = True) -> bool:
        """Capture the whole run as a device graph and replay it while input shapes repeat
        (CUDA graphs; :mod:`._graphs`). Returns whether graphs are in use (False where the
        engine or device cannot). Inputs and outputs then go through buffers owned by the
        context. Where a capture fails (a plugin calls something a capture refuses) the run
        is done eagerly, with a RuntimeWarning, and the context stays eager; ``graph_error``
        says why."""
        from ._graphs import enable
        return enable(self, enabled)

    def time_nodes(self, feeds: Mapping[str, Any]) -> list[float]:
        """One run of ``feeds`` with every node timed on its own (each followed by a
        synchronize of its stream): the seconds each node took, in engine order. An engine
        with data-dependent nodes is timed as it runs, in segments; any other runs once and
        then has its prepared steps timed (:meth:`time_steps`)."""
        if not self._dynamic:
            self.execute(feeds)
            return self.time_steps()
        assert self._segmented is not None
        self._segmented.timings = [0.0] * len(self.engine.nodes)
        try:
            self.execute(feeds)
            return list(self._segmented.timings)
        finally:
            self._segmented.timings = None

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
