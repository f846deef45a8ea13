"""The creators the entry point hands over (made from the core schemas without importing a
kernel) describe every kernel class exactly, and pass the plugin kit."""

from __future__ import annotations

from types import ModuleType

from mini_infer_cpu_plugins.catalog import lazy_creators
from mini_infer_cpu_plugins.ops import plugin_classes


def test_the_lazy_creators_are_the_kernel_classes(plugin_kit: ModuleType) -> None:
    creators = lazy_creators()
    assert len(creators) > 150
    plugin_kit.check_kernel_catalog(creators, plugin_classes())
