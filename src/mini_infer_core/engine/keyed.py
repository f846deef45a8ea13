"""Planned runs of engines whose data-dependent nodes are Ifs on small inputs' values.

An If's output shapes are those of the branch it takes, and a branch body without
data-dependent nodes of its own gives shapes that follow from its inputs' shapes. When each
If's condition is computed (through nodes that are not data-dependent) from the engine's
input shapes and the values of small inputs -- a sample rate, a flag, a mode -- the input
shapes and those values decide every shape of the run. Such an engine (silero-vad: ``If``
on ``sr == 16000``) is planned like a static one, once per *key* (the input shapes and the
small inputs' bytes): a new key is first run in segments (:mod:`.segments`), which binds
the Ifs' output dimensions, and then by the plan made from them; the plan's If steps run
their branch (itself a planned engine) and copy the result into the arena -- after their
first run, the branch's plan directly (:mod:`.branch_step`). A run with the last run's
shapes and key goes straight to its plan (:meth:`KeyedPlans.same_key`).

A branch whose output shapes still change for one key (a data-dependent node inside it)
stops the keyed plans for the context: :class:`PlanMismatch` from the step, and the runs go
in segments from then on.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._debug import lifecycle_logger
from ..errors import ExecutionError
from ..plugin import Device, IPluginV2, Stream
from ..plugin import _adapter as adapter

if TYPE_CHECKING:
    from .context import ExecutionContext
    from .engine import Engine
    from .plans import Plan

__all__ = ["KeyedPlans", "PlanMismatch", "execute_keyed", "run_into", "run_keyed"]

log = lifecycle_logger()  # imports logging only once something else has (issue 30)

#: the most elements the inputs of a key may have together (larger: the run goes in segments)
KEY_ELEMENTS = 64
#: operators whose output depends on their input's shape, not its values
_SHAPE_ONLY = frozenset({"Shape", "Size"})
#: data-dependent operators whose output shapes follow from their inputs' shapes and the
#: value of their first input (the condition)
_KEYABLE = frozenset({"If"})


class PlanMismatch(ExecutionError):
    """A data-dependent step of a keyed plan gave another shape than the plan's."""


def run_into(plugin: IPluginV2, device: Device, ins: Sequence[Any], outs: Sequence[Any],
             workspace: Any, stream: Stream) -> None:
    """A data-dependent plugin's step in a plan: its outputs computed, checked against the
    planned arrays and copied into them."""
    dynamic = adapter.dynamic_of(plugin)
    assert dynamic is not None
    got = dynamic.enqueue_dynamic(ins, workspace, stream)
    if len(got) < len(outs):
        raise ExecutionError(f"it returned {len(got)} outputs, expected {len(outs)}")
    for arr, out in zip(got, outs, strict=False):
        if getattr(arr, "shape", None) != out.shape or getattr(arr, "dtype", None) != out.dtype:
            raise PlanMismatch(
                f"it returned {getattr(arr, 'dtype', type(arr).__name__)} "
                f"{getattr(arr, 'shape', None)} where the plan holds {out.dtype} {out.shape}")
        device.copy(out, arr, stream)


def _key_inputs(engine: Engine, plugins: Sequence[IPluginV2]) -> tuple[str, ...] | None:
    """The engine inputs whose values decide the conditions of its data-dependent nodes;
    None where a data-dependent node is no If or a condition depends on another one."""
    producer = {o: k for k, nd in enumerate(engine.nodes) for o in nd.outputs}
    if any(not spec.is_tensor for spec in engine.tensors.values()):
        return None
    keys: dict[str, None] = {}
    for node, plugin in zip(engine.nodes, plugins, strict=True):
        if not adapter.is_data_dependent(plugin):
            continue
        if node.op_type not in _KEYABLE or node.domain not in ("", "ai.onnx") \
                or not node.inputs or not node.inputs[0]:
            return None
        todo, seen = [node.inputs[0]], set()
        while todo:
            name = todo.pop()
            if name in seen or name in engine.constants:
                continue
            seen.add(name)
            if name in engine.input_names:
                keys[name] = None
                continue
            step = producer.get(name)
            if step is None:
                return None
            up, up_plugin = engine.nodes[step], plugins[step]
            if adapter.is_data_dependent(up_plugin):
                return None
            if up.op_type in _SHAPE_ONLY and not up.domain:
                continue  # the input shapes are in the key already
            todo.extend(x for x in up.inputs if x)
    return tuple(keys)


