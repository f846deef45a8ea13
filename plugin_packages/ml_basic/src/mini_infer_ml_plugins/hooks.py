"""Entry point of ``mini_infer.plugins`` (``mini_infer_ml_plugins.hooks:plugin``): hands
mini-infer this package's lazy creators. The ``cpu`` device they run on comes from
mini-infer-cpu-plugins."""

from __future__ import annotations

from mini_infer_core.registry import PluginPackage

from .catalog import lazy_creators

__all__ = ["plugin"]

plugin = PluginPackage(creators=lazy_creators)
