"""All cpu_basic operator kernels, one small module per family."""

from __future__ import annotations

from mini_infer_core.plugin import IPluginCreator

from .. import NAMESPACE
from ..serialization import CpuCreator, CpuPlugin

__all__ = ["catalog_entries", "creators", "plugin_classes"]


def plugin_classes() -> list[type[CpuPlugin]]:
    """Every class listed in ``__all__`` of every public module of this package."""
    import importlib
    import pkgutil

    classes: list[type[CpuPlugin]] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        classes.extend(getattr(mod, name) for name in mod.__all__)
    return classes


def creators() -> list[IPluginCreator]:
    return [CpuCreator(cls, namespace=NAMESPACE, devices=("cpu",)) for cls in plugin_classes()]


def catalog_entries() -> list[dict[str, object]]:
    """What ``catalog.py`` must hold, computed from the classes (regenerate with
    ``python -m mini_infer_cpu_plugins.catalog --write``)."""
    from mini_infer_core.plugin.catalog import catalog_entries as entries

    return entries(plugin_classes())
