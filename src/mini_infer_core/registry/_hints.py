"""What to tell a user whose plugin distribution is missing: ``pip install`` only where it is
not installed; an installed one that is blocked, disabled, failed or incompatible is named
with what to do about that instead."""

from __future__ import annotations

from ._hookspecs import PLUGIN_API_VERSION
from ._records import DistributionRecord
from ._registry import PluginRegistry

__all__ = ["install_hint", "not_loaded_note"]


def _normalize(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _record(registry: PluginRegistry, name: str) -> DistributionRecord | None:
    for d in registry.distributions:
        if _normalize(d.name) == _normalize(name):
            return d
    return None


def _why(d: DistributionRecord) -> str:
    """Why an installed distribution serves nothing, and what to do."""
    if d.status == "blocked":
        return (f"{d.name} {d.version} is installed but blocked (-p no:{d.name} or "
                f"MINI_INFER_BLOCK_PLUGINS): unblock it")
    if d.status == "disabled":
        return (f"{d.name} {d.version} is installed but not loaded, plugin autoload is off "
                f"(MINI_INFER_DISABLE_PLUGIN_AUTOLOAD): load it with -p {d.name} or "
                f"MINI_INFER_PLUGINS={d.name}")
    if d.status == "incompatible":
        return (f"{d.name} {d.version} is installed but incompatible with this mini-infer-core "
                f"(plugin API {PLUGIN_API_VERSION}): {d.error}; install a {d.name} made for "
                f"plugin API {PLUGIN_API_VERSION}, or the mini-infer-core it was made for")
    if d.status == "failed":
        return (f"{d.name} {d.version} is installed but failed to load: {d.error}; fix that, "
                f"or reinstall it (pip install --force-reinstall {d.name}=={d.version})")
    return f"{d.name} {d.version} is installed ({d.status})"


def install_hint(registry: PluginRegistry, distribution: str, version: str | None) -> str:
    """What to do to get ``distribution`` (at ``version``, where known) serving."""
    pin = f"{distribution}=={version}" if version else distribution
    d = _record(registry, distribution)
    if d is None:
        return f"install it: pip install {pin}"
    if d.status != "loaded":
        return _why(d)
    if version and d.version != version:
        return (f"{d.name} {d.version} is installed, the engine was built with {version}: "
                f"pip install {pin}")
    return f"{d.name} {d.version} is loaded but lacks it: pip install --force-reinstall {pin}"


def not_loaded_note(registry: PluginRegistry) -> str | None:
    """The installed distributions that serve nothing, and why (None: every one loaded)."""
    idle = [d for d in registry.distributions if d.status != "loaded"]
    if not idle:
        return None
    return "; ".join(_why(d) for d in idle)
