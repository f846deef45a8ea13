"""Builder and BuilderConfig: Network → Engine.

Per node: choose a creator (registry, device, opset, pins), create the plugin from the node's
fields, infer output shapes and types through the plugin's interface level, negotiate formats,
fold the node if all its inputs are constants. Then drop dead nodes and plan memory.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
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
from ._values import constant_values, output_values

__all__ = ["BuilderConfig", "Builder", "OptimizationProfile", "build_engine"]

log = logging.getLogger("mini_infer.lifecycle")
blog = logging.getLogger("mini_infer.builder")

_MAX_VALUES = 64  # small integer constants carry their values for shape computations


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

    def add_optimization_profile(self, profile: OptimizationProfile) -> int:
        self.profiles.append(profile)
        return len(self.profiles) - 1


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
            known = output_values(plugin, in_dims, out_dims, out_types)
            for o, od, ot, kv in zip(outs, out_dims, out_types, known, strict=True):
                dims[o], types[o] = (od if kv is None else DimsExprs(list(od), values=kv)), ot
            if config.fold_constants and all(constant_values(kv) for kv in known):
                for o, kv in zip(outs, known, strict=True):
                    constants[o] = np.array([v.get_constant_value() for v in kv or ()],
                                            dtype=types[o].numpy).reshape(dims[o].to_tuple())
                    dims[o] = _dims_of_const(constants[o])
                folded += 1
                plugin.destroy()
                continue
            inputs_const = all(n == "" or n in constants for n in node.inputs)
            runnable = getattr(plugin, "data_dependent", False) or \
                all(d.is_static() for d in out_dims)
            if config.fold_constants and inputs_const and runnable:
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
        dynamic = any(getattr(nd.plugin, "data_dependent", False) for nd in nodes)
        info["profiles"] = _check_profiles(config.profiles, tensors, input_names)
        if all(tensors[n].dims.is_static() for n in input_names) and not dynamic:
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

    def _fold(self, plugin: IPluginV2, node: Node, device: Device,
              constants: dict[str, np.ndarray[Any, Any]], dims: dict[str, DimsExprs],
              types: dict[str, DataType], outs: list[str], where: str
              ) -> list[np.ndarray[Any, Any]]:
        in_descs = [(tuple(constants[n].shape), types[n]) if n else None for n in node.inputs]
        if getattr(plugin, "data_dependent", False):
            try:
                plugin.initialize()
                results = list(plugin.enqueue_dynamic(  # type: ignore[attr-defined]
                    [constants[n] if n else None for n in node.inputs], None,
                    device.create_stream()))
                plugin.terminate()
            except MiniInferError:
                raise
            except Exception as exc:
                raise BuildError(f"{where}: constant folding failed: {type(exc).__name__}: "
                                 f"{exc}") from exc
            return [np.asarray(device.to_host(r)) for r in results]
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
