"""A distribution's hook answers as data, for the discovery cache (``.._distributions``).

What a loaded distribution's ``mini_infer_creators`` hook returned is kept where every creator
is a :class:`~mini_infer_core.plugin.LazyPluginCreator` whose creator class is importable by
name: its metadata, the kernel's target and the class. A start whose cache is valid makes
the same lazy creators from that data, so that neither the distribution's hook module nor its
catalog is imported; a kernel module is imported when its creator is first used (an engine
names it, a model needs it). Devices are named only: the distribution's hooks run when one of
them is first asked for (:meth:`PluginRegistry.defer_devices`).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

__all__ = ["ByName", "describe", "lazy_from", "lazy_one"]


class ByName:
    """A creator class named ``module:qualname``, imported when first called."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        module, _, qualname = self.path.partition(":")
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        return obj(*args, **kwargs)


def _class_path(cls: Any) -> str | None:
    if isinstance(cls, ByName):
        return cls.path
    qualname = getattr(cls, "__qualname__", "")
    if not isinstance(cls, type) or "<" in qualname:
        return None
    return f"{cls.__module__}:{qualname}"


def describe(creators: Sequence[Any]) -> list[dict[str, Any]] | None:
    """The creators as data, or None where one of them cannot be made again from data."""
    from ..plugin import LazyPluginCreator

    out: list[dict[str, Any]] = []
    for c in creators:
        if type(c) is not LazyPluginCreator or c.loaded:
            return None
        creator_class = _class_path(c._creator_class)
        if creator_class is None:
            return None
        out.append({"target": c.target, "name": c.name, "op_type": c.op_type,
                    "domain": c.domain, "version": c.plugin_version,
                    "namespace": c.plugin_namespace, "devices": list(c.devices),
                    "priority": c.priority, "min_opset": c.min_opset,
                    "max_opset": c.max_opset, "fields": list(c._field_names),
                    "creator_class": creator_class})
    return out


def lazy_one(e: dict[str, Any]) -> Any:
    """The lazy creator entry ``e`` (made by :func:`describe`) describes."""
    from ..plugin import LazyPluginCreator

    return LazyPluginCreator(e["target"], name=e["name"], op_type=e["op_type"],
                             domain=e["domain"], plugin_version=e["version"],
                             namespace=e["namespace"], devices=tuple(e["devices"]),
                             priority=e["priority"], min_opset=e["min_opset"],
                             max_opset=e["max_opset"], field_names=tuple(e["fields"]),
                             creator_class=ByName(e["creator_class"]))


def lazy_from(entries: Sequence[dict[str, Any]]) -> list[Any]:
    """The lazy creators ``entries`` (made by :func:`describe`) describe."""
    return [lazy_one(e) for e in entries]
