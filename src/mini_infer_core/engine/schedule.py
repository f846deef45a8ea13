"""A schedule: an engine's tensors made concrete for one set of input shapes.

It evaluates every tensor's dimension expressions, sizes each node's workspace and plans the
arena (activations, scratch outputs and workspaces share it by lifetime). Graph inputs,
outputs and constants live outside the arena.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..builder.memory import MemoryPlan, plan_memory
from ..plugin import DataType, IPluginV2
from ..plugin import _adapter as adapter

if TYPE_CHECKING:
    from .engine import Engine

__all__ = ["Schedule"]

Desc = tuple[tuple[int, ...], DataType]


class Schedule:
    def __init__(self, engine: Engine, bindings: Mapping[str, int],
                 plugins: Sequence[IPluginV2] | None = None) -> None:
        self.bindings = dict(bindings)
        self.shapes: dict[str, tuple[int, ...]] = {}
        for name, spec in engine.tensors.items():
            if spec.kind == "constant":
                self.shapes[name] = tuple(engine.constants[name].shape)
            else:
                self.shapes[name] = spec.dims.evaluate(self.bindings)
        for name, shape in self.shapes.items():
            if any(d < 0 for d in shape):
                raise ValueError(f"tensor {name!r} would have negative shape {shape}")
        plugins = plugins if plugins is not None else [n.plugin for n in engine.nodes]
        t = engine.tensors
        self.in_descs: list[list[Desc | None]] = []
        self.out_descs: list[list[Desc]] = []
        self.workspace: list[int] = []
        for node, plugin in zip(engine.nodes, plugins, strict=True):
            ins = [(self.shapes[n], t[n].dtype) if n else None for n in node.inputs]
            outs = [(self.shapes[o], t[o].dtype) for o in node.outputs]
            self.in_descs.append(ins)
            self.out_descs.append(outs)
            self.workspace.append(adapter.workspace_size(plugin, ins, outs))
        # lifetimes over node steps
        first: dict[str, int] = {}
        last: dict[str, int] = {}
        for step, node in enumerate(engine.nodes):
            for o in node.outputs:
                first.setdefault(o, step)
                last[o] = max(last.get(o, step), step)
            for n in node.inputs:
                if n:
                    last[n] = step
        planned = [n for n in first if t[n].kind in ("activation", "scratch")]
        # object arrays (strings) cannot live in a byte arena: the context allocates them
        self.arena_tensors = [n for n in planned if t[n].dtype is not DataType.STRING]
        self.separate_tensors = [n for n in planned if t[n].dtype is DataType.STRING]
        sizes = [self.nbytes(n, t[n].dtype) for n in self.arena_tensors]
        lifetimes = [(first[n], last[n]) for n in self.arena_tensors]
        self.workspace_steps = [s for s, w in enumerate(self.workspace) if w > 0]
        sizes += [self.workspace[s] for s in self.workspace_steps]
        lifetimes += [(s, s) for s in self.workspace_steps]
        self.plan: MemoryPlan = plan_memory(sizes, lifetimes)
        k = len(self.arena_tensors)
        self.offsets = dict(zip(self.arena_tensors, self.plan.offsets[:k], strict=True))
        self.workspace_offsets = dict(zip(self.workspace_steps, self.plan.offsets[k:],
                                          strict=True))

    def nbytes(self, name: str, dtype: DataType) -> int:
        n = dtype.itemsize
        for d in self.shapes[name]:
            n *= d
        return n

    def memory_summary(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.plan.to_json())
        out["workspaces"] = len(self.workspace_steps)
        out["bindings"] = dict(self.bindings)
        return out
