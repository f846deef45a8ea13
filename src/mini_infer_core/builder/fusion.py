"""Fusion: a plugin absorbs the node that consumes its output, as the plugin declares.

A plugin lists the operators it can absorb in ``fusable`` (e.g. Conv: BatchNormalization, Relu,
Clip, Add) and implements ``fuse(op_type, attrs, consumer_constants, consumer_dims, position,
own_constants)``; returning a :class:`Fusion` means it took the consumer's work on (new values
for its own constant inputs, extra runtime inputs, and whatever it records in its attributes so
that the fusion survives serialization). The builder then skips the consumer and the plugin
writes the consumer's output. Only a single-consumer output that is not a graph output, with
the consumer on the same device and its other inputs already available, is fused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..network import Network
from ..plugin import DataType, DimsExprs, Fusion, IPluginV2
from ..plugin import _adapter as adapter
from .state import BuildState, NodeWork


def fuse(state: BuildState, work: NodeWork) -> None:
    """The fuse pass: the node's plugin absorbs the consumers it can (the fused nodes are
    skipped when their turn comes); its inputs and outputs change accordingly (and the output's
    shape and type where the :class:`Fusion` says so)."""
    assert work.plugin is not None
    inputs, work.outputs = state.fuser.absorb(work.plugin, work.index, work.inputs,
                                              work.outputs)
    if inputs != work.inputs:
        work.inputs = inputs
        work.in_types = [state.types[n] if n else None for n in inputs]

__all__ = ["Fuser", "Fusion", "fuse"]


class Fuser:
    def __init__(self, network: Network, devices: Sequence[str], enabled: bool,
                 constants: dict[str, np.ndarray[Any, Any]], dims: dict[str, DimsExprs],
                 types: dict[str, DataType]) -> None:
        self.network = network
        self.devices = list(devices)
        self.enabled = enabled
        self.constants, self.dims, self.types = constants, dims, types
        self.consumers: dict[str, list[int]] = {}
        for j, n in enumerate(network.nodes):
            for x in n.inputs:
                if x:
                    self.consumers.setdefault(x, []).append(j)
        self.graph_outputs = {t.name for t in network.outputs}
        self.skipped: set[int] = set()
        self.fused: list[str] = []

    def absorb(self, plugin: IPluginV2, i: int, inputs: list[str], outs: list[str]
               ) -> tuple[list[str], list[str]]:
        ability = adapter.fusion_of(plugin)
        if not self.enabled or ability is None:
            return inputs, outs
        fusable = ability.fusable
        me = self.network.nodes[i]
        while len(outs) == 1:
            o = outs[0]
            users = self.consumers.get(o, [])
            if len(users) != 1 or o in self.graph_outputs:
                break
            j = users[0]
            m = self.network.nodes[j]
            if (m.op_type not in fusable or m.domain or self.devices[j] != self.devices[i]
                    or m.inputs.count(o) != 1 or len([x for x in m.outputs if x]) != 1
                    or m.outputs[0] in self.dims):
                break
            others = [x for x in m.inputs if x and x != o]
            if any(x not in self.dims for x in others):
                break  # an input computed after this node: cannot fuse here
            result = ability.fuse(m.op_type, m.fields.values_dict(),
                          [self.constants.get(x) if x else None for x in m.inputs],
                          [self.dims.get(x) if x else None for x in m.inputs],
                          m.inputs.index(o), [self.constants.get(x) if x else None
                                              for x in inputs])
            if result is None:
                break
            inputs = list(inputs)
            for k, arr in sorted(result.constants.items()):
                name = f"{me.name}:fused{len(self.fused)}:{k}"
                arr = np.asarray(arr)
                self.constants[name] = arr
                self.dims[name] = DimsExprs(arr.shape)
                self.types[name] = DataType.from_numpy(arr.dtype)
                if k < len(inputs):
                    inputs[k] = name
                else:
                    inputs += [""] * (k - len(inputs)) + [name]
            inputs += [m.inputs[k] for k in result.append_inputs]
            out = m.outputs[0]
            self.dims[out] = DimsExprs(result.output_dims) \
                if result.output_dims is not None else self.dims[o]
            self.types[out] = result.output_type or self.types[o]
            self.skipped.add(j)
            self.fused.append(f"{m.op_type} {m.name!r} into {me.op_type} {me.name!r}")
            outs = [out]
        return inputs, outs
