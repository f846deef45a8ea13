"""Runtime: engine files → Engine, rebuilding every plugin through its creator."""

from __future__ import annotations

import os
from typing import Any

from .._debug import lifecycle_logger
from ..engine.builtins import CORE_NAMESPACE, CopyPlugin, deserialize_builtin
from ..engine.engine import Engine, EngineNode, TensorSpec
from ..engine.format import EngineFile, parse_engine_bytes, read_engine_file
from ..errors import (
    DeviceError,
    EngineFormatError,
    MiniInferError,
    PluginNotFoundError,
    node_errors,
)
from ..plugin import (
    TENSOR,
    DataType,
    DimExpr,
    DimsExprs,
    IPluginV2,
    SubgraphFactory,
    TensorFormat,
    ValueKind,
)
from ..plugin import _adapter as adapter
from ..registry import PluginRegistry, get_plugin_registry, install_hint
from ._binding import allow_substitutes_default, check_substitutes

__all__ = ["Runtime", "load_engine"]

log = lifecycle_logger()  # imports logging only once something else has (issue 30)


def subgraph_factory(registry: PluginRegistry) -> SubgraphFactory:
    """The builder's body runners for control-flow plugins (``builder.subgraph_factory``),
    the default of :class:`Runtime`: the builder is a layer below the runtime, imported when
    the first body is made, since it imports onnx, which loading an engine without If, Loop
    or Scan never needs."""
    def make(*args: Any, **kwargs: Any) -> Any:
        from ..builder import subgraph_factory as builders

        return builders(registry)(*args, **kwargs)

    return make


