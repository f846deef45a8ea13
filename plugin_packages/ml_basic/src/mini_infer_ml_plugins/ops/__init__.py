"""All ml_basic operator kernels, one small module per family (each the kernels of the core
schemas of :mod:`mini_infer_core.ops.ml` that it lists in ``__all__``)."""

from __future__ import annotations

from typing import Any

from mini_infer_core.ops import package_classes
from mini_infer_core.plugin import IPluginCreator

from .. import NAMESPACE
from ..serialization import MlCreator

__all__ = ["creators", "plugin_classes"]


def plugin_classes() -> list[Any]:
    """Every kernel class (imports every kernel module)."""
    return package_classes(__name__)


def creators() -> list[IPluginCreator]:
    """Creators made at once (tests); the entry point hands over lazy ones."""
    return [MlCreator(cls, namespace=NAMESPACE, devices=("cpu",)) for cls in plugin_classes()]
