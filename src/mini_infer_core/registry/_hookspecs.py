"""pluggy hook specifications a plugin distribution implements.

A distribution declares one entry point in the ``mini_infer.plugins`` group naming a module;
that module implements any of these hooks with ``@mini_infer_core.registry.hookimpl``.

The markers are pluggy's (the attributes ``mini_infer_impl`` and ``mini_infer_spec``, with
pluggy's options, that its ``HookimplMarker`` and ``HookspecMarker`` set), made here without
importing pluggy: a start from the discovery cache imports a distribution's hook module for
its devices and calls the hooks itself (``_discovery``), so that opening an engine file never
imports pluggy (issue 30). pluggy reads these markers wherever it registers a module.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, overload

from .._version import __version__

_F = TypeVar("_F", bound=Callable[..., Any])

__all__ = ["PROJECT", "PLUGIN_API_VERSION", "hookspec", "hookimpl", "PluginPackage",
           "PluginSpecs", "core_requirement"]

PROJECT = "mini_infer"
#: the plugin API version this core publishes; distributions say which one they target
PLUGIN_API_VERSION = "1"


def core_requirement(version: str = __version__) -> str:
    """What a plugin distribution puts in its dependencies: the mini-infer-core releases
    that speak the plugin API of ``version``. The plugin API changes only with the minor
    version before 1.0 (0.1.x all speak API 1) and with the major version from 1.0 on, so a
    compatible-release range: ``mini-infer-core>=0.1.0,<0.2``."""
    found = re.match(r"(\d+)(?:\.(\d+))?", version)
    major, minor = (int(found[1]), int(found[2] or 0)) if found else (0, 0)
    upper = f"{major}.{minor + 1}" if major == 0 else f"{major + 1}"
    return f"mini-infer-core>={version},<{upper}"


class HookimplMarker:
    """pluggy's ``HookimplMarker(project)`` without pluggy: ``@hookimpl`` or
    ``@hookimpl(tryfirst=True, ...)`` sets the options pluggy reads on the function."""

    def __init__(self, project_name: str) -> None:
        self.project_name = project_name

    @overload
    def __call__(self, function: _F) -> _F: ...

    @overload
    def __call__(self, function: None = None, *, hookwrapper: bool = False,
                 optionalhook: bool = False, tryfirst: bool = False, trylast: bool = False,
                 specname: str | None = None, wrapper: bool = False
                 ) -> Callable[[_F], _F]: ...

    def __call__(self, function: _F | None = None, *, hookwrapper: bool = False,
                 optionalhook: bool = False, tryfirst: bool = False, trylast: bool = False,
                 specname: str | None = None, wrapper: bool = False) -> Any:
        opts = {"wrapper": wrapper, "hookwrapper": hookwrapper, "optionalhook": optionalhook,
                "tryfirst": tryfirst, "trylast": trylast, "specname": specname}

        def mark(func: _F) -> _F:
            setattr(func, f"{self.project_name}_impl", dict(opts))
            return func

        return mark if function is None else mark(function)


class HookspecMarker:
    """pluggy's ``HookspecMarker(project)`` without pluggy."""

    def __init__(self, project_name: str) -> None:
        self.project_name = project_name

    @overload
    def __call__(self, function: _F) -> _F: ...

    @overload
    def __call__(self, function: None = None, *, firstresult: bool = False,
                 historic: bool = False, warn_on_impl: Warning | None = None,
                 warn_on_impl_args: dict[str, Warning] | None = None
                 ) -> Callable[[_F], _F]: ...

    def __call__(self, function: _F | None = None, *, firstresult: bool = False,
                 historic: bool = False, warn_on_impl: Warning | None = None,
                 warn_on_impl_args: dict[str, Warning] | None = None) -> Any:
        if historic and firstresult:
            raise ValueError("cannot have a historic firstresult hook")
        opts = {"firstresult": firstresult, "historic": historic,
                "warn_on_impl": warn_on_impl, "warn_on_impl_args": warn_on_impl_args}

        def mark(func: _F) -> _F:
            setattr(func, f"{self.project_name}_spec", dict(opts))
            return func

        return mark if function is None else mark(function)


hookspec = HookspecMarker(PROJECT)
hookimpl = HookimplMarker(PROJECT)


def plain_hooks(plugin: object) -> dict[str, Callable[..., Any]] | None:
    """``plugin``'s hook implementations by hook name where each is a plain one (no
    wrapper, no other ``specname``) of a known hook and nothing else is marked, as
    registering it with pluggy would call them; else None (pluggy must)."""
    found: dict[str, Callable[..., Any]] = {}
    for name in dir(plugin):
        try:
            func = getattr(plugin, name)
        except Exception:  # noqa: BLE001 - pluggy skips what it cannot read too
            return None
        opts = getattr(func, f"{PROJECT}_impl", None) if callable(func) else None
        if opts is None:
            if name.startswith(f"{PROJECT}_") and callable(func):
                return None  # an unmarked hook-like name: pluggy's checks decide
            continue
        if (not isinstance(opts, dict) or opts.get("wrapper") or opts.get("hookwrapper")
                or opts.get("specname") not in (None, name) or not hasattr(PluginSpecs, name)):
            return None
        found[name] = func
    return found


class PluginSpecs:
    @hookspec(firstresult=True)
    def mini_infer_plugin_api_version(self) -> str:  # type: ignore[empty-body]
        """The plugin API version this distribution targets (e.g. "1")."""

    @hookspec
    def mini_infer_creators(self) -> list[Any]:  # type: ignore[empty-body]
        """The IPluginCreator instances this distribution provides.

        Keep it cheap: import heavy dependencies (CuPy, ...) inside plugins, not here.
        """

    @hookspec
    def mini_infer_devices(self) -> list[Any]:  # type: ignore[empty-body]
        """The Device instances this distribution provides. Availability is asked later."""


class PluginPackage:
    """The hook implementations most distributions need, made from two functions: the entry
    point may name an instance (``"my_package.hooks:plugin"``) instead of a module of hook
    functions. ``creators`` and ``devices`` are called when mini-infer loads the
    distribution (keep them cheap: lazy creators, no CuPy)."""

    def __init__(self, creators: Callable[[], Sequence[Any]],
                 devices: Callable[[], Sequence[Any]] | None = None,
                 api_version: str = PLUGIN_API_VERSION) -> None:
        self._creators, self._devices, self._api_version = creators, devices, api_version

    @hookimpl
    def mini_infer_plugin_api_version(self) -> str:
        return self._api_version

    @hookimpl
    def mini_infer_creators(self) -> list[Any]:
        return list(self._creators())

    @hookimpl
    def mini_infer_devices(self) -> list[Any]:
        return [] if self._devices is None else list(self._devices())
