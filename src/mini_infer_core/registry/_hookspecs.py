"""pluggy hook specifications a plugin distribution implements.

A distribution declares one entry point in the ``mini_infer.plugins`` group naming a module;
that module implements any of these hooks with ``@mini_infer_core.registry.hookimpl``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pluggy

__all__ = ["PROJECT", "PLUGIN_API_VERSION", "hookspec", "hookimpl", "PluginPackage",
           "PluginSpecs"]

PROJECT = "mini_infer"
#: the plugin API version this core publishes; distributions say which one they target
PLUGIN_API_VERSION = "1"

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
