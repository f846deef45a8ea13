"""Discovery of plugin distributions through the ``mini_infer.plugins`` entry-point group.

The entry points come from ``importlib.metadata``, each is loaded by pluggy
(``PluginManager.load_setuptools_entrypoints``) and validated by it (``register``,
``check_pending``). Each distribution is loaded in isolation: an import error, an invalid hook
or a failing hook marks that distribution ``failed`` (with the exception's summary) and the
others still load. What was found is kept in the discovery cache (``.._distributions``):
``get_plugin_registry`` and the CLI start from it while the installed distributions are the
same, importing no hook module until a device is asked for, and no kernel module until its
creator is used; :func:`discover` called alone reads the installed distributions afresh.

Environment switches (pytest-style):

- ``MINI_INFER_DISABLE_PLUGIN_AUTOLOAD=1``: load nothing automatically;
- ``MINI_INFER_BLOCK_PLUGINS=a,b``: never import these (entry-point or distribution names);
- ``MINI_INFER_STRICT_PLUGINS=1``: any failure raises :class:`PluginLoadError`.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import threading
import warnings
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .._distributions import EntryPoint, entry_points, read_cache, versions_again, write_cache
from ..errors import PluginLoadError
from . import _cached
from ._hookspecs import PLUGIN_API_VERSION, PROJECT, PluginSpecs, plain_hooks
from ._records import DistributionRecord
from ._registry import DuplicateCreatorError, PluginRegistry

if TYPE_CHECKING:  # imported where a distribution is loaded afresh, not from the cache
    import pluggy

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
    import pluggy

    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(PluginSpecs)
    return pm


def load_plugin_module(registry: PluginRegistry, module: ModuleType | object, *,
                       distribution: str | None, version: str | None,
                       pm: pluggy.PluginManager | None = None,
                       record: DistributionRecord | None = None,
                       creators: bool = True, keep: bool = False,
                       found: dict[str, list[Any]] | None = None
                       ) -> tuple[list[str], list[str]]:
    """Validate and call one distribution's hook module; register what it provides.

    Returns (creator names, device names). Raises on any problem; the caller isolates. A
    creator whose (name, version, namespace) is already registered is rejected alone, as
    TensorRT's registry does: a :class:`DuplicatePluginWarning` names both distributions, and
    ``record.rejected`` keeps the reason. ``creators=False`` registers the devices only;
    ``keep`` leaves the module registered with ``pm`` (unless it fails); ``found`` receives
    the creator and device objects the hooks returned.
    """
    pm = pm or _new_manager()
    name = distribution or getattr(module, "__name__", repr(module))
    if not pm.is_registered(module):
        pm.register(module, name=name)  # validates arguments against the specs
    ok = False
    try:
        pm.check_pending()  # a marked hook the specifications do not know
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
        made = [c for res in call("mini_infer_creators") for c in (res or [])] \
            if creators else []
        devices = [d for res in call("mini_infer_devices") for d in (res or [])]
        if found is not None:
            found.update(creators=made, devices=devices)
        names = register_all(registry, made, distribution=distribution, version=version,
                             record=record)
        for d in devices:
            registry.register_device(d, distribution=distribution)
        ok = True
        return names, [d.name for d in devices]
    finally:
        if not (keep and ok) and pm.is_registered(module):
            pm.unregister(module)


def register_all(registry: PluginRegistry, creators: list[Any], *, distribution: str | None,
                 version: str | None, record: DistributionRecord | None) -> list[str]:
    """Register a distribution's creators; one whose identity is taken is rejected alone."""
    name = distribution or "<in process>"
    names: list[str] = []
    for c in creators:
        try:
            registry.register_creator(c, distribution=distribution,
                                      distribution_version=version)
        except DuplicateCreatorError as exc:
            reason = f"{exc}; {name}'s other plugins are loaded"
            warnings.warn(reason, DuplicatePluginWarning, stacklevel=3)
            if record is not None:
                record.rejected.append(str(exc))
            continue
        names.append(f"{c.plugin_namespace}::{c.name}")
    return names


class _Incompatible(Exception):
    pass


