"""Entry point of ``mini_infer.plugins`` (``mini_infer_cuda_plugins.hooks:plugin``): this
package's lazy creators and the ``cuda`` device. Imports neither CuPy nor any kernel module:
the device says whether it is available only when asked."""

from __future__ import annotations

from mini_infer_core.registry import PluginPackage

from .catalog import lazy_creators
from .device import CudaDevice

__all__ = ["plugin"]

plugin = PluginPackage(lazy_creators, lambda: [CudaDevice()])
