"""The L2Norm plugin and its creator, with a serialization of its own."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import OnnxPlugin, OnnxPluginCreator

__all__ = ["L2Norm", "L2NormCreator", "L2NormCreatorType"]

# magic, layout version, epsilon (float64), axis (int32)
_RECORD = struct.Struct("<4sHdi")
_MAGIC = b"L2NM"


class L2Norm(OnnxPlugin):
    """y = x / sqrt(sum(x**2, axis, keepdims) + epsilon)."""

    domain = "com.example"
    attributes = {"epsilon": 1e-12, "axis": -1}

    def compute(self, x: Any, *, out: Any, epsilon: float, axis: int) -> None:
        np.multiply(x, x, out=out)
        norm = np.sum(out, axis=axis, keepdims=True)
        norm += epsilon
        np.sqrt(norm, out=norm)
        np.divide(x, norm, out=out)

    def serialize(self) -> bytes:
        return _RECORD.pack(_MAGIC, 1, float(self.attrs["epsilon"]), int(self.attrs["axis"]))


class L2NormCreatorType(OnnxPluginCreator):
    def __init__(self, plugin_cls: type[OnnxPlugin] = L2Norm, **kw: Any) -> None:
        kw.setdefault("namespace", "com.example")
        super().__init__(plugin_cls, **kw)

    def deserialize_plugin(self, name: str, data: bytes) -> L2Norm:
        if len(data) != _RECORD.size or data[:4] != _MAGIC:
            raise PluginInterfaceError(f"com.example::L2Norm: {len(data)} bytes are not an "
                                       "L2Norm record; rebuild the engine")
        _, version, epsilon, axis = _RECORD.unpack(data)
        if version != 1:
            raise PluginInterfaceError(f"com.example::L2Norm: record version {version} is "
                                       "newer than this plugin; upgrade "
                                       "mini-infer-example-l2norm")
        plugin = L2Norm(name, epsilon=epsilon, axis=axis)
        plugin.plugin_namespace = self.plugin_namespace
        return plugin


L2NormCreator = L2NormCreatorType()
