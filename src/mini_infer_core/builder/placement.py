"""Placement across devices: explicit copy steps where a node runs on another device than the
producer of one of its inputs (graph inputs live on the engine's device; constants are
uploaded to every device that reads them, so they never need a copy)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .._record import replace
from .._version import __version__
from ..engine.builtins import CORE_NAMESPACE, CopyPlugin, ValueCopyPlugin
from ..engine.engine import EngineNode
from ..plugin import DataType, Device, DimsExprs, ValueKind
from .state import BuildState

__all__ = ["insert_copies", "place"]


def place(state: BuildState) -> None:
    """The place pass: explicit Copy steps between devices."""
    state.nodes = insert_copies(state.nodes, state.device.name, state.input_names,
                                state.constants, state.dims, state.types, state.devices,
                                state.kinds)


def insert_copies(nodes: list[EngineNode], primary: str, inputs: Iterable[str],
                  constants: Mapping[str, object], dims: dict[str, DimsExprs],
                  types: dict[str, DataType], devices: Mapping[str, Device],
                  kinds: dict[str, ValueKind] | None = None) -> list[EngineNode]:
    """The nodes with a Copy step before each read of a value made on another device (a
    sequence, optional or map -- ``kinds`` -- is copied tensor by tensor into a new one)."""
    kinds = kinds if kinds is not None else {}
    home = {n: primary for n in inputs}
    copies: dict[tuple[str, str], str] = {}
    out: list[EngineNode] = []
    for nd in nodes:
        new_inputs = []
        for x in nd.inputs:
            src = home.get(x, nd.device)
            if not x or x in constants or src == nd.device:
                new_inputs.append(x)
                continue
            key = (x, nd.device)
            if key not in copies:
                name = f"{x}@{nd.device}"
                plugin = CopyPlugin(src, nd.device) if x not in kinds else \
                    ValueCopyPlugin(src, nd.device, kinds[x])
                plugin.bind(dict(devices))
                out.append(EngineNode(
                    f"copy {x} {src}->{nd.device}", "Copy", CORE_NAMESPACE, 1, nd.device,
                    plugin, "Copy", "1", CORE_NAMESPACE, "mini-infer-core", __version__,
                    (x,), (name,)))
                dims[name], types[name], home[name] = dims[x], types[x], nd.device
                if x in kinds:
                    kinds[name] = kinds[x]
                copies[key] = name
            new_inputs.append(copies[key])
        out.append(replace(nd, inputs=tuple(new_inputs)) if new_inputs != list(nd.inputs)
                   else nd)
        for o in nd.outputs:
            home[o] = nd.device
    return out
