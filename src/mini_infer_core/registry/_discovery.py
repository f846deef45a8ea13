"""Discovery of plugin distributions through the ``mini_infer.plugins`` entry-point group.

Each distribution is loaded in isolation: an import error, an invalid hook or a failing hook
marks that distribution ``failed`` (with the exception's summary) and the others still load.

Environment switches (pytest-style):

- ``MINI_INFER_DISABLE_PLUGIN_AUTOLOAD=1``: load nothing automatically;
- ``MINI_INFER_BLOCK_PLUGINS=a,b``: never import these (entry-point or distribution names);
- ``MINI_INFER_STRICT_PLUGINS=1``: any failure raises :class:`PluginLoadError`.
"""

from __future__ import annotations

import os
import re
import threading
import warnings
from collections.abc import Iterable
from types import ModuleType
from typing import Any

import pluggy

from .._distributions import EntryPoint, entry_points
from ..errors import PluginLoadError
from ._hookspecs import PLUGIN_API_VERSION, PROJECT, PluginSpecs
from ._records import DistributionRecord
from ._registry import DuplicateCreatorError, PluginRegistry

__all__ = [
    "ENTRY_POINT_GROUP",
    "DuplicatePluginWarning",
    "discover",
    "get_plugin_registry",
    "reset_plugin_registry",
    "load_plugin_module",
]

ENTRY_POINT_GROUP = "mini_infer.plugins"

_lock = threading.Lock()
_default: PluginRegistry | None = None


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def _blocked(extra: Iterable[str] = ()) -> set[str]:
    names = [n for n in os.environ.get("MINI_INFER_BLOCK_PLUGINS", "").split(",") if n.strip()]
    return {_normalize(n.strip()) for n in [*names, *extra]}


def _summary(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]


class DuplicatePluginWarning(UserWarning):
    """A distribution's creator has an identity (name, version, namespace) another one
    registered first: that creator is ignored, the rest of the distribution loads."""


def _new_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(PluginSpecs)
    return pm


def load_plugin_module(registry: PluginRegistry, module: ModuleType | object, *,
                       distribution: str | None, version: str | None,
                       pm: pluggy.PluginManager | None = None,
                       record: DistributionRecord | None = None
                       ) -> tuple[list[str], list[str]]:
    """Validate and call one distribution's hook module; register what it provides.

    Returns (creator names, device names). Raises on any problem; the caller isolates. A
    creator whose (name, version, namespace) is already registered is rejected alone, as
    TensorRT's registry does: a :class:`DuplicatePluginWarning` names both distributions, and
    ``record.rejected`` keeps the reason.
    """
    pm = pm or _new_manager()
    name = distribution or getattr(module, "__name__", repr(module))
    pm.register(module, name=name)  # validates arguments against the specs
    try:
        unknown = [h for h in dir(module)
                   if h.startswith("mini_infer_") and callable(getattr(module, h))
                   and not hasattr(PluginSpecs, h)]
        if unknown:
            raise PluginLoadError(f"unknown hook(s) {unknown}; known: "
                                  f"{[h for h in dir(PluginSpecs) if h.startswith('mini_infer_')]}")

        def call(hook: str) -> Any:
            impls = [i for i in getattr(pm.hook, hook).get_hookimpls() if i.plugin is module]
            return [impl.function() for impl in impls]

        targets = call("mini_infer_plugin_api_version")
        target = str(targets[0]) if targets else PLUGIN_API_VERSION
        if target != PLUGIN_API_VERSION:
            raise _Incompatible(
                f"targets plugin API {target}, this mini-infer-core provides {PLUGIN_API_VERSION}")
        creators = [c for res in call("mini_infer_creators") for c in (res or [])]
        devices = [d for res in call("mini_infer_devices") for d in (res or [])]
        names: list[str] = []
        for c in creators:
            try:
                registry.register_creator(c, distribution=distribution,
                                          distribution_version=version)
            except DuplicateCreatorError as exc:
                reason = f"{exc}; {name}'s other plugins are loaded"
                warnings.warn(reason, DuplicatePluginWarning, stacklevel=2)
                if record is not None:
                    record.rejected.append(str(exc))
                continue
            names.append(f"{c.plugin_namespace}::{c.name}")
        for d in devices:
            registry.register_device(d, distribution=distribution)
        return names, [d.name for d in devices]
    finally:
        pm.unregister(module)


class _Incompatible(Exception):
    pass


def _entry_points() -> list[tuple[EntryPoint, str, str]]:
    """The group's entry points with their distribution's name and version, in the order of
    the distributions' names (read by :mod:`.._distributions`, without importlib_metadata)."""
    found = [(ep, ep.dist_name or ep.module, ep.dist_version or "unknown")
             for ep in entry_points(ENTRY_POINT_GROUP)]
    return sorted(found, key=lambda e: (_normalize(e[1]) if e[0].dist_name else e[1],
                                        e[0].name))


def discover(registry: PluginRegistry | None = None, *, autoload: bool | None = None,
             block: Iterable[str] = (), load: Iterable[str] = (),
             strict: bool | None = None) -> PluginRegistry:
    """Fill ``registry`` from installed distributions.

    ``load`` names distributions (or entry points) to load even when autoload is off, as
    ``MINI_INFER_PLUGINS=a,b`` and the CLI's ``-p NAME`` do (pytest's ``-p``/``PYTEST_PLUGINS``).
    """
    registry = registry or PluginRegistry()
    strict = _flag("MINI_INFER_STRICT_PLUGINS") if strict is None else strict
    if autoload is None:
        autoload = not _flag("MINI_INFER_DISABLE_PLUGIN_AUTOLOAD")
    blocked = _blocked(block)
    env_load = [n for n in os.environ.get("MINI_INFER_PLUGINS", "").split(",") if n.strip()]
    wanted = {_normalize(n.strip()) for n in [*load, *env_load]}
    seen: set[str] = set()
    pm = _new_manager()
    for ep, dname, dversion in _entry_points():
        ident = _normalize(dname)
        if ident in seen:  # the same distribution found twice on sys.path
            continue
        seen.add(ident)
        rec = DistributionRecord(dname, dversion, f"{ep.name} = {ep.value}")
        registry.add_distribution(rec)
        if ident in blocked or _normalize(ep.name) in blocked:
            rec.status = "blocked"
            continue
        if not autoload and ident not in wanted and _normalize(ep.name) not in wanted:
            rec.status = "disabled"
            continue
        try:
            module = ep.load()
            rec.creators, rec.devices = load_plugin_module(
                registry, module, distribution=dname, version=dversion, pm=pm, record=rec)
            rec.status = "loaded"
        except _Incompatible as exc:
            rec.status, rec.error = "incompatible", str(exc)
        except Exception as exc:  # noqa: BLE001 - isolate each distribution
            rec.status, rec.error = "failed", _summary(exc)
            if strict:
                raise PluginLoadError(
                    f"plugin distribution {dname} {dversion} failed to load: {rec.error} "
                    "(MINI_INFER_STRICT_PLUGINS is set; unset it to skip broken plugins, or "
                    f"`pip uninstall {dname}`)") from exc
    return registry


def get_plugin_registry() -> PluginRegistry:
    """The process-wide registry (TensorRT's getPluginRegistry), discovered on first use."""
    global _default
    with _lock:
        if _default is None:
            _default = discover()
        return _default


def reset_plugin_registry(registry: PluginRegistry | None = None) -> None:
    """Replace the process-wide registry (None: rediscover on next use)."""
    global _default
    with _lock:
        _default = registry
