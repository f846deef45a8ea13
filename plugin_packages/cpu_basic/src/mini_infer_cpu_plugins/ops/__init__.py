"""All cpu_basic operator kernels, one small module per family."""

from __future__ import annotations

from mini_infer_core.plugin import IPluginCreator

from .. import NAMESPACE
from ..serialization import CpuCreator, CpuPlugin

__all__ = ["creators", "plugin_classes"]


def plugin_classes() -> list[type[CpuPlugin]]:
    from . import (
        activation,
        conv,
        elementwise,
        gemm,
        generator,
        normalization,
        pool,
        shape,
    )

    modules = [elementwise, activation, conv, pool, normalization, gemm, shape, generator]
    classes: list[type[CpuPlugin]] = []
    for mod in modules:
        classes.extend(getattr(mod, name) for name in mod.__all__)
    return classes


def creators() -> list[IPluginCreator]:
    return [CpuCreator(cls, namespace=NAMESPACE, devices=("cpu",)) for cls in plugin_classes()]
