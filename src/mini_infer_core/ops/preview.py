"""Operators of the ``ai.onnx.preview`` domain: FlexAttention.

FlexAttention's optional ``score_mod`` and ``prob_mod`` attributes are graphs (serialized
``GraphProto``) that the kernel runs through the subgraph service the core attaches
(:class:`~mini_infer_core.plugin.IUsesSubgraphs`); as for If, Loop and Scan, the importer
passes the values they read from enclosing scopes as extra inputs (``__outer_scope__``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from ..errors import PluginInterfaceError
from ..plugin import DataType, DimsExprs, IUsesSubgraphs, Subgraph
from ..plugin.shapes import Shapes
from ._schema import Op

__all__ = ["FlexAttention"]

PREVIEW = "ai.onnx.preview"


class FlexAttention(Op, IUsesSubgraphs):
    """Q ``(B, Hq, L, E)``, K ``(B, Hkv, S, E)``, V ``(B, Hkv, S, Ev)``: Y ``(B, Hq, L, Ev)``
    = softmax(score_mod(Q K^T * scale)) passed through prob_mod, times V; Hq a multiple of
    Hkv (grouped-query attention)."""

    domain = PREVIEW
    hidden_fields = ("__outer_scope__", "__opset_imports__")
    #: the attributes that hold graphs
    bodies: ClassVar[tuple[str, ...]] = ("score_mod", "prob_mod")

    def input_count(self) -> tuple[int, int | None] | None:
        """Q, K and V, then the values the modifiers read from enclosing scopes."""
        return 3, None

    def make_modifier(self, body: str) -> Subgraph:
        """The modifier graph ``body`` (an attribute in ``bodies``) as a subgraph, from the
        attached factory; the values it reads from enclosing scopes are the node's inputs
        after V, named in ``__outer_scope__``."""
        factory = self.subgraphs
        if factory is None:
            raise PluginInterfaceError(
                f"FlexAttention {self.name!r}: no subgraph factory is attached to run its "
                f"{body} (make the plugin through mini-infer's builder or runtime)")
        hidden = self.hidden
        return factory(self.attrs[body], str(hidden.get("__opset_imports__", "")),
                       list(hidden.get("__outer_scope__", ())), label=f"{self.name}.{body}")

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> Shapes:
        q, k, v = inputs[0], inputs[1], inputs[2]
        assert q is not None and k is not None and v is not None
        if len(q) != 4 or len(k) != 4 or len(v) != 4:
            raise PluginInterfaceError(
                f"FlexAttention: Q, K and V must be rank 4, got {len(q)}, {len(k)}, {len(v)}")
        hq, hkv = q[1], k[1]
        if hq.is_constant() and hkv.is_constant() and (
                hkv.get_constant_value() == 0 or
                hq.get_constant_value() % hkv.get_constant_value()):
            raise PluginInterfaceError(
                f"FlexAttention: q heads ({hq}) must be a multiple of kv heads ({hkv})")
        return [[q[0], q[1], q[2], v[3]]]

    def output_types(self, input_types: Sequence[DataType | None]) -> list[DataType]:
        q = input_types[0]
        assert q is not None
        return [q]
