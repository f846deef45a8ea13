"""Builder and BuilderConfig: Network → Engine.

Per node: choose a creator (registry, device, opset, pins), create the plugin from the node's
fields, infer output shapes and types through the plugin's interface level, negotiate formats,
fold the node if all its inputs are constants. Then drop dead nodes and plan memory.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..engine.engine import Engine, EngineNode, TensorSpec
from ..engine.schedule import Schedule
from ..errors import BuildError, DeviceError, MiniInferError, UnsupportedOperatorError
from ..network import Network, Node
from ..plugin import DataType, Device, DimExpr, DimsExprs, IPluginV2
from ..plugin import _adapter as adapter
from ..registry import CreatorRecord, PluginRegistry, get_plugin_registry

__all__ = ["BuilderConfig", "Builder", "build_engine"]

log = logging.getLogger("mini_infer.lifecycle")
blog = logging.getLogger("mini_infer.builder")

_MAX_VALUES = 64  # small integer constants carry their values for shape computations


@dataclass
class BuilderConfig:
    """How to build. ``pins`` maps an operator ("Conv", "com.example::L2Norm") to the plugin
    namespace or distribution that must provide it."""

    device: str = "cpu"
    fold_constants: bool = True
    pins: dict[str, str] = field(default_factory=dict)


def _values_of(arr: np.ndarray[Any, Any]) -> tuple[int, ...] | None:
    if arr.dtype.kind in "iu" and arr.ndim <= 1 and arr.size <= _MAX_VALUES:
        return tuple(int(v) for v in arr.reshape(-1))
    return None


def _dims_of_const(arr: np.ndarray[Any, Any]) -> DimsExprs:
    return DimsExprs(arr.shape, values=_values_of(arr))


class Builder:
    """TensorRT's IBuilder: ``Builder(registry).build_engine(network, config)``."""

    def __init__(self, registry: PluginRegistry | None = None) -> None:
        self.registry = registry if registry is not None else get_plugin_registry()

    def create_builder_config(self, **kw: Any) -> BuilderConfig:
        return BuilderConfig(**kw)

    # -- selection ------------------------------------------------------------------------
    def _device(self, name: str) -> Device:
        dev = self.registry.get_device(name)
        if dev is None:
            known = self.registry.device_names()
            hint = ("no plugin distribution provides any device: "
                    "pip install mini-infer-cpu-plugins" if not known
                    else f"devices provided by installed plugins: {', '.join(known)}")
            raise DeviceError(f"unknown device {name!r}; {hint}")
        return dev

    def _select(self, node: Node, device: str, pins: Mapping[str, str]) -> CreatorRecord | None:
        cands = self.registry.candidates(node.domain, node.op_type, device, node.opset)
        pin = pins.get(node.qualified_op) or pins.get(node.op_type)
        if pin is not None:
            cands = [c for c in cands if pin in (c.creator.plugin_namespace, c.distribution)]
            if not cands:
                raise BuildError(
                    f"node {node.name!r} ({node.qualified_op}): pinned provider {pin!r} has no "
                    f"plugin for it on device {device!r}; providers: "
                    f"{self._providers_text(node)}")
        return cands[0] if cands else None

    def _providers_text(self, node: Node) -> str:
        recs = self.registry.providers_of(node.domain, node.op_type)
        if not recs:
            return "none installed"
        return "; ".join(
            f"{r.creator.plugin_namespace}::{r.creator.name} v{r.creator.plugin_version} "
            f"(devices {','.join(r.creator.devices)}, opsets {r.creator.min_opset}-"
            f"{r.creator.max_opset or 'latest'}, from {r.provider})" for r in recs)

    def _unsupported_error(self, missing: dict[tuple[str, int], list[Node]], device: str
                           ) -> UnsupportedOperatorError:
        lines = []
        for (op, opset), nodes in sorted(missing.items()):
            names = ", ".join(repr(n.name) for n in nodes[:3]) + (" ..." if len(nodes) > 3 else "")
            lines.append(f"  {op} (opset {opset}) at {len(nodes)} node(s) [{names}]; "
                         f"installed providers: {self._providers_text(nodes[0])}")
        dists = [d.name for d in self.registry.distributions if d.status == "loaded"]
        hint = ("no plugin distribution is loaded: pip install mini-infer-cpu-plugins"
                if not dists else
                "install a plugin distribution that provides them, or choose another device")
        return UnsupportedOperatorError(
            f"{sum(len(v) for v in missing.values())} node(s) have no plugin for device "
            f"{device!r}:\n" + "\n".join(lines) + f"\n{hint}")

    # -- build ----------------------------------------------------------------------------
    def build_engine(self, network: Network, config: BuilderConfig | None = None) -> Engine:
        config = config or BuilderConfig()
        t0 = time.perf_counter()
        device = self._device(config.device)
        ok, reason = device.availability()
        selected: dict[int, CreatorRecord] = {}
        missing: dict[tuple[str, int], list[Node]] = {}
        for i, node in enumerate(network.nodes):
            rec = self._select(node, device.name, config.pins)
            if rec is None:
                missing.setdefault((node.qualified_op, node.opset), []).append(node)
            else:
                selected[i] = rec
        if missing:
            raise self._unsupported_error(missing, device.name)

        dims: dict[str, DimsExprs] = {}
        types: dict[str, DataType] = {}
        constants: dict[str, np.ndarray[Any, Any]] = dict(network.constants)
        for name, arr in constants.items():
            dims[name], types[name] = _dims_of_const(arr), DataType.from_numpy(arr.dtype)
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
        for i, node in enumerate(network.nodes):
            rec = selected[i]
            where = (f"node {node.name!r} ({node.qualified_op}, plugin "
                     f"{rec.creator.plugin_namespace}::{rec.creator.name} from {rec.provider})")
            for name in node.inputs:
                if name and name not in dims:
                    raise BuildError(f"{where}: input {name!r} is not produced by any earlier "
                                     "node, initializer or graph input (is the graph sorted?)")
            try:
                plugin = rec.creator.create_plugin(node.name, node.fields)
                plugin.plugin_namespace = rec.creator.plugin_namespace
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
            for o, od, ot in zip(outs, out_dims, out_types, strict=True):
                dims[o], types[o] = od, ot
            inputs_const = all(n == "" or n in constants for n in node.inputs)
            if config.fold_constants and inputs_const and all(d.is_static() for d in out_dims):
                values = self._fold(plugin, node, device, constants, dims, types, outs, where)
                for o, v in zip(outs, values, strict=True):
                    constants[o] = v
                    dims[o] = _dims_of_const(v)
                folded += 1
                plugin.destroy()
                continue
            adapter.configure_build(
                plugin, [(dims[n], types[n]) if n else None for n in node.inputs],
                [(dims[o], types[o]) for o in outs])
            log.debug("configure %s", where)
            nodes.append(EngineNode(
                node.name, node.op_type, node.domain, node.opset, device.name, plugin,
                rec.creator.name, rec.creator.plugin_version, rec.creator.plugin_namespace,
                rec.distribution, rec.distribution_version, tuple(node.inputs), tuple(outs)))

        output_names = [t.name for t in network.outputs]
        for o in output_names:
            if o not in dims:
                raise BuildError(f"graph output {o!r} is not produced by any node")
        nodes, used = _prune(nodes, output_names)
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
            "nodes_pruned": len(network.nodes) - folded - len(nodes),
            "device_available": ok, "device_reason": reason,
        }
        engine = Engine(name=network.name, device=device, inputs=input_names,
                        outputs=output_names, tensors=tensors, constants=kept_consts,
                        nodes=nodes, build_info=info)
        if all(tensors[n].dims.is_static() for n in input_names):
            sched = Schedule(engine, {})
            info["memory_plan"] = sched.memory_summary()
        else:
            info["memory_plan"] = None  # planned at run time, per input shapes
        info["build_seconds"] = round(time.perf_counter() - t0, 4)
        blog.info("built %r: %d nodes (%d folded) on %s in %.3fs", network.name, len(nodes),
                  folded, device.name, info["build_seconds"])
        return engine

    def _fold(self, plugin: IPluginV2, node: Node, device: Device,
              constants: dict[str, np.ndarray[Any, Any]], dims: dict[str, DimsExprs],
              types: dict[str, DataType], outs: list[str], where: str
              ) -> list[np.ndarray[Any, Any]]:
        in_descs = [(tuple(constants[n].shape), types[n]) if n else None for n in node.inputs]
        out_descs = [(dims[o].to_tuple(), types[o]) for o in outs]
        try:
            adapter.configure_concrete(plugin, in_descs, out_descs)
            plugin.initialize()
            ws_size = adapter.workspace_size(plugin, in_descs, out_descs)
            ws = device.allocate(ws_size) if ws_size else None
            ins = [device.to_device(constants[n]) if n else None for n in node.inputs]
            results = [device.empty(s, t.numpy) for s, t in out_descs]
            plugin.enqueue(ins, results, ws, device.create_stream())
            device.synchronize()
            plugin.terminate()
        except MiniInferError:
            raise
        except Exception as exc:
            raise BuildError(f"{where}: constant folding failed: {type(exc).__name__}: {exc}"
                             ) from exc
        blog.debug("folded %s", where)
        return [np.asarray(device.to_host(r)) for r in results]


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
