"""What the registry knows about distributions, creators and devices."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._record import field, record

if TYPE_CHECKING:  # not imported with the registry: `mini-infer --help` imports no NumPy
    from ..plugin import Device, IPluginCreator

__all__ = ["DistributionRecord", "CreatorRecord", "DeviceRecord", "Conflict"]


@record
class DistributionRecord:
    name: str
    version: str
    entry_point: str
    status: str = "pending"  # loaded | failed | blocked | incompatible | disabled
    error: str | None = None
    creators: list[str] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)
    #: creators of this distribution that were not registered, each with the reason (an
    #: identity another distribution registered first); the rest of it loads
    rejected: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "entry_point": self.entry_point,
                "status": self.status, "error": self.error, "creators": list(self.creators),
                "devices": list(self.devices), "rejected": list(self.rejected)}


@record(frozen=True)
class CreatorRecord:
    creator: IPluginCreator
    distribution: str | None
    distribution_version: str | None

    @property
    def key(self) -> tuple[str, str, str]:
        c = self.creator
        return (c.name, c.plugin_version, c.plugin_namespace)

    @property
    def provider(self) -> str:
        return self.distribution or "<registered in process>"

    def to_json(self) -> list[dict[str, Any]]:
        c = self.creator
        return [{"name": c.name, "version": c.plugin_version, "namespace": c.plugin_namespace,
                 "domain": c.domain or "ai.onnx", "op_type": c.op_type, "device": dev,
                 "priority": c.priority, "min_opset": c.min_opset, "max_opset": c.max_opset,
                 "distribution": self.distribution,
                 "distribution_version": self.distribution_version} for dev in c.devices]


@record(frozen=True)
class DeviceRecord:
    device: Device
    distribution: str | None

    def to_json(self) -> dict[str, Any]:
        ok, reason = self.device.availability()
        return {"name": self.device.name, "available": ok, "reason": reason or None,
                "distribution": self.distribution}


@record(frozen=True)
class Conflict:
    domain: str
    op_type: str
    device: str
    chosen: CreatorRecord
    others: tuple[CreatorRecord, ...]

    def to_json(self) -> dict[str, Any]:
        def one(r: CreatorRecord) -> dict[str, Any]:
            c = r.creator
            return {"namespace": c.plugin_namespace, "name": c.name, "version": c.plugin_version,
                    "priority": c.priority, "distribution": r.distribution}
        return {"domain": self.domain or "ai.onnx", "op_type": self.op_type,
                "device": self.device, "chosen": one(self.chosen),
                "others": [one(o) for o in self.others]}
