"""Plans: an engine made ready to run for one set of input shapes, kept while they recur.

A :class:`Plan` is a schedule (every shape concrete, memory planned) with its steps: each
node's plugin, the arrays it reads and writes (views of the context's arena), its workspace and
stream. :class:`PlanCache` keeps the plans of the last input signatures (least recently used
out first): a model with symbolic dimensions plans each new signature once, and a signature
that comes back costs what a static engine costs. Every plan of a context views the same arena
per device, sized for the largest of them (one plan runs at a time); when a new plan needs a
larger arena, the arena grows and the kept plans get views of the new one (their schedules
stay). Small engine inputs and outputs go through buffers of the plan (copied in and out,
:data:`STAGE_INPUT_BYTES`, :data:`STAGE_BYTES`), so that every step that reads or writes
them sees the same arrays on every run and keeps its bound call.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from .._record import field, record
from ..errors import ExecutionError
from ..plugin import Device, IPluginV2, Stream
from ..plugin import _adapter as adapter
from ..plugin._kinds import check_value
from .schedule import Schedule

if TYPE_CHECKING:
    from .engine import Engine

__all__ = ["Plan", "PlanCache", "Step", "values_at_the_end"]

#: what picks a plan: the input shapes (or, for a segment, the values of its symbols)
Signature = Hashable


@record(slots=True)
class Step:
    """One node of a plan, as ``execute`` runs it."""

    plugin: IPluginV2
    inputs: list[Any]
    outputs: list[Any]
    workspace: Any
    stream: Stream


@record
class Plan:
    schedule: Schedule
    #: every node's step, in order (profiles time them all)
    steps: list[Step]
    #: where the run's own arrays go: (tensor, the list that holds it, index in that list)
    patches: list[tuple[str, list[Any], int]] = field(default_factory=list)
    #: what a run calls, in order: (node index, its step's enqueue with the step's lists
    #: bound, which the patches update in place); steps with nothing to do are left out
    calls: list[tuple[int, Callable[[], None]]] = field(default_factory=list)
    #: the data-dependent steps' runs (their outputs copied into the plan's arrays; keyed
    #: plans, :mod:`.keyed`), by node index: what profiles and debug runs call for them
    into: dict[int, Callable[[], None]] = field(default_factory=dict)
    #: the engine outputs a run allocates: (name, its device's ``empty``, shape, dtype)
    fresh: list[tuple[str, Callable[..., Any], tuple[int, ...], Any]] = field(
        default_factory=list)
    #: small engine inputs and outputs in buffers of the plan's own (:data:`STAGE_BYTES`):
    #: a run copies those inputs in and those outputs out, so that the steps that read or
    #: write them keep their bound calls (name, buffer)
    staged_in: list[tuple[str, Any]] = field(default_factory=list)
    staged_out: list[tuple[str, Any]] = field(default_factory=list)
    #: what the steps of :func:`values_at_the_end` nodes returned in the last run (lists,
    #: dicts, None: engine outputs that are no tensors), by name
    values: dict[str, Any] = field(default_factory=dict)
    #: whether a bound call asked for NumPy's floating-point warnings off (``quiet_fp``):
    #: the run's steps then go inside one ``np.errstate``
    quiet: bool = False
    #: where each engine output of a run comes from when every input and tensor output
    #: is staged (name, the plan's buffer, or None: a value in ``values``); None: not so,
    #: or not worked out yet (``_running.PlannedRuns``)
    staged_results: list[tuple[str, Any]] | None = None
    staged_checked: bool = False
    #: the run as one generated function (:mod:`._direct`), made with ``staged_results``
    #: where the plan can run that way; None otherwise
    direct: Callable[[Mapping[str, Any]], list[Any] | None] | None = None
    #: the steps whose plugins were configured for this plan's shapes while it was made
    #: (bound calls are made after it): a context that uses the plan just made leaves them
    #: be, the others it configures then (``_running.PlannedRuns._use_plan``)
    configured: set[int] = field(default_factory=set)


def values_at_the_end(engine: Engine | Any, plugins: Sequence[IPluginV2]) -> bool:
    """Whether every data-dependent node of ``engine`` only turns tensors into values that
    no node reads (ZipMap's list of dicts: a classifier's last node). Such an engine's
    shapes follow from its input shapes: it is planned like a static one, those nodes run as
    steps of the plan (:func:`_run_values`), and its small steps keep their bound calls
    rather than running in segments around them."""
    tensors = engine.tensors
    if any(not tensors[n].is_tensor for n in engine.input_names):
        return False
    read = {n for node in engine.nodes for n in node.inputs if n}
    for node, plugin in zip(engine.nodes, plugins, strict=True):
        if not adapter.is_data_dependent(plugin):
            continue
        if any(tensors[o].is_tensor or o in read for o in node.outputs) or any(
                n and not tensors[n].is_tensor for n in node.inputs):
            return False
    return True


def _run_values(run: Callable[..., list[Any]], outputs: Sequence[tuple[str, Any]],
                ins: list[Any], workspace: Any, stream: Stream, values: dict[str, Any]) -> None:
    """A :func:`values_at_the_end` node's step: its outputs computed (``run``: the plugin's
    ``enqueue_dynamic``), checked against their declared kinds (``outputs``: name and
    spec of each) and kept in ``values`` (the plan's) for the run's results."""
    got = run(ins, workspace, stream)
    if len(got) < len(outputs):
        raise ExecutionError(f"it returned {len(got)} outputs, expected {len(outputs)}")
    for (o, spec), value in zip(outputs, got, strict=False):
        problem = check_value(value, spec.value_kind, spec.dtype, None)
        if problem:
            raise ExecutionError(f"output {o!r} is a {spec.type_string}: {problem}")
        values[o] = value


def _nothing_to_do(sched: Schedule, step: int, node: Any, plugin: IPluginV2) -> bool:
    """Whether the step is an ``in_place_only`` plugin whose every in-place input the
    schedule placed inside its output (so the output already holds the result)."""
    ability = adapter.in_place_of(plugin)
    if ability is None or not ability.in_place_only or sched.blocked(step):
        return False
    wanted = ability.in_place_inputs(sched.in_descs[step], sched.out_descs[step]) or {}
    if not wanted:
        return False
    for i, (o, elements) in wanted.items():
        name, out = node.inputs[i], node.outputs[o]
        itemsize = sched.out_descs[step][o][1].itemsize
        if not sched.placed_at(name, out, elements * itemsize):
            return False
    return True


#: the largest engine input or output (bytes) a plan copies through a buffer of its own
#: rather than handing the run's own array to the steps. Small models are mostly tiny
#: steps: silero-vad reads its 2 KB input and 1 KB state in a Pad and two Gathers and writes
#: its outputs in an Add and an Unsqueeze; with the caller's arrays patched in on each run
#: those steps could not be bound (IBoundRun) and went through ``enqueue`` (~4 us each on
#: this machine) against a ~1 us copy. Larger tensors keep the patches (no copy).
STAGE_BYTES = 16384
#: the same for engine inputs, which matter more: a kernel that keeps its compiled calls
#: while its arrays stay the same objects (Conv) made them again on every run whose input
#: was a new array, as a caller's usually is: ppocr_mobile_v2_cls's first Conv (input
#: 1x3x48x192, 110 KB) took 190-520 us a run with a new input against 90-150 us with the
#: same one (loaded 2-core machine), where the copy in costs ~10 us.
STAGE_INPUT_BYTES = 262144


def _capacity() -> int:
    try:
        return max(1, int(os.environ.get("MINI_INFER_PLAN_CACHE", "8")))
    except ValueError:
        return 8


class PlanCache:
    """The plans of one execution context, by input signature."""

    def __init__(self, engine: Engine | Any, plugins: Sequence[IPluginV2],
                 devices: Mapping[str, Device], streams: Mapping[str, Stream],
                 constants: Mapping[str, Mapping[str, Any]], capacity: int | None = None
                 ) -> None:
        self.engine, self.plugins = engine, plugins
        self.devices, self.streams, self.constants = devices, streams, constants
        self.capacity = capacity if capacity is not None else _capacity()
        self._plans: OrderedDict[Signature, Plan] = OrderedDict()
        #: whether small inputs and outputs go through buffers of the plans (not while the
        #: context replays device graphs: those have IO buffers of their own)
        self.stage_io = True
        self._arenas: dict[str, tuple[int, Any]] = {}  # device -> (bytes, buffer)

    def __len__(self) -> int:
        return len(self._plans)

    def get(self, signature: Signature, bindings: Mapping[str, int]) -> tuple[Plan, bool]:
        """The plan for ``signature``, and whether it was made now."""
        plan = self._plans.get(signature)
        if plan is not None:
            self._plans.move_to_end(signature)
            return plan, False
        sched = Schedule(self.engine, bindings, self.plugins)
        grown = False
        for dev, p in sched.plans.items():
            size = max(p.peak_bytes, 1)
            if dev not in self._arenas or self._arenas[dev][0] < size:
                self._arenas[dev] = (size, self.devices[dev].allocate(size))
                grown = True
        if grown:  # plans made earlier view the old arenas: the same schedules, new views
            for sig, old in self._plans.items():
                self._plans[sig] = self._make(old.schedule)
        plan = self._make(sched)
        self._plans[signature] = plan
        while len(self._plans) > self.capacity:
            self._plans.popitem(last=False)
        return plan, True

    def _make(self, sched: Schedule) -> Plan:
        engine, devices = self.engine, self.devices
        tensors = engine.tensors
        arenas = {d: buf for d, (_, buf) in self._arenas.items()}
        views: dict[str, dict[str, Any]] = {d: dict(c) for d, c in self.constants.items()}
        for name, off in sched.offsets.items():
            dev = sched.home[name]
            arr = devices[dev].view(arenas[dev], off, tensors[name].dtype.numpy,
                                    sched.shapes[name])
            for d in views:  # a tensor is read on its home device (copies make it so)
                views[d][name] = arr
        for name in sched.separate_tensors:
            arr = devices[sched.home[name]].empty(sched.shapes[name],
                                                  tensors[name].dtype.numpy)
            for d in views:
                views[d][name] = arr
        plan = Plan(sched, [])
        outputs = [n for n in engine.output_names
                   if tensors[n].kind == "output" and tensors[n].is_tensor]
        io = set(engine.input_names) | set(outputs)
        staged = self._staged(sched, io)
        for name, arr in staged.items():
            for d in views:
                views[d][name] = arr
            (plan.staged_in if name in engine.input_names else plan.staged_out).append(
                (name, arr))
        io -= set(staged)
        plan.fresh = [(n, devices[sched.home[n]].empty, sched.shapes[n],
                       tensors[n].dtype.numpy) for n in outputs
                      if n in sched.shapes and n not in staged]
        for step, (node, plugin) in enumerate(zip(engine.nodes, self.plugins, strict=True)):
            local = views[node.device]
            ins = [local.get(n) if n else None for n in node.inputs]
            outs = [local.get(o) for o in node.outputs]
            patched = False
            for lst, names in ((ins, node.inputs), (outs, node.outputs)):
                for k, n in enumerate(names):
                    if n in io:
                        plan.patches.append((n, lst, k))
                        patched = True
            ws = None
            if step in sched.workspace_offsets:
                ws = devices[node.device].view(
                    arenas[node.device], sched.workspace_offsets[step], np.dtype(np.uint8),
                    (sched.workspace[step],))
            plan.steps.append(Step(plugin, ins, outs, ws, self.streams[node.device]))
            if _nothing_to_do(sched, step, node, plugin):
                continue
            if adapter.is_data_dependent(plugin) and \
                    not any(tensors[o].is_tensor for o in node.outputs):
                dynamic = adapter.dynamic_of(plugin)
                assert dynamic is not None
                plan.into[step] = partial(_run_values, dynamic.enqueue_dynamic,
                                          [(o, tensors[o]) for o in node.outputs], ins, ws,
                                          self.streams[node.device], plan.values)
                plan.calls.append((step, plan.into[step]))
                continue
            if adapter.is_data_dependent(plugin) and node.op_type == "If" and \
                    not node.domain:  # the taken branch's plan run in place
                from .branch_step import BranchStep  # only where an engine has one
                plan.into[step] = BranchStep(plugin, devices[node.device], ins, outs, ws,
                                             self.streams[node.device])
                plan.calls.append((step, plan.into[step]))
                continue
            if adapter.is_data_dependent(plugin):
                from .keyed import run_into
                plan.into[step] = partial(run_into, plugin, devices[node.device], ins, outs,
                                          ws, self.streams[node.device])
                plan.calls.append((step, plan.into[step]))
                continue
            binder = adapter.bound_run_of(plugin)
            if binder is not None and not patched:  # configured first: a bound call may
                # depend on the formats and shapes the plugin is told (blocked kernels)
                adapter.configure_concrete(plugin, sched.in_descs[step], sched.out_descs[step],
                                           sched.in_formats[step], sched.out_formats[step])
                plan.configured.add(step)
            call = None if patched or binder is None else binder.bind_run(ins, outs, ws)
            plan.quiet |= bool(getattr(call, "quiet_fp", False))
            plan.calls.append((step, call or partial(plugin.enqueue, ins, outs, ws,
                                                     self.streams[node.device])))
        return plan

    def _staged(self, sched: Schedule, io: set[str]) -> dict[str, Any]:
        """Buffers for the engine's small tensor inputs and outputs (one device, no graphs),
        by name."""
        engine = self.engine
        if not self.stage_io or len(self.devices) != 1:
            return {}
        both = set(engine.input_names) & set(engine.output_names)
        out: dict[str, Any] = {}
        for name in sorted(io - both):
            spec, shape = engine.tensors[name], sched.shapes.get(name)
            if shape is None or not spec.is_tensor or name in engine.constants:
                continue
            dtype = spec.dtype.numpy
            limit = STAGE_INPUT_BYTES if name in engine.input_names else STAGE_BYTES
            if 0 < int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize <= limit:
                out[name] = self.devices[sched.home.get(name, next(iter(self.devices)))
                                         ].empty(shape, dtype)
        return out

    def clear(self) -> None:
        self._plans.clear()
        self._arenas.clear()
