"""Scaled dot-product Attention (opsets 23-24 and 25+) and RotaryEmbedding (opset 23).

Attention's inputs are Q, K, V (3-D: (batch, seq, heads * head_size), split into heads by
``q_num_heads``/``kv_num_heads``; 4-D: (batch, heads, seq, head_size)), then the optional
attn_mask, past_key, past_value and (opset 24) nonpad_kv_seqlen. Its outputs are Y,
present_key, present_value (the past prepended) and qk_matmul_output.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import PluginInterfaceError
from ..plugin import DimExpr, DimsExprs, IntLike
from ._common import Versioned
from ._schema import Op

__all__ = ["Attention_23", "Attention", "RotaryEmbedding"]


def heads(attrs: dict[str, Any]) -> tuple[int, int]:
    """``q_num_heads`` and ``kv_num_heads``, which 3-D inputs need."""
    qh, kvh = attrs["q_num_heads"], attrs["kv_num_heads"]
    if not qh or not kvh:
        raise PluginInterfaceError("Attention: 3-D inputs need q_num_heads and kv_num_heads")
    return int(qh), int(kvh)


class AttentionBase(Versioned, Op):
    """Attention, every opset: Y, present_key, present_value, qk_matmul_output."""

    n_outputs = 4

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> list[list[IntLike]]:
        q, k, v = (list(x) if x is not None else [] for x in inputs[:3])
        past = inputs[4] if len(inputs) > 4 else None
        if (past is None) != (len(inputs) <= 5 or inputs[5] is None):
            raise PluginInterfaceError(
                f"Attention {self.name!r}: past_key and past_value go together")
        qh: IntLike
        kvh: IntLike
        if len(q) == 3:
            qh, kvh = heads(self.attrs)
            dk, dv = k[2] // kvh, v[2] // kvh
            b, sq, skv = q[0], q[1], k[1]
            y: list[IntLike] = [b, sq, dv * qh]
        elif len(q) == 4:
            qh, kvh = q[1], k[1]
            dk, dv = k[3], v[3]
            b, sq, skv = q[0], q[2], k[2]
            y = [b, qh, sq, dv]
        else:
            raise PluginInterfaceError(f"Attention: Q must be 3-D or 4-D, got rank {len(q)}")
        total: DimExpr = DimExpr.wrap(skv) if past is None else past[2] + skv
        return [y, [b, kvh, total, dk], [b, kvh, total, dv], [b, qh, sq, total]]


class Attention_23(AttentionBase, opsets=(23, 24)):  # noqa: N801
    """Opsets 23-24 (24 adds the nonpad_kv_seqlen input)."""


class Attention(AttentionBase, opsets=(25, None)):
    """Opset 25: sliding-window attention (left/right_window_size; -1 unbounded)."""


class RotaryEmbedding(Op):
    """Rotates feature pairs of X by cos/sin caches (indexed by position_ids when given).
    X is (batch, heads, seq, head) or (batch, seq, heads * head) with ``num_heads``."""

    plugin_version = "23"

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> list[list[IntLike]]:
        x = inputs[0]
        assert x is not None
        if len(x) == 3 and not self.attrs["num_heads"]:
            raise PluginInterfaceError("RotaryEmbedding: 3-D input needs num_heads")
        if len(x) not in (3, 4):
            raise PluginInterfaceError(
                f"RotaryEmbedding: X must be 3-D or 4-D, got rank {len(x)}")
        return [list(x)]
