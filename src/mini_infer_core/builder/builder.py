"""Builder and BuilderConfig: Network → Engine.

Per node: choose a creator (registry, device, opset, pins), create the plugin from the node's
fields, infer output shapes and types through the plugin's interface level, negotiate formats,
fold the node if all its inputs are constants. Then drop dead nodes and plan memory.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from ..engine.engine import Engine, EngineNode, TensorSpec
from ..engine.schedule import Schedule
from ..errors import BuildError, MiniInferError
from ..importer import parse_onnx
from ..network import Network, Node
from ..plugin import (
    DataType,
    Device,
    DimExpr,
    DimsExprs,
    IPluginV2,
    PluginField,
    PluginFieldCollection,
    PluginFieldType,
    SubgraphFactory,
)
from ..plugin import _adapter as adapter
from ..registry import CreatorRecord, PluginRegistry, get_plugin_registry
from ._values import constant_values, output_values
from .folding import fold_node
from .fusion import Fuser
from .packing import pack_constants
from .placement import insert_copies
from .precision import Precision
from .selection import Selector
from .subgraph import SubgraphRunner
from .tactics import time_tactics

__all__ = ["BuilderConfig", "Builder", "OptimizationProfile", "build_engine",
           "subgraph_factory"]

log = logging.getLogger("mini_infer.lifecycle")
blog = logging.getLogger("mini_infer.builder")

@dataclass
class OptimizationProfile:
    """Allowed input shapes (TensorRT's IOptimizationProfile): min / opt / max per input."""

    shapes: dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = field(
        default_factory=dict)

    def set_shape(self, name: str, min: Sequence[int], opt: Sequence[int],
                  max: Sequence[int]) -> None:
        lo, mid, hi = tuple(min), tuple(opt), tuple(max)
        if not (len(lo) == len(mid) == len(hi)) or any(
                not (a <= b <= c) for a, b, c in zip(lo, mid, hi, strict=True)):
            raise BuildError(f"profile for {name!r}: need min <= opt <= max of one rank, got "
                             f"{lo}, {mid}, {hi}")
        self.shapes[name] = (lo, mid, hi)

    def to_json(self) -> dict[str, dict[str, list[int]]]:
        return {n: {"min": list(a), "opt": list(b), "max": list(c)}
                for n, (a, b, c) in self.shapes.items()}


@dataclass
class BuilderConfig:
    """How to build. ``pins`` maps an operator ("Conv", "com.example::L2Norm") to the plugin
    namespace or distribution that must provide it; ``profiles`` bound dynamic inputs."""

    device: str = "cpu"
    fold_constants: bool = True
    pins: dict[str, str] = field(default_factory=dict)
    profiles: list[OptimizationProfile] = field(default_factory=list)
    #: where nodes without a plugin for ``device`` run (None: nowhere, an error)
    fallback_device: str | None = "cpu"
    #: forbid any fallback: every node must run on ``device``
    strict_device: bool = False
    #: run nodes on ``device`` in HALF where their plugins accept it, casting at boundaries
    fp16: bool = False
    #: let plugins absorb the nodes that consume their outputs (see builder/fusion.py)
    fuse: bool = True
    #: time the tactics plugins offer on the real shapes and keep the fastest
    #: (see builder/tactics.py); off: each plugin's own default, a faster build
    time_tactics: bool = True

    def add_optimization_profile(self, profile: OptimizationProfile) -> int:
        self.profiles.append(profile)
        return len(self.profiles) - 1


class Builder:
    """TensorRT's IBuilder: ``Builder(registry).build_engine(network, config)``."""

    def __init__(self, registry: PluginRegistry | None = None) -> None:
        self.registry = registry if registry is not None else get_plugin_registry()
        #: what control-flow plugins build and run their bodies with (this registry)
        self.subgraphs: SubgraphFactory = subgraph_factory(self.registry)

    def create_builder_config(self, **kw: Any) -> BuilderConfig:
        return BuilderConfig(**kw)

    # -- selection ------------------------------------------------------------------------
    def _folder(self, plugin: IPluginV2, node: Node, device: Device, selector: Selector,
                host: str | None) -> tuple[IPluginV2, Device] | None:
        """What folds a node: its own plugin, or a host plugin when its device is absent
        (cross-building for a GPU on a machine without one)."""
        if device.availability()[0]:
            return plugin, device
        return _host_folder(self.registry, selector, node, host)

    # -- build ----------------------------------------------------------------------------
    def build_engine(self, network: Network, config: BuilderConfig | None = None) -> Engine:
        config = config or BuilderConfig()
        t0 = time.perf_counter()
        network = _constants_first(network)
        selector = Selector(self.registry, config.pins)
        device = selector.device(config.device)
        ok, reason = device.availability()
        fallback = config.fallback_device
        if fallback is not None and self.registry.get_device(fallback) is None:
            fallback = None
        selected = selector.select(network.nodes, device.name, fallback, config.strict_device)
        devices = {device.name: device}
        for _, dev_name in selected:
            devices.setdefault(dev_name, selector.device(dev_name))

        dims: dict[str, DimsExprs] = {}
        types: dict[str, DataType] = {}
        constants: dict[str, np.ndarray[Any, Any]] = dict(network.constants)
        for name, arr in constants.items():
            dims[name], types[name] = DimsExprs.of_constant(arr), DataType.from_numpy(arr.dtype)
        input_names = []
        for ti in network.inputs:
            if ti.dtype is None or ti.shape is None:
                raise BuildError(f"graph input {ti.name!r} has no element type or rank in the "
                                 "model; add them (onnx.tools.update_model_dims helps)")
            d = [DimExpr.const(x) if isinstance(x, int) else
                 DimExpr.sym(x if isinstance(x, str) else f"{ti.name}[{k}]")
                 for k, x in enumerate(ti.shape)]
            dims[ti.name], types[ti.name] = DimsExprs(d), ti.dtype
            input_names.append(ti.name)

        nodes: list[EngineNode] = []
        folded = 0
        precision = Precision(config.fp16, device.name, dims, types, constants)
        fuser = Fuser(network, [d for _, d in selected], config.fuse, constants, dims, types)
        for index, (node, (rec, node_device)) in enumerate(zip(network.nodes, selected,
                                                               strict=True)):
            if index in fuser.skipped:
                continue
            where = (f"node {node.name!r} ({node.qualified_op}, plugin "
                     f"{rec.creator.plugin_namespace}::{rec.creator.name} from {rec.provider}"
                     f"{'' if node_device == device.name else ', fallback to ' + node_device})")
            for name in node.inputs:
                if name and name not in dims:
                    raise BuildError(f"{where}: input {name!r} is not produced by any earlier "
                                     "node, initializer or graph input (is the graph sorted?)")
            try:
                plugin = adapter.create(rec.creator, node.name, _fields_for(rec, node),
                                        self.subgraphs)
                log.debug("construct %s", where)
                in_dims = [dims[n] if n else None for n in node.inputs]
                in_types = [types[n] if n else None for n in node.inputs]
                out_dims, out_types = adapter.infer_outputs(plugin, in_dims, in_types, where)
                adapter.check_formats(plugin, in_types, out_types, where)
            except MiniInferError as exc:
                if where in str(exc):
                    raise
                raise type(exc)(f"{where}: {exc}") from exc
            except Exception as exc:
                raise BuildError(f"{where}: the plugin failed during build: "
                                 f"{type(exc).__name__}: {exc}") from exc
            if len(node.outputs) > plugin.num_outputs:
                raise BuildError(f"{where}: the node has {len(node.outputs)} outputs, the "
                                 f"plugin produces {plugin.num_outputs}")
            outs = [node.outputs[k] if k < len(node.outputs) and node.outputs[k]
                    else f"{node.name}:scratch{k}"
                    for k in range(plugin.num_outputs)]
            known = output_values(plugin, in_dims, out_dims, out_types)
            for o, od, ot, kv in zip(outs, out_dims, out_types, known, strict=True):
                dims[o], types[o] = (od if kv is None else DimsExprs(list(od), values=kv)), ot
            if config.fold_constants and all(constant_values(kv) for kv in known):
                for o, kv in zip(outs, known, strict=True):
                    constants[o] = np.array([v.get_constant_value() for v in kv or ()],
                                            dtype=types[o].numpy).reshape(dims[o].to_tuple())
                    dims[o] = DimsExprs.of_constant(constants[o])
                folded += 1
                plugin.destroy()
                continue
            inputs_const = all(n == "" or n in constants for n in node.inputs)
            runnable = adapter.is_data_dependent(plugin) or \
                all(d.is_static() for d in out_dims)
            folder = self._folder(plugin, node, devices[node_device], selector, fallback)
            if config.fold_constants and inputs_const and runnable and folder is not None:
                values = fold_node(folder[0], node.inputs, folder[1], constants, dims, types,
                                   outs, where)
                if folder[0] is not plugin:
                    folder[0].destroy()
                for o, v in zip(outs, values, strict=True):
                    constants[o] = v
                    dims[o] = DimsExprs.of_constant(v)
                folded += 1
                plugin.destroy()
                continue
            fused_inputs, outs = fuser.absorb(plugin, index, list(node.inputs), outs)
            if fused_inputs != list(node.inputs):
                in_types = [types[n] if n else None for n in fused_inputs]
            half = precision.wants_half(plugin, node_device, in_types, out_types)
            node_inputs, casts = precision.resolve_inputs(fused_inputs, half, node_device)
            nodes.extend(casts)
            if half:
                h_dims = [dims[n] if n else None for n in node_inputs]
                h_types = [types[n] if n else None for n in node_inputs]
                out_dims, out_types = adapter.infer_outputs(plugin, h_dims, h_types, where)
                adapter.check_formats(plugin, h_types, out_types, where)
                outs = precision.rename_outputs(outs)
                for o, od, ot in zip(outs, out_dims, out_types, strict=True):
                    dims[o], types[o] = od, ot
            adapter.configure_build(
                plugin, [(dims[n], types[n]) if n else None for n in node_inputs],
                [(dims[o], types[o]) for o in outs])
            log.debug("configure %s", where)
            nodes.append(EngineNode(
                node.name, node.op_type, node.domain, node.opset, node_device, plugin,
                rec.creator.name, rec.creator.plugin_version, rec.creator.plugin_namespace,
                rec.distribution, rec.distribution_version, tuple(node_inputs), tuple(outs)))

        output_names = [t.name for t in network.outputs]
        for o in output_names:
            if o not in dims:
                raise BuildError(f"graph output {o!r} is not produced by any node")
        nodes.extend(precision.finish(output_names, device.name))
        nodes, used = _prune(nodes, output_names)
        nodes = insert_copies(nodes, device.name, input_names, constants, dims, types, devices)
        used |= {o for nd in nodes for o in nd.outputs}
        tensors: dict[str, TensorSpec] = {}
        for n in input_names:
            tensors[n] = TensorSpec(n, types[n], dims[n], "input")
        kept_consts = {n: np.asarray(constants[n], order="C") for n in used if n in constants}
        for n in kept_consts:
            tensors[n] = TensorSpec(n, types[n], dims[n], "constant")
        consumed = {x for nd in nodes for x in nd.inputs if x}
        for nd in nodes:
            for o in nd.outputs:
                kind = "activation" if o in consumed else "scratch"
                tensors[o] = TensorSpec(o, types[o], dims[o], kind)
        for o in output_names:
            if o in tensors and tensors[o].kind in ("activation", "scratch"):
                tensors[o] = TensorSpec(o, types[o], dims[o], "output")
            elif o not in tensors:
                tensors[o] = TensorSpec(o, types[o], dims[o], "constant")
                kept_consts[o] = np.asarray(constants[o], order="C")

        info: dict[str, Any] = {
            "source": network.source, "opsets": dict(network.opsets),
            "nodes_imported": len(network.nodes), "nodes_folded": folded,
            "nodes_pruned": len(network.nodes) - folded - len(fuser.skipped) - sum(
                1 for nd in nodes if nd.domain != "mini_infer.core"),
            "device_available": ok, "device_reason": reason,
            "placement": {d: sum(1 for nd in nodes if nd.device == d and nd.op_type != "Copy")
                          for d in devices},
            "copies": sum(1 for nd in nodes if nd.op_type == "Copy"),
            "fp16_nodes": precision.half_nodes,
            "fused": list(fuser.fused),
            "constants_packed": 0,
        }

        def make_engine() -> Engine:
            return Engine(name=network.name, device=device, inputs=input_names,
                          outputs=output_names, tensors=tensors, constants=kept_consts,
                          nodes=nodes, build_info=info, devices=devices)

        engine = make_engine()
        dynamic = any(adapter.is_data_dependent(nd.plugin) for nd in nodes)
        info["profiles"] = _check_profiles(config.profiles, tensors, input_names)
        if config.time_tactics and ok:
            info["tactics"] = time_tactics(engine)
        # after the tactics are chosen: a plugin packs for the kernel it will really run
        info["constants_packed"] = pack_constants(nodes, kept_consts, dims, types,
                                                  output_names)
        if info["constants_packed"]:
            engine = make_engine()
        if not ok:
            info["memory_plan"] = None  # the device is not here: plan where the engine runs
        elif all(tensors[n].dims.is_static() for n in input_names) and not dynamic:
            sched = Schedule(engine, {})
            info["memory_plan"] = sched.memory_summary()
        elif info["profiles"] and not dynamic:
            opt = {n: tuple(p["opt"]) for n, p in info["profiles"][0].items()}
            sched = Schedule(engine, _bindings(tensors, input_names, opt))
            info["memory_plan"] = {**sched.memory_summary(), "at": "opt shapes of profile 0"}
        else:
            info["memory_plan"] = None  # made at run time (dynamic or data-dependent shapes)
        info["build_seconds"] = round(time.perf_counter() - t0, 4)
        blog.info("built %r: %d nodes (%d folded) on %s in %.3fs", network.name, len(nodes),
                  folded, device.name, info["build_seconds"])
        return engine


def subgraph_factory(registry: PluginRegistry) -> SubgraphFactory:
    """Body runners that build with ``registry``'s plugins (attached to control-flow plugins
    by the builder and the runtime)."""
    def build(model: onnx.ModelProto, device: str) -> Engine:
        return Builder(registry).build_engine(parse_onnx(model), BuilderConfig(device=device))

    return functools.partial(SubgraphRunner, build=build)


def _constants_first(network: Network) -> Network:
    """The same graph with every node computable from constants alone moved to the front
    (order otherwise kept), so that folding has happened before fusion looks at consumers."""
    known = set(network.constants)
    early, late = [], []
    for node in network.nodes:
        if not any(g.type is PluginFieldType.GRAPH for g in node.fields.values()) and all(
                not x or x in known for x in node.inputs):
            early.append(node)
            known.update(o for o in node.outputs if o)
        else:
            late.append(node)
    if not early or len(early) == len(network.nodes):
        return network
    return dataclasses.replace(network, nodes=early + late)


def _fields_for(rec: CreatorRecord, node: Node) -> PluginFieldCollection:
    """The node's fields, plus ``__num_outputs__`` for creators that declare it (a plugin
    whose work depends on how many outputs the node uses, e.g. Split, MaxPool's Indices)."""
    if "__num_outputs__" in rec.creator.field_names and "__num_outputs__" not in node.fields:
        return PluginFieldCollection([*node.fields.fields, PluginField.from_value(
            "__num_outputs__", len(node.outputs))])
    return node.fields


def _host_folder(registry: PluginRegistry, selector: Selector, node: Node,
                 host: str | None) -> tuple[IPluginV2, Device] | None:
    for name in ([host] if host else []) + ["cpu"]:
        dev = registry.get_device(name)
        rec = selector.candidate(node, name) if dev is not None else None
        if rec is not None and dev is not None and dev.availability()[0]:
            return adapter.create(rec.creator, node.name, _fields_for(rec, node),
                                  subgraph_factory(registry)), dev
    return None


def _check_profiles(profiles: list[OptimizationProfile], tensors: Mapping[str, TensorSpec],
                    inputs: list[str]) -> list[dict[str, dict[str, list[int]]]]:
    out = []
    for k, prof in enumerate(profiles):
        unknown = sorted(set(prof.shapes) - set(inputs))
        if unknown:
            raise BuildError(f"optimization profile {k} names unknown input(s) {unknown}; "
                             f"inputs are {inputs}")
        for name, shapes in prof.shapes.items():
            dims = tensors[name].dims
            for shape in shapes:
                if len(shape) != len(dims) or any(
                        d.is_constant() and d.get_constant_value() != x
                        for d, x in zip(dims, shape, strict=False)):
                    raise BuildError(f"optimization profile {k}: shape {shape} does not fit "
                                     f"input {name!r} of shape {tensors[name].shape}")
        out.append(prof.to_json())
    return out


def _bindings(tensors: Mapping[str, TensorSpec], inputs: list[str],
              shapes: Mapping[str, tuple[int, ...]]) -> dict[str, int]:
    bindings: dict[str, int] = {}
    for name in inputs:
        for d, x in zip(tensors[name].dims, shapes.get(name, ()), strict=False):
            if not d.is_constant():
                bindings.setdefault(str(d), x)
    return bindings


def _prune(nodes: list[EngineNode], outputs: list[str]) -> tuple[list[EngineNode], set[str]]:
    """Drop nodes whose outputs nobody needs; return kept nodes and every tensor they use."""
    needed = set(outputs)
    kept: list[EngineNode] = []
    for nd in reversed(nodes):
        if any(o in needed for o in nd.outputs):
            kept.append(nd)
            needed.update(x for x in nd.inputs if x)
        else:
            nd.plugin.destroy()
    kept.reverse()
    return kept, needed


def build_engine(network: Network, config: BuilderConfig | None = None,
                 registry: PluginRegistry | None = None) -> Engine:
    return Builder(registry).build_engine(network, config)
