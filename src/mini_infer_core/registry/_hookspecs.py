"""pluggy hook specifications a plugin distribution implements.

A distribution declares one entry point in the ``mini_infer.plugins`` group naming a module;
that module implements any of these hooks with ``@mini_infer_core.registry.hookimpl``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import pluggy

from .._version import __version__

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


hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


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
