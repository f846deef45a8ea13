"""An execution context's planned runs: the plan of the input shapes put to use (plugins
configured for its shapes, initialized once), its steps run in order (each through the call
bound for its arrays, or ``enqueue``), the outputs handed back as host arrays; the steps of
the last run listed and timed (per-layer profiles, the builder's tactic timing).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .._debug import lifecycle_logger
from ..errors import ExecutionError, MiniInferError, node_errors
from ..plugin import Device, IPluginV2, Stream
from ..plugin import _adapter as adapter
from ..plugin._kinds import map_tensors
from ._direct import direct_run, quiet_fp_state
from .plans import Plan, PlanCache, Step
from .schedule import Schedule

if TYPE_CHECKING:
    from .engine import Engine

__all__ = ["PlannedRuns"]

log = lifecycle_logger()  # imports logging only once something else has (issue 30)

quiet_on, quiet_off = quiet_fp_state()


class PlannedRuns:
    """The part of :class:`~.context.ExecutionContext` that runs plans (its state is set
    by the context's constructor)."""

    engine: Engine
    device: Device
    devices: dict[str, Device]
    stream: Stream
    plugins: list[IPluginV2]
    _stream_list: list[Stream]
    _lock: threading.Lock
    _plans: PlanCache
    #: the plan the last run used
    _plan: Plan | None
    _initialized: bool
    _debug: int
    _direct_runs: bool
    _dynamic: bool
    _values: set[str]
    _graph: Any

    def _initialize(self) -> None:
        """Every plugin's ``initialize``, once, before the context's first run."""
        if not self._initialized:
            for step, plugin in enumerate(self.plugins):
                plugin.initialize()
                log.debug("initialize %s", self.engine.nodes[step].describe())
            self._initialized = True

    def _use_plan(self, signature: tuple[tuple[int, ...], ...], bindings: dict[str, int]
                  ) -> Plan:
        """The plan for these input shapes (made now, or kept from an earlier run), with every
        plugin configured for its shapes when the plan changes."""
        plan, made = self._plans.get(signature, bindings)
        if plan is self._plan:
            return plan
        sched = plan.schedule
        done = plan.configured if made else ()  # configured for these shapes just now
        for step, plugin in enumerate(self.plugins):
            if step not in done:
                adapter.configure_concrete(plugin, sched.in_descs[step], sched.out_descs[step],
                                           sched.in_formats[step], sched.out_formats[step])
            if self._debug and made:
                log.debug("configure %s", self.engine.nodes[step].describe())
        self._initialize()
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

    def _staged_results(self, plan: Plan) -> list[tuple[str, Any]] | None:
        """``plan.staged_results``, worked out on the plan's first run."""
        if not plan.staged_checked:
            plan.staged_checked = True
            staged = dict(plan.staged_out)
            ok = not plan.fresh and not plan.patches and \
                len(plan.staged_in) == len(self.engine.input_names) and \
                all(n in staged or n in self._values for n in self.engine.output_names)
            plan.staged_results = [(n, staged.get(n)) for n in self.engine.output_names] \
                if ok else None
            if self._direct_runs and self._debug < 2:  # debug runs log every step
                nodes = self.engine.nodes
                plan.direct = direct_run(plan, self.engine, self.devices, self._stream_list,
                                         lambda step: nodes[step].describe())
        return plan.staged_results

    def _execute_plan(self, feeds: Mapping[str, Any], plan: Plan) -> dict[str, Any]:
        to_device = self.device.to_device
        fast = plan.staged_results if plan.staged_checked else self._staged_results(plan)
        if fast is not None:  # every input and output through the plan's buffers
            copy, stream = self.device.copy, self.stream
            for n, buf in plan.staged_in:
                copy(buf, to_device(np.asarray(feeds[n], order="C")), stream)
            self._enqueue_all()
            to_host = self.device.to_host
            out: dict[str, Any] = {}
            for n, buf in fast:
                if buf is None:  # a value (ZipMap's dicts)
                    out[n] = map_tensors(to_host, plan.values[n],
                                         self.engine.tensors[n].value_kind)
                    continue
                got = to_host(buf)  # the caller's own array, not the plan's buffer
                out[n] = np.array(got) if got is buf or np.may_share_memory(got, buf) else got
            return out
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
        if plan.values:
            bound.update(plan.values)
        if not plan.staged_out:
            return self._results(bound, plan.schedule.home)
        for n, buf in plan.staged_out:
            bound[n] = buf
        result = self._results(bound, plan.schedule.home)
        for n, buf in plan.staged_out:  # the caller's own array, not the plan's buffer
            got = result[n]
            if got is buf or np.may_share_memory(got, buf):
                result[n] = np.array(got)
        return result

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
            elif plan is not None and plan.quiet:  # steps bound without their errstate
                token = quiet_on()  # np.errstate(all="ignore"), made once
                try:
                    for step, call in plan.calls:  # noqa: B007 - names the failing node
                        call()
                finally:
                    quiet_off(token)
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
