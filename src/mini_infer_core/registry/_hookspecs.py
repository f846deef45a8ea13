"""pluggy hook specifications a plugin distribution implements.

A distribution declares one entry point in the ``mini_infer.plugins`` group naming a module;
that module implements any of these hooks with ``@mini_infer_core.registry.hookimpl``.
"""

from __future__ import annotations

from typing import Any

import pluggy

__all__ = ["PROJECT", "PLUGIN_API_VERSION", "hookspec", "hookimpl", "PluginSpecs"]

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
