"""A schedule: an engine's tensors made concrete for one set of input shapes.

It evaluates every tensor's dimension expressions, sizes each node's workspace and plans one
arena per device (activations, scratch outputs and workspaces share it by lifetime). Graph
inputs, outputs, constants and string tensors live outside the arenas; sequences, optionals
and maps have no shape here (their nodes run data-dependently and return them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..plugin import DataType, IPluginV2, TensorFormat
from ..plugin import _adapter as adapter
from ..plugin._layouts import physical_shape
from .memory import MemoryPlan, plan_memory

if TYPE_CHECKING:
    from .engine import Engine

__all__ = ["Schedule"]

Desc = tuple[tuple[int, ...], DataType]


class Schedule:
    def __init__(self, engine: Engine, bindings: Mapping[str, int],
                 plugins: Sequence[IPluginV2] | None = None) -> None:
        self.bindings = dict(bindings)
        #: every tensor's array shape (its format's physical shape) and logical shape
        self.shapes: dict[str, tuple[int, ...]] = {}
        logical: dict[str, tuple[int, ...]] = self.shapes
        for name, spec in engine.tensors.items():
            if not spec.value_kind.is_tensor:
                continue  # sequences, optionals, maps: made by the nodes at run time
            if spec.kind == "constant":
                self.shapes[name] = tuple(engine.constants[name].shape)
            else:
                self.shapes[name] = spec.dims.evaluate(self.bindings)
        for name, shape in self.shapes.items():
            if any(d < 0 for d in shape):
                producer = next((f"output of {nd.describe()}" for nd in engine.nodes
                                 if name in nd.outputs), "an input or constant")
                raise InputError(
                    f"tensor {name!r} ({producer}) would have the negative shape {shape}"
                    + (f" for the input dimensions {self.bindings}" if self.bindings else "")
                    + ": the model's shapes are inconsistent with these dimensions")
        t = engine.tensors
        if any(spec.format is not TensorFormat.LINEAR for spec in t.values()):
            logical = dict(self.shapes)
            for name, shape in logical.items():
                self.shapes[name] = physical_shape(shape, t[name].format)
        self.logical = logical
        plugins = plugins if plugins is not None else [n.plugin for n in engine.nodes]
        #: per step, its inputs' and outputs' (logical shape, type) and formats
        self.in_descs: list[list[Desc | None]] = []
        self.out_descs: list[list[Desc]] = []
        self.in_formats: list[list[TensorFormat]] = []
        self.out_formats: list[list[TensorFormat]] = []
        self.workspace: list[int] = []
        for node, plugin in zip(engine.nodes, plugins, strict=True):
            ins = [(logical[n], t[n].dtype) if n else None for n in node.inputs]
            # a value (list, dict) returned by a node at the end has no shape: ()
            outs = [(logical.get(o, ()), t[o].dtype) for o in node.outputs]
            self.in_descs.append(ins)
            self.out_descs.append(outs)
            self.in_formats.append([t[n].format if n else TensorFormat.LINEAR
                                    for n in node.inputs])
            self.out_formats.append([t[o].format for o in node.outputs])
            self.workspace.append(adapter.workspace_size(
                plugin, ins, outs, self.in_formats[-1], self.out_formats[-1]))
        first: dict[str, int] = {}
        last: dict[str, int] = {}
        self.home: dict[str, str] = {}
        for step, node in enumerate(engine.nodes):
            for o in node.outputs:
                first.setdefault(o, step)
                last[o] = max(last.get(o, step), step)
                self.home[o] = node.device
            for n in node.inputs:
                if n:
                    last[n] = step
        planned = [n for n in first if t[n].kind in ("activation", "scratch")]
        # object arrays (strings) cannot live in a byte arena: the context allocates them
        self.separate_tensors = [n for n in planned if t[n].dtype is DataType.STRING]
        self.arena_tensors = [n for n in planned if t[n].dtype is not DataType.STRING]
        self.workspace_steps = [s for s, w in enumerate(self.workspace) if w > 0]
        #: tensor -> (the tensor it lives inside, byte offset there): a plugin's in-place input
        self.aliases = self._aliases(engine, plugins)
        roots = {n: self._root(n) for n in self.arena_tensors}
        for n, (root, _) in roots.items():  # a root lives as long as anything inside it
            first[root] = min(first[root], first[n])
            last[root] = max(last[root], last[n])
        self.offsets: dict[str, int] = {}
        self.workspace_offsets: dict[int, int] = {}
        self.plans: dict[str, MemoryPlan] = {}
        for dev in dict.fromkeys(n.device for n in engine.nodes):
            names = [n for n in self.arena_tensors if self.home[n] == dev and n not in self.aliases]
            steps = [s for s in self.workspace_steps if engine.nodes[s].device == dev]
            sizes = [self.nbytes(n, t[n].dtype) for n in names] + \
                [self.workspace[s] for s in steps]
            lifetimes = [(first[n], last[n]) for n in names] + [(s, s) for s in steps]
            plan = plan_memory(sizes, lifetimes)
            self.plans[dev] = plan
            self.offsets.update(zip(names, plan.offsets[: len(names)], strict=True))
            self.workspace_offsets.update(zip(steps, plan.offsets[len(names):], strict=True))
        for n, (root, delta) in roots.items():
            if n in self.aliases:
                self.offsets[n] = self.offsets[root] + delta

    def _aliases(self, engine: Engine, plugins: Sequence[IPluginV2]) -> dict[str, tuple[str, int]]:
        """Inputs that their consumer lets live inside its output (``in_place_inputs``), e.g.
        each input of a Concat along the outermost non-unit axis: the producer then writes
        straight into the concatenation, and the Concat copies nothing for it.

        Only arena tensors on the consumer's device qualify, each inside one output at most
        (a graph is acyclic, so a chain of them ends at a tensor placed on its own). An input
        already placed elsewhere may still be in place here through what holds it: a tensor
        made wholly of inputs placed inside it (a Concat's result, a Reshape's) goes inside
        this output too where this node places each of those inputs at the same distance
        from one another. DenseNet's Concats, each the previous one plus a layer, then all
        live in the last one and none copies anything."""
        t = engine.tensors
        arena = set(self.arena_tensors)
        aliases: dict[str, tuple[str, int]] = {}
        self.aliases = aliases  # _root reads it while the table grows
        #: output -> {input: byte offset}, for each output made wholly of in-place inputs
        composed: dict[str, dict[str, int]] = {}
        for step, (node, plugin) in enumerate(zip(engine.nodes, plugins, strict=True)):
            ability = adapter.in_place_of(plugin)
            if ability is None or self.blocked(step):
                continue
            seen = [n for n in node.inputs if n]
            wanted = ability.in_place_inputs(self.in_descs[step], self.out_descs[step]) or {}
            places: dict[str, dict[str, int]] = {}
            held: list[tuple[str, str, int]] = []  # (input, output, byte offset) placed elsewhere
            for i, (o, elements) in wanted.items():
                name, out = node.inputs[i], node.outputs[o]
                if (name not in arena or out not in arena or seen.count(name) > 1
                        or self.home[name] != self.home[out]
                        or t[name].dtype is not t[out].dtype):
                    continue
                start = elements * t[out].dtype.itemsize
                if start < 0 or start + self.nbytes(name, t[name].dtype) > \
                        self.nbytes(out, t[out].dtype):
                    raise ValueError(f"{node.describe()}: in_place_inputs puts input {i} "
                                     "outside its output")
                places.setdefault(out, {})[name] = start
                if name in aliases:
                    held.append((name, out, start))
                else:
                    aliases[name] = (out, start)
            for name, out, start in held:
                self._place_holder(name, out, start, places[out], composed, t)
            for out, inside in places.items():
                if sum(self.nbytes(n, t[n].dtype) for n in inside) == \
                        self.nbytes(out, t[out].dtype) and len(inside) == len(seen):
                    composed[out] = inside
        return aliases

    def blocked(self, step: int) -> bool:
        """Whether some tensor of the step is in another format than LINEAR (no input of
        such a step lives inside its output)."""
        return any(f is not TensorFormat.LINEAR
                   for f in (*self.in_formats[step], *self.out_formats[step]))

    def _place_holder(self, name: str, out: str, start: int, places: Mapping[str, int],
                      composed: Mapping[str, dict[str, int]], t: Mapping[str, Any]) -> None:
        """Put what holds ``name`` inside ``out`` where that keeps ``name`` at ``start``, if
        every part of it is where this node wants it there too (see ``_aliases``)."""
        root, delta = self._root(name)
        parts = composed.get(root)
        if parts is None or root == self._root(out)[0] or self.home[root] != self.home[out]:
            return
        where = start - delta
        if where < 0 or t[root].dtype is not t[out].dtype or \
                where + self.nbytes(root, t[root].dtype) > self.nbytes(out, t[out].dtype):
            return
        for part, offset in parts.items():
            if self._root(part) != (root, offset) or places.get(part) != where + offset:
                return
        self.aliases[root] = (out, where)

    def _root(self, name: str) -> tuple[str, int]:
        """The tensor ``name`` finally lives inside, and its byte offset there."""
        delta = 0
        while name in self.aliases:
            name, step = self.aliases[name]
            delta += step
        return name, delta

    def placed_at(self, name: str, out: str, start: int) -> bool:
        """Whether tensor ``name`` lives inside ``out`` at byte ``start`` (directly, or
        through what holds it)."""
        root, delta = self._root(out)
        return name in self.aliases and self._root(name) == (root, delta + start)

    @property
    def plan(self) -> MemoryPlan:
        """All arenas together (offsets are per device; see ``plans``)."""
        return MemoryPlan((), sum(p.peak_bytes for p in self.plans.values()),
                          sum(p.naive_bytes for p in self.plans.values()))

    def nbytes(self, name: str, dtype: DataType) -> int:
        n = dtype.itemsize
        for d in self.shapes[name]:
            n *= d
        return n

    def memory_summary(self) -> dict[str, Any]:
        total = self.plan
        out: dict[str, Any] = {
            "planned_peak_bytes": total.peak_bytes, "naive_bytes": total.naive_bytes,
            "tensors": len(self.arena_tensors),
            "saving": round(1 - total.peak_bytes / total.naive_bytes, 4)
            if total.naive_bytes else 0.0,
            "workspaces": len(self.workspace_steps), "bindings": dict(self.bindings)}
        if len(self.plans) > 1:
            out["per_device"] = {d: p.to_json() for d, p in self.plans.items()}
        return out
