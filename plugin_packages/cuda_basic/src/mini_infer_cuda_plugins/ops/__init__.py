"""Every mini-infer-cuda-plugins operator kernel, one small module per family.

Importing this package imports the kernel modules, but not CuPy: CuPy is imported by a kernel
the first time it receives a CuPy array.
"""

from __future__ import annotations

from mini_infer_core.plugin import IPluginCreator

from .. import NAMESPACE
from ..serialization import CudaCreator, CudaPlugin

__all__ = ["DEVICES", "catalog_entries", "creators", "plugin_classes"]

#: the devices every creator of this package serves
DEVICES = ("cuda",)


def plugin_classes() -> list[type[CudaPlugin]]:
    """Every class listed in ``__all__`` of every public module of this package."""
    import importlib
    import pkgutil

    classes: list[type[CudaPlugin]] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        classes.extend(getattr(mod, name) for name in mod.__all__)
    return classes


def creators() -> list[IPluginCreator]:
    return [CudaCreator(cls, namespace=NAMESPACE, devices=DEVICES) for cls in plugin_classes()]


def catalog_entries() -> list[dict[str, object]]:
    """What ``catalog.py`` must hold, computed from the classes (regenerate with
    ``python -m mini_infer_cuda_plugins.catalog --write``)."""
    from mini_infer_core.plugin.catalog import catalog_entries as entries

    return entries(plugin_classes())
