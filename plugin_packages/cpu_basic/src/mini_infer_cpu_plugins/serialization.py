"""How cpu_basic plugins are written into an engine and read back.

A plugin's bytes are a one-byte format tag followed by its fields (the attributes that are
set, its hidden fields) in mini-infer's plugin field encoding; the core's
:class:`~mini_infer_core.plugin.OnnxPlugin` writes them and its creator reads them back. The
tag lets a later version of this package change the layout and still recognise engines
written by this one.
"""

from __future__ import annotations

from typing import ClassVar

from mini_infer_core.plugin import OnnxPlugin, OnnxPluginCreator

__all__ = ["FORMAT_TAG", "CpuPlugin", "CpuCreator"]

FORMAT_TAG = b"\x01"


class CpuPlugin(OnnxPlugin):
    """Base of every cpu_basic plugin."""

    format_tag: ClassVar[bytes] = FORMAT_TAG
    package: ClassVar[str] = "mini-infer-cpu-plugins"


class CpuCreator(OnnxPluginCreator):
    """The creator of every cpu_basic plugin (the core's, under this package's name)."""