class KeyedPlans:
    """Which key a run has, and the dimension values each key bound (known after a run in
    segments)."""

    def __init__(self, engine: Engine, key_inputs: tuple[str, ...], capacity: int) -> None:
        self.inputs = tuple(engine.input_names)
        self.key_inputs = key_inputs
        self.capacity = capacity
        self._bindings: OrderedDict[Any, dict[str, int]] = OrderedDict()
        #: the key of the last planned run (None: none yet, or it went in segments)
        self.last: Any = None

    @classmethod
    def of(cls, engine: Engine, plugins: Sequence[IPluginV2], capacity: int
           ) -> KeyedPlans | None:
        """The keyed planning of an engine, None where its shapes follow from no key."""
        key_inputs = _key_inputs(engine, plugins)
        return None if key_inputs is None else cls(engine, key_inputs, capacity)

    def key(self, feeds: Mapping[str, Any]) -> Any:
        """The run's key, None where the key inputs are too large to key plans by."""
        shapes = tuple(feeds[n].shape for n in self.inputs)
        if not self.key_inputs:
            return shapes
        try:  # host arrays (a device's array that NumPy cannot read keys nothing)
            values = [np.asarray(feeds[n]) for n in self.key_inputs]
        except (TypeError, ValueError):
            return None
        if sum(v.size for v in values) > KEY_ELEMENTS:
            return None
        return shapes, tuple(v.tobytes() for v in values)

    def same_key(self, feeds: Mapping[str, Any]) -> bool:
        """Whether ``feeds``, whose names, dtypes and shapes are the last run's (the caller
        checked), have the last planned run's key: its plan again, without the look-ups."""
        last = self.last
        if last is None:
            return False
        if not self.key_inputs:
            return True
        try:
            return bool(tuple(np.asarray(feeds[n]).tobytes() for n in self.key_inputs)
                        == last[1])
        except (TypeError, ValueError):
            return False

    def bindings(self, key: Any) -> dict[str, int] | None:
        got = self._bindings.get(key)
        if got is not None:
            self._bindings.move_to_end(key)
        return got

    def learn(self, key: Any, bindings: dict[str, int]) -> None:
        self._bindings[key] = dict(bindings)
        while len(self._bindings) > self.capacity:
            self._bindings.popitem(last=False)



# -- an execution context's keyed runs (here, imported only by engines that have them) --------

def execute_keyed(ctx: ExecutionContext, feeds: Mapping[str, Any], bindings: dict[str, int]
                  ) -> dict[str, Any] | None:
    """A run of ``ctx``'s keyed plan of these inputs; None where it goes in segments
    instead. A new key is first run in segments, to learn its shapes."""
    keyed = ctx._keyed
    assert keyed is not None
    key = keyed.key(feeds)
    if key is None:
        return None
    full = keyed.bindings(key)
    if full is None:  # a new key: a run in segments binds every dimension, then the plan
        full = dict(bindings)
        ctx._execute_dynamic(feeds, full)
        keyed.learn(key, full)
    keyed.last = key
    return run_keyed(ctx, feeds, ctx._use_plan(key, full))


def run_keyed(ctx: ExecutionContext, feeds: Mapping[str, Any], plan: Plan
              ) -> dict[str, Any] | None:
    """A run of a keyed plan of ``ctx``; None where a step's shapes followed from no key (the
    context goes in segments from then on)."""
    ctx._repeat = plan  # the same key again: this plan, without the look-ups
    try:
        return ctx._execute_plan(feeds, plan)
    except PlanMismatch as exc:  # shapes that no key decides: segments from now on
        log.debug("keyed plans given up for engine %r: %s", ctx.engine.name, exc)
        ctx._keyed = None
        ctx._plan = ctx._repeat = None
        ctx._plans.clear()
        return None
