"""The plugin registry: creators by (name, version, namespace) and by (domain, op, device).

Selection order for building, documented in docs/architecture.md: a pinned provider wins;
otherwise the highest ``priority``; ties go to the creator whose (distribution name,
namespace, version) sorts first. Creators registered in-process (no distribution) sort after
every distribution at equal priority.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..errors import PluginLoadError
from ._records import Conflict, CreatorRecord, DeviceRecord, DistributionRecord

if TYPE_CHECKING:  # imported where a creator or device registers (see _records)
    from ..plugin import Device, IPluginCreator

__all__ = ["DuplicateCreatorError", "PluginRegistry"]


class DuplicateCreatorError(PluginLoadError):
    """A creator's (name, version, namespace) is already registered by another creator.

    Discovery rejects only that creator (TensorRT's registry does the same) and keeps the
    rest of its distribution; ``existing`` is the record that keeps the identity."""

    def __init__(self, message: str, existing: CreatorRecord) -> None:
        super().__init__(message)
        self.existing = existing


def _tie_key(r: CreatorRecord) -> tuple[int, str, str, str]:
    c = r.creator
    return (-c.priority, r.distribution or "\uffff", c.plugin_namespace, c.plugin_version)


def _overlap(a: CreatorRecord, b: CreatorRecord) -> bool:
    hi_a = a.creator.max_opset if a.creator.max_opset is not None else 10**9
    hi_b = b.creator.max_opset if b.creator.max_opset is not None else 10**9
    return a.creator.min_opset <= hi_b and b.creator.min_opset <= hi_a


def _who(r: CreatorRecord) -> str:
    if r.distribution and r.distribution_version:
        return f"{r.distribution} {r.distribution_version}"
    return r.provider


def validate_creator(creator: Any, distribution: str | None) -> None:
    """Check a creator when it registers, not when it is first used."""
    from ..plugin import IPluginCreator

    who = f" from distribution {distribution!r}" if distribution else ""
    if not isinstance(creator, IPluginCreator):
        raise PluginLoadError(f"{creator!r}{who} is not an IPluginCreator")
    problems = []
    for attr in ("name", "plugin_version", "op_type"):
        if not isinstance(getattr(creator, attr, None), str) or not getattr(creator, attr):
            problems.append(f"{attr} must be a non-empty string")
    if not isinstance(creator.plugin_namespace, str):
        problems.append("plugin_namespace must be a string")
    if not creator.devices or not all(isinstance(d, str) for d in creator.devices):
        problems.append("devices must be a non-empty tuple of device names")
    if not isinstance(creator.priority, int):
        problems.append("priority must be an int")
    try:
        names = creator.field_names
        if not all(isinstance(n, str) for n in names):
            problems.append("field_names must be strings")
    except Exception as exc:  # noqa: BLE001 - a plugin bug, reported with its origin
        problems.append(f"field_names raised {exc!r}")
    if problems:
        raise PluginLoadError(
            f"creator {getattr(creator, 'name', creator)!r}{who} is invalid: "
            + "; ".join(problems))


class PluginRegistry:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._by_key: dict[tuple[str, str, str], CreatorRecord] = {}
        #: (domain, op_type) -> its records, made on the first look-up after a change (a
        #: build asks once per node: a scan of every creator each time cost a large model's
        #: build tens of milliseconds)
        self._by_op: dict[tuple[str, str], list[CreatorRecord]] | None = None
        self._devices: dict[str, DeviceRecord] = {}
        #: devices a distribution provides whose hooks have not run yet (discovery from its
        #: cache): name -> the function that loads the distribution's devices
        self._deferred: dict[str, Callable[[], None]] = {}
        #: creators known by identity whose objects are made when first looked up
        #: (discovery from its cache): key -> (make, distribution, distribution version)
        self._pending: dict[tuple[str, str, str],
                            tuple[Callable[[], IPluginCreator], str | None, str | None]] = {}
        #: the pending keys by the (domain, op_type) they declare (None: undeclared), so
        #: that a build's look-up of an operator makes only that operator's creators
        self._pending_by_op: dict[tuple[str, str] | None, list[tuple[str, str, str]]] = {}
        self.distributions: list[DistributionRecord] = []

    # -- registration (TensorRT: registerCreator / deregisterCreator) -----------------------
    def register_creator(self, creator: IPluginCreator, *, distribution: str | None = None,
                         distribution_version: str | None = None) -> CreatorRecord:
        validate_creator(creator, distribution)
        rec = CreatorRecord(creator, distribution, distribution_version)
        with self._lock:
            if rec.key in self._pending:
                self._make_pending(rec.key)
            old = self._by_key.get(rec.key)
            if old is not None and old.creator is not creator:
                raise DuplicateCreatorError(
                    f"plugin {rec.key[0]!r} version {rec.key[1]!r} namespace {rec.key[2]!r} "
                    f"from {_who(rec)} is already registered by {_who(old)}; "
                    "uninstall one of them or give the plugin its own namespace", old)
            self._by_key[rec.key] = rec
            self._by_op = None
        return rec

    def defer_creator(self, key: tuple[str, str, str], make: Callable[[], IPluginCreator], *,
                      distribution: str | None = None,
                      distribution_version: str | None = None,
                      op: tuple[str, str] | None = None) -> None:
        """A creator known by its identity ``key`` (name, version, namespace), made by
        ``make()`` and registered when first looked up: discovery from its cache registers
        a distribution's hundreds of creators this way, and an engine file makes the few it
        names. ``op``: the (domain, op_type) the creator will have, where known: a look-up
        of candidates for an operator then makes only the creators declared for it (and the
        undeclared ones), not all (a fresh process's build, issue 30). A key already taken
        raises :class:`DuplicateCreatorError`, as :meth:`register_creator` does."""
        with self._lock:
            if key in self._pending:
                self._make_pending(key)
            old = self._by_key.get(key)
            if old is not None:
                who = (f"{distribution} {distribution_version}" if distribution
                       and distribution_version else distribution or "<registered in process>")
                raise DuplicateCreatorError(
                    f"plugin {key[0]!r} version {key[1]!r} namespace {key[2]!r} from {who} is "
                    f"already registered by {_who(old)}; uninstall one of them or give the "
                    "plugin its own namespace", old)
            self._pending[key] = (make, distribution, distribution_version)
            self._pending_by_op.setdefault(op, []).append(key)

    def _make_pending(self, key: tuple[str, str, str] | None = None) -> None:
        """Make and register the deferred creator ``key`` (None: every one)."""
        with self._lock:
            if key is None:
                keys = list(self._pending)
                self._pending_by_op.clear()
            else:
                keys = [key]
            for k in keys:
                entry = self._pending.pop(k, None)
                if entry is None:
                    continue
                make, distribution, version = entry
                creator = make()
                validate_creator(creator, distribution)
                self._by_key[k] = CreatorRecord(creator, distribution, version)
                self._by_op = None

    def _make_pending_of(self, op: tuple[str, str]) -> None:
        """Make the deferred creators declared for ``op`` and those that declared none."""
        with self._lock:
            keys = [*self._pending_by_op.pop(op, ()), *self._pending_by_op.pop(None, ())]
        for k in keys:
            if k in self._pending:  # not made since (by identity)
                self._make_pending(k)

    def deregister_creator(self, creator: IPluginCreator) -> bool:
        self._make_pending()
        with self._lock:
            for key, rec in list(self._by_key.items()):
                if rec.creator is creator:
                    del self._by_key[key]
                    self._by_op = None
                    return True
        return False

    def register_device(self, device: Device, *, distribution: str | None = None) -> None:
        from ..plugin import Device

        if not isinstance(device, Device) or not device.name:
            raise PluginLoadError(
                f"{device!r} from {distribution or 'in-process'} is not a named Device")
        with self._lock:
            old = self._devices.get(device.name)
            if old is not None and old.device is not device:
                raise PluginLoadError(
                    f"device {device.name!r} from {distribution} is already provided by "
                    f"{old.distribution}")
            self._devices[device.name] = DeviceRecord(device, distribution)
            self._deferred.pop(device.name, None)

    def defer_devices(self, names: Iterable[str], load: Callable[[], None]) -> None:
        """Devices known by name whose distribution registers them when ``load()`` is
        called, on the first look-up of one of them (discovery from its cache imports a
        distribution's hook module only when its device is asked for)."""
        with self._lock:
            for name in names:
                if name not in self._devices:
                    self._deferred[name] = load

    def _resolve(self, names: Iterable[str]) -> None:
        for name in names:
            with self._lock:
                load = self._deferred.pop(name, None)
                if load is not None:
                    for other in [k for k, v in self._deferred.items() if v is load]:
                        del self._deferred[other]
                    load()

    # -- look-ups -------------------------------------------------------------------------
    def get_creator(self, name: str, version: str, namespace: str) -> CreatorRecord | None:
        """TensorRT's getPluginCreator: by (name, version, namespace)."""
        key = (name, version, namespace)
        if key in self._pending:
            self._make_pending(key)
        return self._by_key.get(key)

    @property
    def creators(self) -> list[CreatorRecord]:
        self._make_pending()
        return sorted(self._by_key.values(),
                      key=lambda r: (r.creator.domain, r.creator.op_type, _tie_key(r)))

    def candidates(self, domain: str, op_type: str, device: str,
                   opset: int | None = None) -> list[CreatorRecord]:
        """Creators for an operator on a device, best first."""
        found = [r for r in self._of_op(domain, op_type) if device in r.creator.devices
                 and (opset is None or r.creator.supports_opset(opset))]
        return sorted(found, key=_tie_key)

    def providers_of(self, domain: str, op_type: str) -> list[CreatorRecord]:
        return sorted(self._of_op(domain, op_type), key=_tie_key)

    def _of_op(self, domain: str, op_type: str) -> list[CreatorRecord]:
        """The records of an operator, through the index by (domain, op_type)."""
        domain = "" if domain == "ai.onnx" else domain
        if self._pending:
            self._make_pending_of((domain, op_type))
        index = self._by_op
        if index is None:
            with self._lock:
                index = {}
                for r in self._by_key.values():
                    index.setdefault((r.creator.domain, r.creator.op_type), []).append(r)
                self._by_op = index
        return index.get((domain, op_type), [])

    def conflicts(self) -> list[Conflict]:
        self._make_pending()
        groups: dict[tuple[str, str, str], list[CreatorRecord]] = {}
        for r in self._by_key.values():
            for dev in r.creator.devices:
                groups.setdefault((r.creator.domain, r.creator.op_type, dev), []).append(r)
        out = []
        for (domain, op, dev), recs in sorted(groups.items()):
            recs.sort(key=_tie_key)
            # creators for disjoint opset ranges (Softmax-1 and Softmax-13) do not compete
            for k, rec in enumerate(recs):
                rivals = tuple(o for o in recs[k + 1:] if _overlap(rec, o))
                if rivals and not any(_overlap(rec, w) for w in recs[:k]):
                    out.append(Conflict(domain, op, dev, rec, rivals))
        return out

    @property
    def devices(self) -> list[DeviceRecord]:
        self._resolve(list(self._deferred))
        return [self._devices[k] for k in sorted(self._devices)]

    def get_device(self, name: str) -> Device | None:
        if name in self._deferred:
            self._resolve([name])
        rec = self._devices.get(name)
        return rec.device if rec else None

    def device_names(self) -> list[str]:
        return sorted({*self._devices, *self._deferred})

    def add_distribution(self, rec: DistributionRecord) -> None:
        with self._lock:
            self.distributions.append(rec)

    def distribution(self, name: str) -> DistributionRecord | None:
        for d in self.distributions:
            if d.name == name:
                return d
        return None

    def extend(self, creators: Iterable[IPluginCreator]) -> None:
        for c in creators:
            self.register_creator(c)
