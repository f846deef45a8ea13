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

import inspect
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, ClassVar

from mini_infer_cpu_plugins.serialization import FORMAT_TAG

from mini_infer_core.plugin import OnnxPlugin, OnnxPluginCreator

__all__ = ["FORMAT_TAG", "MlPlugin", "MlCreator"]


class MlPlugin(OnnxPlugin):
    """Base of every ml_basic plugin. Its ``compute`` is called with the attributes it names
    (keyword-only parameters), not all of them: a tree ensemble has some thirty, and building
    that keyword dict on every run costs more than a one-row kernel (the rest would go to its
    ``**_`` unread)."""

    format_tag: ClassVar[bytes] = FORMAT_TAG
    package: ClassVar[str] = "mini-infer-ml-plugins"
    _named: dict[str, Any] | None = None

    def named_attrs(self) -> dict[str, Any]:
        """The attributes ``compute`` names (kept: attributes are fixed once made)."""
        if self._named is None:
            params = inspect.signature(self.compute).parameters.values()
            names = {p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}
            self._named = {k: v for k, v in self.attrs.items() if k in names}
        return self._named

    def enqueue(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any,
                stream: Any) -> None:
        self.workspace = workspace
        out = outputs[0] if len(outputs) == 1 else tuple(outputs)
        self.compute(*inputs, out=out, **self.named_attrs())

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """``compute`` with the step's arrays and its attributes bound: what ``enqueue``
        does, less its Python per run (the kernels keep no state tied to the arrays and
        use no workspace)."""
        if workspace is not None:
            return None
        out = outputs[0] if len(outputs) == 1 else tuple(outputs)
        return partial(self.compute, *inputs, out=out, **self.named_attrs())

    def enqueue_dynamic(self, inputs: Sequence[Any], workspace: Any, stream: Any
                        ) -> list[Any]:
        self.workspace = workspace
        result = self.compute(*inputs, **self.named_attrs())
        return list(result) if isinstance(result, (tuple, list)) else [result]


class MlCreator(OnnxPluginCreator):
    """The creator of every ml_basic plugin (the core's, under this package's name)."""