def _entry_points(eps: list[EntryPoint]) -> list[tuple[EntryPoint, str, str]]:
    """The group's entry points with their distribution's name and version, in the order of
    the distributions' names."""
    found = [(ep, ep.dist_name or ep.module, ep.dist_version or "unknown") for ep in eps]
    return sorted(found, key=lambda e: (_normalize(e[1]) if e[0].dist_name else e[1],
                                        e[0].name))


def _package_folder(module: str) -> str | None:
    """The folder of the top-level package of ``module`` (imported): what the discovery
    cache watches for changes."""
    top = sys.modules.get(module.partition(".")[0])
    paths = [str(p) for p in getattr(top, "__path__", []) or []]
    if paths:
        return os.path.realpath(paths[0])
    file = getattr(top, "__file__", None)
    return os.path.realpath(str(file)) if file else None


def discover(registry: PluginRegistry | None = None, *, autoload: bool | None = None,
             block: Iterable[str] = (), load: Iterable[str] = (),
             strict: bool | None = None, cache: bool = False) -> PluginRegistry:
    """Fill ``registry`` from installed distributions.

    ``load`` names distributions (or entry points) to load even when autoload is off, as
    ``MINI_INFER_PLUGINS=a,b`` and the CLI's ``-p NAME`` do (pytest's ``-p``/``PYTEST_PLUGINS``).
    ``cache``: start from the discovery cache where it is valid (and write it where not):
    what :func:`get_plugin_registry` and the CLI do; without it the installed distributions
    are read afresh, and every hook runs.
    """
    registry = registry or PluginRegistry()
    strict = _flag("MINI_INFER_STRICT_PLUGINS") if strict is None else strict
    if autoload is None:
        autoload = not _flag("MINI_INFER_DISABLE_PLUGIN_AUTOLOAD")
    blocked = _blocked(block)
    env_load = [n for n in os.environ.get("MINI_INFER_PLUGINS", "").split(",") if n.strip()]
    wanted = {_normalize(n.strip()) for n in [*load, *env_load]}
    cached = read_cache() if cache else None
    if cached is not None:
        eps = [EntryPoint(*e) for e in cached["entry_points"]]
    else:
        eps = entry_points(ENTRY_POINT_GROUP)
    answers: dict[str, Any] = {} if cached is None else cached["hooks"]
    learned: dict[str, Any] = {}
    watch = [p for p in [_package_folder(__name__)] if p]
    seen: set[str] = set()
    names = [ep.name for ep in eps]
    managers: list[pluggy.PluginManager] = []

    def manager() -> pluggy.PluginManager:
        """The one plugin manager of this discovery, made when first needed (a start from
        the cache needs none, so it imports no pluggy)."""
        if not managers:
            managers.append(_new_manager())
        return managers[0]

    for ep, dname, dversion in _entry_points(eps):
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
        answer = answers.get(dname)
        if answer is not None and answer["value"] == ep.value:
            _replay(registry, rec, ep, answer, manager, strict)
            continue
        pm = manager()
        try:
            found: dict[str, list[Any]] = {}
            module = _load(pm, ep, cached is None and names.count(ep.name) == 1)
            rec.creators, rec.devices = load_plugin_module(
                registry, module, distribution=dname, version=dversion, pm=pm, record=rec,
                keep=True, found=found)
            rec.status = "loaded"
            described = _cached.describe(found["creators"])
            folder = _package_folder(ep.module)
            if described is not None and folder is not None:
                learned[dname] = {"value": ep.value, "creators": described,
                                  "devices": rec.devices}
                watch.append(folder)
        except _Incompatible as exc:
            rec.status, rec.error = "incompatible", str(exc)
            if pm.get_plugin(ep.name) is not None:
                pm.unregister(name=ep.name)
        except Exception as exc:  # noqa: BLE001 - isolate each distribution
            rec.status, rec.error = "failed", _summary(exc)
            if pm.get_plugin(ep.name) is not None:  # registered in part by pluggy
                pm.unregister(name=ep.name)
            if strict:
                raise PluginLoadError(
                    f"plugin distribution {dname} {dversion} failed to load: {rec.error} "
                    "(MINI_INFER_STRICT_PLUGINS is set; unset it to skip broken plugins, or "
                    f"`pip uninstall {dname}`)") from exc
    if cache and cached is None and autoload and not blocked:
        write_cache({"entry_points": [ep.to_json() for ep in eps], "hooks": learned,
                     "versions": versions_again()}, watch)
    return registry


