"""How cpu_basic plugins are written into an engine and read back.

A plugin's bytes are a one-byte format tag followed by its attributes in mini-infer's plugin
field encoding. The tag lets a later version of this package change the layout and still read
engines written by this one.
"""

from __future__ import annotations

from typing import Any

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import (
    OnnxPlugin,
    OnnxPluginCreator,
    PluginFieldCollection,
    decode_fields,
    encode_fields,
    fields_from_values,
)

__all__ = ["FORMAT_TAG", "CpuPlugin", "CpuCreator"]

FORMAT_TAG = b"\x01"


class CpuPlugin(OnnxPlugin):
    """Base of every cpu_basic plugin."""

    def serialize(self) -> bytes:
        attrs = {k: v for k, v in self.attrs.items() if v is not None}
        return FORMAT_TAG + encode_fields(fields_from_values(attrs))


class CpuCreator(OnnxPluginCreator):
    #: named in errors; a package that reuses this serialization sets its own
    package = "mini-infer-cpu-plugins"

    def deserialize_plugin(self, name: str, data: bytes) -> Any:
        if data[:1] != FORMAT_TAG:
            raise PluginInterfaceError(
                f"{self.plugin_namespace}::{self.name}: serialized data has format tag "
                f"{data[:1]!r}, this {self.package} reads {FORMAT_TAG!r}; "
                "rebuild the engine with the installed version")
        try:
            fields: PluginFieldCollection = decode_fields(data[1:])
        except ValueError as exc:
            raise PluginInterfaceError(
                f"{self.plugin_namespace}::{self.name}: corrupt serialized data: {exc}") from exc
        return self.create_plugin(name, fields)
