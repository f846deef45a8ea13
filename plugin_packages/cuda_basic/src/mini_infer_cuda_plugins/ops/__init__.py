"""Every mini-infer-cuda-plugins operator kernel, one small module per family.

Importing this package imports the kernel modules, but not CuPy: CuPy is imported by a kernel
the first time it receives a CuPy array.
"""

from __future__ import annotations

from typing import Any

from mini_infer_core.ops import package_classes
from mini_infer_core.plugin import IPluginCreator

from .. import NAMESPACE
from ..serialization import CudaCreator

__all__ = ["DEVICES", "creators", "plugin_classes"]

#: the devices every creator of this package serves
DEVICES = ("cuda",)


def plugin_classes() -> list[Any]:
    return package_classes(__name__)


def creators() -> list[IPluginCreator]:
    return [CudaCreator(cls, namespace=NAMESPACE, devices=DEVICES) for cls in plugin_classes()]
