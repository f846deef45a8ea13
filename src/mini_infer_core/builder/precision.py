"""Reduced precision (``BuilderConfig(fp16=True)``): nodes whose plugin accepts HALF at every
float position (``supports_format_combination``) run in HALF, on the target device only.

Their outputs are renamed ``NAME@fp16``; a FLOAT version of a tensor is made by a Cast step only
where a FLOAT consumer (or the graph's output) needs it, and a HALF version of a FLOAT input by
a Cast step before the first HALF consumer (constants are converted once, at build time).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._version import __version__
from ..engine.builtins import CORE_NAMESPACE, CastPlugin
from ..engine.engine import EngineNode
from ..plugin import DataType, DimsExprs, IPluginV2, IPluginV2DynamicExt, PluginTensorDesc
from ..plugin import _adapter as adapter
from .state import BuildState, NodeWork

__all__ = ["Precision", "precision"]

F, H = DataType.FLOAT, DataType.HALF


def precision(state: BuildState, work: NodeWork) -> None:
    """The precision pass: a node that may run in HALF does, with Cast steps where FLOAT
    tensors meet it (and its outputs renamed ``NAME@fp16``)."""
    assert work.plugin is not None
    prec = state.precision
    half = prec.wants_half(work.plugin, work.device, work.in_types, work.out_types) and all(
        k is None or k.is_tensor for k in [*work.in_kinds, *work.out_kinds])
    work.inputs, casts = prec.resolve_inputs(work.inputs, half, work.device)
    state.nodes.extend(casts)
    if not half:
        return
    h_dims = [state.dims[n] if n else None for n in work.inputs]
    h_types = [state.types[n] if n else None for n in work.inputs]
    out_dims, out_types = adapter.infer_outputs(work.plugin, h_dims, h_types, work.where)
    adapter.check_formats(work.plugin, h_types, out_types, work.where)
    work.outputs = prec.rename_outputs(work.outputs)
    for o, od, ot in zip(work.outputs, out_dims, out_types, strict=True):
        state.dims[o], state.types[o] = od, ot


class Precision:
    def __init__(self, enabled: bool, target: str, dims: dict[str, DimsExprs],
                 types: dict[str, DataType], constants: dict[str, np.ndarray[Any, Any]]) -> None:
        self.enabled = enabled
        self.target = target
        self.dims, self.types, self.constants = dims, types, constants
        self.half_of: dict[str, str] = {}      # FLOAT tensor -> its HALF version
        self.virtual: dict[str, str] = {}      # FLOAT name not yet made -> HALF tensor
        self.half_nodes = 0

    def wants_half(self, plugin: IPluginV2, device: str, in_types: Sequence[DataType | None],
                   out_types: Sequence[DataType]) -> bool:
        if not self.enabled or device != self.target:
            return False
        if not isinstance(plugin, IPluginV2DynamicExt):
            return False
        all_types = [*in_types, *out_types]
        if F not in all_types:
            return False
        halved = [PluginTensorDesc((), H if t is F else (t or F)) for t in all_types]
        return all(t is None or plugin.supports_format_combination(pos, halved, len(in_types))
                   for pos, t in enumerate(all_types))

    def _cast(self, src: str, dst: str, to: DataType, device: str) -> EngineNode:
        self.dims[dst], self.types[dst] = self.dims[src], to
        return EngineNode(f"cast {src} to {to.name}", "Cast", CORE_NAMESPACE, 1, device,
                          CastPlugin(to), "Cast", "1", CORE_NAMESPACE, "mini-infer-core",
                          __version__, (src,), (dst,))

    def resolve_inputs(self, inputs: Sequence[str], half: bool, device: str
                       ) -> tuple[list[str], list[EngineNode]]:
        """Input names for a node (HALF or FLOAT run) and the Cast steps to insert first."""
        casts: list[EngineNode] = []
        out: list[str] = []
        for x in inputs:
            if not x:
                out.append(x)
            elif half and self.types.get(x) is F:
                if x not in self.half_of:
                    name = f"{x}@fp16"
                    if x in self.constants:
                        self.constants[name] = self.constants[x].astype(np.float16)
                        self.dims[name], self.types[name] = self.dims[x], H
                    else:
                        src = self.materialize(x, device, casts)
                        casts.append(self._cast(src, name, H, device))
                    self.half_of[x] = name
                out.append(self.half_of[x])
            elif not half and x in self.virtual:
                out.append(self.materialize(x, device, casts))
            else:
                out.append(x)
        return out, casts

    def materialize(self, x: str, device: str, casts: list[EngineNode]) -> str:
        """Make the FLOAT tensor ``x`` exist (a Cast from its HALF version) if it does not."""
        src = self.virtual.pop(x, None)
        if src is not None:
            casts.append(self._cast(src, x, F, device))
        return x

    def rename_outputs(self, outs: Sequence[str]) -> list[str]:
        """Outputs of a HALF node: FLOAT outputs become ``NAME@fp16``; NAME stays virtual."""
        self.half_nodes += 1
        renamed = []
        for o in outs:
            if self.types.get(o) is F:
                name = f"{o}@fp16"
                self.dims[name], self.types[name] = self.dims[o], H
                self.virtual[o] = name
                self.half_of[o] = name
                renamed.append(name)
            else:
                renamed.append(o)
        return renamed

    def finish(self, outputs: Sequence[str], device: str) -> list[EngineNode]:
        casts: list[EngineNode] = []
        for o in outputs:
            if o in self.virtual:
                self.materialize(o, device, casts)
        return casts
