"""Engines with data-dependent nodes (NonZero, Unique, NonMaxSuppression, If, Loop...) run
in segments: the nodes between two data-dependent ones are planned like a static engine.

A data-dependent node's output shapes are known only once it has run; everything after it
may depend on them. So the engine is cut around each such node: a data-dependent node runs
on its own (it returns its outputs, whose shapes bind its fresh symbols), and each run of
other nodes is a *segment*, planned as an engine of its own -- its inputs the tensors made
before it, its outputs those read after it -- once per set of the symbol values its shapes
depend on (:class:`~.plans.PlanCache`: arena, concrete shapes, the kernels' call lists kept
while those values recur). Only a segment's outputs are allocated on every run; its small
inputs and outputs are copied through buffers of its plan (as an engine's own are,
``plans.STAGE_BYTES``), so that the steps reading or writing them keep their bound calls.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._debug import lifecycle_logger
from .._record import record
from ..errors import ExecutionError, node_errors
from ..plugin import Device, IPluginV2, Stream
from ..plugin import _adapter as adapter
from ..plugin._kinds import check_value
from .engine import EngineNode, TensorSpec
from .plans import Plan, PlanCache

if TYPE_CHECKING:
    from .engine import Engine

__all__ = ["SegmentedRun"]

log = lifecycle_logger()  # imports logging only once something else has (issue 30)


@record
class _SubEngine:
    """A run of nodes seen as an engine (what Schedule and PlanCache read of one)."""

    name: str
    device: Device
    devices: Mapping[str, Device]
    tensors: Mapping[str, TensorSpec]
    constants: Mapping[str, Any]
    nodes: tuple[EngineNode, ...]
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]


@record
class _Segment:
    steps: list[int]
    engine: _SubEngine
    cache: PlanCache
    #: the symbols its shapes depend on: their values pick its plan
    symbols: tuple[str, ...]
    current: Plan | None = None


class SegmentedRun:
    """How an execution context runs an engine with data-dependent nodes."""

    def __init__(self, engine: Engine, plugins: Sequence[IPluginV2],
                 devices: Mapping[str, Device], streams: Mapping[str, Stream],
                 constants: Mapping[str, Mapping[str, Any]]) -> None:
        self.engine, self.plugins = engine, plugins
        self.devices, self.streams, self.constants = devices, streams, constants
        #: seconds per step (engine order) added by each run while a list is set here: each
        #: step then runs on its own and waits for its stream (ExecutionContext.time_nodes)
        self.timings: list[float] | None = None
        #: a segment, or the step of a data-dependent node
        self.parts: list[_Segment | int] = []
        run: list[int] = []
        for step, plugin in enumerate(plugins):
            if adapter.is_data_dependent(plugin):
                if run:
                    self.parts.append(self._segment(run))
                    run = []
                self.parts.append(step)
            else:
                run.append(step)
        if run:
            self.parts.append(self._segment(run))

    @property
    def segments(self) -> list[_Segment]:
        return [p for p in self.parts if isinstance(p, _Segment)]

    def _segment(self, steps: list[int]) -> _Segment:
        engine = self.engine
        nodes = [engine.nodes[s] for s in steps]
        made = {o for nd in nodes for o in nd.outputs}
        read = [x for nd in nodes for x in nd.inputs if x]
        later = {x for nd in engine.nodes[steps[-1] + 1:] for x in nd.inputs if x}
        later |= set(engine.output_names)
        inputs = tuple(dict.fromkeys(x for x in read if x not in made
                                     and x not in engine.constants))
        outputs = tuple(o for nd in nodes for o in nd.outputs if o in later)
        tensors: dict[str, TensorSpec] = {}
        for name in (*read, *made):
            spec = engine.tensors[name]
            kind = "input" if name in inputs else "output" if name in outputs else spec.kind
            tensors[name] = TensorSpec(name, spec.dtype, spec.dims, kind, spec.value_kind,
                                       spec.format)
        sub = _SubEngine(engine.name, engine.device, engine.devices, tensors,
                         {n: engine.constants[n] for n in read if n in engine.constants},
                         tuple(nodes), inputs, outputs)
        symbols = tuple(sorted({s for spec in tensors.values() if spec.kind != "constant"
                                for d in spec.dims for s in d.symbols}))
        cache = PlanCache(sub, [self.plugins[s] for s in steps], self.devices, self.streams,
                          self.constants)
        # small inputs and outputs through buffers of the plan (copied in and out), as an
        # engine's own are: the steps that read or write them keep their bound calls
        cache.stage_io = True
        return _Segment(steps, sub, cache, symbols)

    def run(self, inputs: Mapping[str, Any], bindings: dict[str, int], debug: int
            ) -> tuple[dict[str, Any], dict[str, str]]:
        values: dict[str, Any] = dict(inputs)
        home = {n: self.engine.device.name for n in inputs}
        for part in self.parts:
            if isinstance(part, _Segment):
                self._run_segment(part, values, home, bindings, debug)
            else:
                self._run_dynamic(part, values, home, bindings, debug)
        for stream in self.streams.values():
            stream.synchronize()
        return values, home

    def _run_segment(self, seg: _Segment, values: dict[str, Any], home: dict[str, str],
                     bindings: dict[str, int], debug: int) -> None:
        try:
            key = tuple(bindings[s] for s in seg.symbols)
        except KeyError as exc:
            raise ExecutionError(f"{seg.engine.nodes[0].describe()}: its shape depends on "
                                 f"{exc} which is not known yet") from exc
        plan, _ = seg.cache.get(key, bindings)
        sched = plan.schedule
        if plan is not seg.current:
            for k, step in enumerate(seg.steps):
                adapter.configure_concrete(self.plugins[step], sched.in_descs[k],
                                           sched.out_descs[k], sched.in_formats[k],
                                           sched.out_formats[k])
            seg.current = plan
        bound = {n: values[n] for n in seg.engine.input_names}
        tensors = seg.engine.tensors
        for n, buf in plan.staged_in:
            src = bound[n]
            if tuple(src.shape) != tuple(buf.shape):
                raise ExecutionError(f"{seg.engine.nodes[0].describe()}: input {n!r} has shape "
                                     f"{tuple(src.shape)}, its plan {tuple(buf.shape)}")
            dev = self.engine.device  # staged only where the engine has one device
            dev.copy(buf, src, self.streams[dev.name])
        staged = dict(plan.staged_out)
        for n in seg.engine.output_names:
            if n not in staged:
                bound[n] = self.devices[sched.home[n]].empty(sched.shapes[n],
                                                              tensors[n].dtype.numpy)
        for name, lst, k in plan.patches:
            lst[k] = bound[name]
        nodes = seg.engine.nodes
        i = 0
        try:
            if debug >= 2 or self.timings is not None:  # every step, logged or timed
                for i, s in enumerate(plan.steps):
                    if debug >= 2:
                        log.debug("enqueue   %s in=%s", nodes[i].describe(),
                                  [getattr(x, "shape", None) for x in s.inputs])
                    start = time.perf_counter()
                    s.plugin.enqueue(s.inputs, s.outputs, s.workspace, s.stream)
                    if self.timings is not None:
                        s.stream.synchronize()
                        self.timings[seg.steps[i]] += time.perf_counter() - start
            else:
                for i, call in plan.calls:  # noqa: B007 - names the failing node
                    call()
        except Exception:  # named after its node (the context manager costs every run)
            with node_errors(nodes[i].describe(), ExecutionError,
                             "the plugin failed while running"):
                raise
        for n in seg.engine.output_names:
            buf = staged.get(n)
            if buf is not None:  # the run's own array, not the plan's buffer
                dev = self.engine.device
                bound[n] = dev.empty(buf.shape, buf.dtype)
                dev.copy(bound[n], buf, self.streams[dev.name])
            values[n] = bound[n]
            home[n] = sched.home[n]

    def _run_dynamic(self, step: int, values: dict[str, Any], home: dict[str, str],
                     bindings: dict[str, int], debug: int) -> None:
        node, plugin = self.engine.nodes[step], self.plugins[step]
        local = self.constants[node.device]
        ins = [(local[n] if n in local else values[n]) if n else None for n in node.inputs]
        if debug >= 2:
            log.debug("enqueue   %s in=%s", node.describe(),
                      [getattr(x, "shape", None) for x in ins])
        try:
            dynamic = adapter.dynamic_of(plugin)
            assert dynamic is not None
            timings = self.timings  # None on ordinary runs: no clock read on the hot path
            start = time.perf_counter() if timings is not None else 0.0
            outs = dynamic.enqueue_dynamic(ins, None, self.streams[node.device])
            if timings is not None:
                self.streams[node.device].synchronize()
                timings[step] += time.perf_counter() - start
            if len(outs) < len(node.outputs):
                raise ExecutionError(f"it returned {len(outs)} outputs, expected "
                                     f"{len(node.outputs)}")
            tensors = self.engine.tensors
            for o, arr in zip(node.outputs, outs, strict=False):
                spec = tensors[o]
                if not spec.is_tensor:  # a list, None or dict: checked, never planned
                    problem = check_value(arr, spec.value_kind, spec.dtype, None)
                    if problem:
                        raise ExecutionError(f"output {o!r} is a {spec.type_string}: {problem}")
                    continue
                _bind(spec.dims, tuple(arr.shape), bindings)
                if arr.dtype != tensors[o].dtype.numpy:
                    raise ExecutionError(f"it returned {arr.dtype} for output {o!r}, "
                                         f"declared {tensors[o].dtype.numpy}")
        except Exception:  # named after its node (the context manager costs every run)
            with node_errors(node.describe, ExecutionError, "the plugin failed while running"):
                raise
        for o, arr in zip(node.outputs, outs, strict=False):
            values[o] = arr
            home[o] = node.device


def _bind(dims: Any, shape: tuple[int, ...], bindings: dict[str, int]) -> None:
    if len(dims) != len(shape):
        raise ExecutionError(f"an output has rank {len(shape)}, declared {len(dims)}")
    for d, actual in zip(dims, shape, strict=True):
        if d.is_constant():
            if d.get_constant_value() != actual:
                raise ExecutionError(f"an output has shape {shape}, declared "
                                     f"{dims.display()}")
        elif len(d.symbols) == 1 and str(d) in d.symbols:
            bindings[str(d)] = actual

