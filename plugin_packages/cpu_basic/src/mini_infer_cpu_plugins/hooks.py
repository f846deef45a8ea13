"""Entry point of ``mini_infer.plugins`` (``mini_infer_cpu_plugins.hooks:plugin``): hands
mini-infer this package's lazy creators and the ``cpu`` device."""

from __future__ import annotations

from typing import Any

from mini_infer_core.registry import PluginPackage

from .device import CpuDevice

__all__ = ["plugin"]


def _creators() -> list[Any]:
    # imported when the creators are asked for: a start from the discovery cache runs this
    # module's hooks for the cpu device only, and the catalog is not needed (issue 30)
    from .catalog import lazy_creators

    return lazy_creators()


plugin = PluginPackage(creators=_creators, devices=lambda: [CpuDevice()])
