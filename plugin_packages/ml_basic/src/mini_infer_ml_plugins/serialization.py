"""How ml_basic plugins are written into an engine and read back.

A plugin's bytes are a one-byte format tag followed by its fields (the attributes that are
set, its hidden fields) in mini-infer's plugin field encoding, written by the core's
:class:`~mini_infer_core.plugin.OnnxPlugin` and read back by its creator. String-valued tensor
attributes are kept as tuples of ``str`` by the schemas (:mod:`mini_infer_core.ops.ml`), so
they encode like any list of strings. The tag lets a later version of this package change the
layout and still recognise engines written by this one; it is cpu_basic's, whose layout this
package shares.
"""

from __future__ import annotations

from typing import ClassVar

from mini_infer_cpu_plugins.serialization import FORMAT_TAG

from mini_infer_core.plugin import OnnxPlugin, OnnxPluginCreator

__all__ = ["FORMAT_TAG", "MlPlugin", "MlCreator"]


class MlPlugin(OnnxPlugin):
    """Base of every ml_basic plugin."""

    format_tag: ClassVar[bytes] = FORMAT_TAG
    package: ClassVar[str] = "mini-infer-ml-plugins"


class MlCreator(OnnxPluginCreator):
    """The creator of every ml_basic plugin (the core's, under this package's name)."""