class Runtime:
    """TensorRT's IRuntime: ``Runtime().deserialize_engine(data_or_path)``.

    ``allow_substitutes``: load an engine whose plugins are now provided by another
    distribution than the one that built them (with a warning); None reads
    ``MINI_INFER_ALLOW_PLUGIN_SUBSTITUTES``. See ``runtime/_binding.py``.

    ``subgraphs``: what the control-flow plugins of the engines it loads build and run their
    bodies with (``plugin.SubgraphFactory``); by default the builder's, with this registry."""

    def __init__(self, registry: PluginRegistry | None = None, *,
                 allow_substitutes: bool | None = None,
                 subgraphs: SubgraphFactory | None = None) -> None:
        self.registry = registry if registry is not None else get_plugin_registry()
        self.allow_substitutes = (allow_substitutes_default() if allow_substitutes is None
                                  else allow_substitutes)
        self.subgraphs = subgraphs if subgraphs is not None else subgraph_factory(
            self.registry)

    def deserialize_engine(self, data: bytes | bytearray | memoryview) -> Engine:
        return self._engine(parse_engine_bytes(data, "<engine bytes>"))

    deserialize_cuda_engine = deserialize_engine  # the familiar TensorRT name

    def load_engine(self, path: str | os.PathLike[str], verify: bool = True) -> Engine:
        return self._engine(read_engine_file(path, verify=verify))

    def _engine(self, ef: EngineFile) -> Engine:
        h = ef.header
        try:
            return self._build(ef, h)
        except MiniInferError:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise EngineFormatError(
                f"{ef.label}: the header is inconsistent ({type(exc).__name__}: {exc}); "
                "rebuild the engine") from exc

    def _build(self, ef: EngineFile, h: dict[str, Any]) -> Engine:
        missing: dict[tuple[str, str, str], tuple[dict[str, Any], list[str]]] = {}
        for nd in h["nodes"]:
            p = nd["plugin"]
            key = (p["name"], p["version"], p["namespace"])
            if p["namespace"] != CORE_NAMESPACE and self.registry.get_creator(*key) is None:
                missing.setdefault(key, (p, []))[1].append(f"{nd['name']} ({nd['op_type']})")
        if missing:
            lines = []
            installs = set()
            for (name, version, ns), (p, users) in sorted(missing.items()):
                dist = p.get("distribution")
                dv = p.get("distribution_version")
                where = (f"provided at build time by distribution {dist} {dv}"
                         if dist else "registered in-process at build time")
                lines.append(f"  plugin {name!r} version {version!r} namespace {ns!r}, {where}; "
                             f"used by {len(users)} node(s), e.g. {users[0]}")
                if dist:
                    installs.add(install_hint(self.registry, dist, dv))
            todo = ("\n".join(sorted(installs)) if installs else
                    "register the creators before loading")
            raise PluginNotFoundError(
                f"{ef.label}: cannot load the engine: {len(missing)} plugin creator(s) are not "
                "registered:\n" + "\n".join(lines) + f"\n{todo}")
        check_substitutes(ef.label, h["nodes"], self.registry, CORE_NAMESPACE,
                          self.allow_substitutes)
        devices = {}
        for name in dict.fromkeys([h["device"], *(nd["device"] for nd in h["nodes"])]):
            dev = self.registry.get_device(name)
            if dev is None:
                raise DeviceError(
                    f"{ef.label}: the engine runs nodes on device {name!r}, which no installed "
                    f"plugin distribution provides (known: {self.registry.device_names()}); "
                    "install the plugin distribution that provides it")
            devices[name] = dev
        device = devices[h["device"]]
        constants = {c["name"]: ef.array(c) for c in h["constants"]}
        tensors = {
            n: TensorSpec(n, DataType[t["dtype"]],
                          DimsExprs([DimExpr.from_json(d) for d in t["shape"]]), t["kind"],
                          ValueKind.from_json(t["value"]) if "value" in t else TENSOR,
                          _tensor_format(ef.label, n, t.get("format", "linear")))
            for n, t in h["tensors"].items()}
        nodes = []
        for nd in h["nodes"]:
            p = nd["plugin"]
            data = bytes(ef.blob(int(p["offset"]), int(p["nbytes"])))
            if p["namespace"] == CORE_NAMESPACE:
                plugin = deserialize_builtin(p["name"], p["version"], data)
                if isinstance(plugin, CopyPlugin):
                    plugin.bind(devices)
                nodes.append(self._node(nd, p, plugin))
                continue
            rec = self.registry.get_creator(p["name"], p["version"], p["namespace"])
            assert rec is not None
            where = (f"{ef.label}: node {nd['name']!r} (plugin {p['namespace']}::{p['name']} "
                     f"from {rec.provider})")
            with node_errors(where, EngineFormatError, "the plugin failed to deserialize"):
                plugin = adapter.deserialize(rec.creator, nd["name"], data, self.subgraphs)
            nodes.append(self._node(nd, p, plugin))
        info = dict(h.get("build_info", {}))
        info["loaded_from"] = ef.label
        return Engine(name=h["name"], device=device, inputs=list(h["inputs"]),
                      outputs=list(h["outputs"]), tensors=tensors, constants=constants,
                      nodes=nodes, build_info=info, devices=devices)

    @staticmethod
    def _node(nd: dict[str, Any], p: dict[str, Any], plugin: IPluginV2) -> EngineNode:
        enode = EngineNode(nd["name"], nd["op_type"], nd["domain"], int(nd["opset"]),
                           nd["device"], plugin, p["name"], p["version"], p["namespace"],
                           p.get("distribution"), p.get("distribution_version"),
                           tuple(nd["inputs"]), tuple(nd["outputs"]))
        if log.debugging():
            log.debug("construct %s (deserialized)", enode.describe())
        return enode


def _tensor_format(label: str, name: str, value: object) -> TensorFormat:
    try:
        return TensorFormat(str(value))
    except ValueError as exc:
        raise EngineFormatError(
            f"{label}: tensor {name!r} has the unknown format {value!r} (known: "
            f"{[f.value for f in TensorFormat]}); the engine was built by a newer "
            "mini-infer-core: upgrade mini-infer-core or rebuild the engine") from exc


def load_engine(path: str | os.PathLike[str], registry: PluginRegistry | None = None) -> Engine:
    return Runtime(registry).load_engine(path)
