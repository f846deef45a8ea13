"""Choosing a creator per node: device, opset, pins, priority; CPU fallback; error texts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..errors import BuildError, DeviceError, UnsupportedOperatorError
from ..network import Node
from ..plugin import Device
from ..registry import CreatorRecord, PluginRegistry, not_loaded_note

__all__ = ["Selector"]


#: operators that compute on 8- or 4-bit integers (the QDQ rewrite's and the exporters'):
#: where one falls back, the reason says the device has no integer kernel for it
_INTEGER_OPS = frozenset({
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger",
    "ConvInteger", "QLinearConv", "QLinearMatMul", "QGemm", "DynamicQuantizeMatMul",
    "MatMulIntegerToFloat", "MatMulNBits"})


def fallback_reason(node: Node, device: str, fallback: str) -> str:
    """Why ``node`` runs on ``fallback`` rather than on ``device`` (the placement report's
    words)."""
    integer = node.op_type in _INTEGER_OPS or node.op_type.startswith("QLinear")
    what = "integer (INT8) kernel" if integer else "plugin"
    return (f"no {what} for {node.qualified_op} (opset {node.opset}) on device {device!r}: "
            f"placed on {fallback!r}")


class Selector:
    def __init__(self, registry: PluginRegistry, pins: Mapping[str, str]) -> None:
        self.registry = registry
        self.pins = pins
        #: the nodes ``select`` placed on the fallback device: (node, reason)
        self.fell_back: list[tuple[Node, str]] = []

    def device(self, name: str) -> Device:
        dev = self.registry.get_device(name)
        if dev is None:
            known = self.registry.device_names()
            idle = not_loaded_note(self.registry)
            hint = (f"devices provided by installed plugins: {', '.join(known)}" if known
                    else f"no plugin distribution provides any device: {idle}" if idle
                    else "no plugin distribution provides any device: "
                         "pip install mini-infer-cpu-plugins")
            raise DeviceError(f"unknown device {name!r}; {hint}")
        return dev

    def candidate(self, node: Node, device: str) -> CreatorRecord | None:
        cands = self.registry.candidates(node.domain, node.op_type, device, node.opset)
        pin = self.pins.get(node.qualified_op) or self.pins.get(node.op_type)
        if pin is not None:
            cands = [c for c in cands if pin in (c.creator.plugin_namespace, c.distribution)]
        return cands[0] if cands else None

    def select(self, nodes: Sequence[Node], device: str, fallback: str | None,
               strict: bool) -> list[tuple[CreatorRecord, str]]:
        """(creator, device) per node; falls back to ``fallback`` unless ``strict``."""
        chosen: list[tuple[CreatorRecord, str] | None] = []
        missing: dict[tuple[str, int], list[Node]] = {}
        no_target: list[Node] = []
        for node in nodes:
            rec = self.candidate(node, device)
            where = device
            if rec is None and fallback and fallback != device:
                rec, where = self.candidate(node, fallback), fallback
                if rec is not None:
                    no_target.append(node)
                    self.fell_back.append((node, fallback_reason(node, device, fallback)))
            if rec is None:
                pin = self.pins.get(node.qualified_op) or self.pins.get(node.op_type)
                if pin is not None:
                    raise BuildError(
                        f"node {node.name!r} ({node.qualified_op}): pinned provider {pin!r} "
                        f"has no plugin for it on device {device!r}; providers: "
                        f"{self.providers_text(node)}")
                missing.setdefault((node.qualified_op, node.opset), []).append(node)
            chosen.append(None if rec is None else (rec, where))
        if missing:
            raise self.unsupported_error(missing, device)
        if strict and no_target:
            groups: dict[tuple[str, int], list[Node]] = {}
            for n in no_target:
                groups.setdefault((n.qualified_op, n.opset), []).append(n)
            raise self.unsupported_error(groups, device, strict=True)
        return [c for c in chosen if c is not None]

    def providers_text(self, node: Node) -> str:
        recs = self.registry.providers_of(node.domain, node.op_type)
        if not recs:
            return "none installed"
        return "; ".join(
            f"{r.creator.plugin_namespace}::{r.creator.name} v{r.creator.plugin_version} "
            f"(devices {','.join(r.creator.devices)}, opsets {r.creator.min_opset}-"
            f"{r.creator.max_opset or 'latest'}, from {r.provider})" for r in recs)

    def unsupported_error(self, missing: dict[tuple[str, int], list[Node]], device: str,
                          strict: bool = False) -> UnsupportedOperatorError:
        lines = []
        for (op, opset), nodes in sorted(missing.items()):
            names = ", ".join(repr(n.name) for n in nodes[:3]) + (" ..." if len(nodes) > 3
                                                                   else "")
            lines.append(f"  {op} (opset {opset}) at {len(nodes)} node(s) [{names}]; "
                         f"installed providers: {self.providers_text(nodes[0])}")
        count = sum(len(v) for v in missing.values())
        if strict:
            return UnsupportedOperatorError(
                f"{count} node(s) have no plugin for device {device!r} and strict device "
                "placement forbids falling back:\n" + "\n".join(lines)
                + "\ninstall plugins for them, or build without --strict-device")
        dists = [d.name for d in self.registry.distributions if d.status == "loaded"]
        idle = not_loaded_note(self.registry)
        hint = ("install a plugin distribution that provides them, or choose another device"
                if dists else f"no plugin distribution is loaded: {idle}" if idle else
                "no plugin distribution is loaded: pip install mini-infer-cpu-plugins")
        if dists and idle:
            hint += f" (installed, not loaded: {idle})"
        return UnsupportedOperatorError(
            f"{count} node(s) have no plugin for device {device!r}:\n" + "\n".join(lines)
            + f"\n{hint}")