def _load(pm: pluggy.PluginManager, ep: EntryPoint, by_pluggy: bool) -> Any:
    """Import the entry point's object and register it with ``pm``: through pluggy's
    entry-point loading, or (the distributions being those the cache was made from, or the
    entry point's name being another distribution's too: pluggy loads by name) by importing
    it, as that does, without importlib.metadata."""
    if by_pluggy and pm.get_plugin(ep.name) is None:
        if pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP, name=ep.name):
            return pm.get_plugin(ep.name)
    return ep.load()


def _replay(registry: PluginRegistry, rec: DistributionRecord, ep: EntryPoint,
            answer: dict[str, Any], manager: Callable[[], pluggy.PluginManager],
            strict: bool) -> None:
    """A distribution loaded from the cache's record of its hooks' answers: its creators
    (lazy) now, its devices by name, its hooks run when one of them is first asked for:
    called here where they are plain functions (:func:`._hookspecs.plain_hooks`; pluggy
    checked them when the cache was written, and the cache is valid only while their files
    are those), else through pluggy."""
    rec.creators = _defer_all(registry, answer["creators"], rec)
    rec.devices = list(answer["devices"])
    rec.status = "loaded"

    def devices() -> None:
        try:
            plugin = ep.load()
            hooks = plain_hooks(plugin)
            if hooks is None:
                load_plugin_module(registry, plugin, distribution=rec.name,
                                   version=rec.version, pm=manager(), creators=False)
            else:
                _call_devices(registry, rec.name, hooks)
        except Exception as exc:  # noqa: BLE001 - isolate each distribution
            rec.status, rec.error = "failed", _summary(exc)
            if strict:
                raise PluginLoadError(f"plugin distribution {rec.name} {rec.version} failed "
                                      f"to load: {rec.error}") from exc
            warnings.warn(f"plugin distribution {rec.name} {rec.version} failed to load its "
                          f"devices: {rec.error}", RuntimeWarning, stacklevel=4)

    if rec.devices:
        registry.defer_devices(rec.devices, devices)


def _defer_all(registry: PluginRegistry, entries: list[dict[str, Any]],
               record: DistributionRecord) -> list[str]:
    """A distribution's creators from the cache, each made when first looked up
    (:meth:`PluginRegistry.defer_creator`); a taken identity is rejected alone, as
    :func:`register_all` does."""
    names: list[str] = []
    for entry in entries:
        key = (entry["name"], entry["version"], entry["namespace"])
        try:
            registry.defer_creator(key, functools.partial(_cached.lazy_one, entry),
                                   distribution=record.name,
                                   distribution_version=record.version,
                                   op=(entry["domain"], entry["op_type"]))
        except DuplicateCreatorError as exc:
            reason = f"{exc}; {record.name}'s other plugins are loaded"
            warnings.warn(reason, DuplicatePluginWarning, stacklevel=4)
            record.rejected.append(str(exc))
            continue
        names.append(f"{key[2]}::{key[0]}")
    return names


def _call_devices(registry: PluginRegistry, distribution: str,
                  hooks: dict[str, Callable[..., Any]]) -> None:
    """Register the devices of a distribution whose hooks are plain functions, calling them
    as pluggy would (its API version checked again)."""
    version = hooks.get("mini_infer_plugin_api_version")
    target = str(version()) if version is not None else PLUGIN_API_VERSION
    if target != PLUGIN_API_VERSION:
        raise _Incompatible(
            f"targets plugin API {target}, this mini-infer-core provides {PLUGIN_API_VERSION}")
    make = hooks.get("mini_infer_devices")
    for d in (make() or []) if make is not None else []:
        registry.register_device(d, distribution=distribution)


def get_plugin_registry() -> PluginRegistry:
    """The process-wide registry (TensorRT's getPluginRegistry), discovered on first use."""
    global _default
    with _lock:
        if _default is None:
            _default = discover(cache=True)
        return _default


def reset_plugin_registry(registry: PluginRegistry | None = None) -> None:
    """Replace the process-wide registry (None: rediscover on next use)."""
    global _default
    with _lock:
        _default = registry
