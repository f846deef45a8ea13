"""An execution context's device graphs: a whole run captured once (CUDA graphs) and replayed
while the input shapes repeat, inputs and outputs going through buffers the context owns; a
capture that fails is followed by an eager run, after which the context stays eager and says
why (``graph_error``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._debug import lifecycle_logger
from ..plugin import _adapter as adapter
from ._running import PlannedRuns
from .schedule import Schedule

__all__ = ["GraphRuns"]

log = lifecycle_logger()  # imports logging only once something else has (issue 30)


class GraphRuns(PlannedRuns):
    """The part of :class:`~.context.ExecutionContext` that captures and replays graphs."""

    _use_graphs: bool
    #: whether data-dependent nodes at the end make values (lists, dicts) in the plan
    _planned_values: bool
    #: why graph capture failed and the context went back to eager runs (None: it did not)
    graph_error: str | None
    #: the buffers of the inputs and outputs of a captured run
    _io: dict[str, Any]

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
        if self._planned_values:
            return "it returns values (lists, dicts) that its nodes make in Python"
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
