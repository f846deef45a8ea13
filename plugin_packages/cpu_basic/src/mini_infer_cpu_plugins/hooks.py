"""Entry point of ``mini_infer.plugins`` (``mini_infer_cpu_plugins.hooks:plugin``): hands
mini-infer this package's lazy creators and the ``cpu`` device."""

from __future__ import annotations

from mini_infer_core.registry import PluginPackage

from .catalog import lazy_creators
from .device import CpuDevice

__all__ = ["plugin"]

plugin = PluginPackage(creators=lazy_creators, devices=lambda: [CpuDevice()])
