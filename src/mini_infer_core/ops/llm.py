"""Operators of recent language and sequence models: SwiGLU (opset 28), TensorScatter (KV
cache updates, opset 24), LinearAttention and CausalConvWithState (recurrent-state layers of
Gated DeltaNet / Mamba style models, opset 27)."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import PluginInterfaceError
from ..plugin import DataType, DimsExprs, IntLike
from ..plugin.shapes import Shapes, absent
from ._schema import Op

__all__ = ["SwiGLU", "TensorScatter", "LinearAttention", "CausalConvWithState"]

def _same(op: str, a: DimsExprs, b: DimsExprs, what: str) -> None:
    if len(a) != len(b) or any(
            x.is_constant() and y.is_constant() and x.get_constant_value() !=
            y.get_constant_value() for x, y in zip(a, b, strict=True)):
        raise PluginInterfaceError(f"{op}: {what} ({[str(d) for d in a]} and "
                                   f"{[str(d) for d in b]})")


class SwiGLU(Op):
    """``Y = A * sigmoid(alpha * A) * B`` for A and B of one shape (no broadcasting)."""

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> Shapes:
        a, b = inputs[0], inputs[1]
        assert a is not None and b is not None
        _same("SwiGLU", a, b, "A and B must have the same shape")
        return [list(a)]


class TensorScatter(Op):
    """``past_cache`` with ``update`` written along ``axis`` (not 0) from each batch's
    ``write_indices`` (absent: 0); ``mode`` "circular" wraps around."""

    def setup(self) -> None:
        if self.attrs["mode"] not in ("linear", "circular"):
            raise PluginInterfaceError(
                f"TensorScatter: mode must be 'linear' or 'circular', not {self.attrs['mode']!r}")

    def axis(self, rank: int) -> int:
        a = int(self.attrs["axis"])
        if not -rank <= a < rank or a % rank == 0:
            raise PluginInterfaceError(
                f"TensorScatter: axis {a} is out of range or the batch axis (rank {rank})")
        return a % rank

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> Shapes:
        past, update = inputs[0], inputs[1]
        assert past is not None and update is not None
        if len(past) != len(update):
            raise PluginInterfaceError(f"TensorScatter: past_cache (rank {len(past)}) and "
                                       f"update (rank {len(update)}) differ in rank")
        self.axis(len(past))
        return [list(past)]


class LinearAttention(Op):
    """Q ``(B, T, Hq * dk)``, K ``(B, T, Hkv * dk)``, V ``(B, T, Hkv * dv)``, optional
    past_state ``(B, Hkv, dk, dv)``, decay and beta: output ``(B, T, Hq * dv)`` and
    present_state ``(B, Hkv, dk, dv)`` (past_state's type, else Q's)."""

    n_outputs = 2

    def setup(self) -> None:
        #: whether the node has past_state (known once the output shapes were asked)
        self.has_past: bool | None = None
        rule = self.attrs["update_rule"]
        if rule not in ("linear", "gated", "delta", "gated_delta"):
            raise PluginInterfaceError(
                f"LinearAttention: update_rule {rule!r} is not one of linear, gated, delta, "
                "gated_delta")
        hq, hkv = int(self.attrs["q_num_heads"]), int(self.attrs["kv_num_heads"])
        if hq <= 0 or hkv <= 0 or hq % hkv:
            raise PluginInterfaceError(
                f"LinearAttention: q_num_heads ({hq}) must be a positive multiple of "
                f"kv_num_heads ({hkv})")

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> Shapes:
        q, k, v = inputs[0], inputs[1], inputs[2]
        assert q is not None and k is not None and v is not None
        if len(q) != 3 or len(k) != 3 or len(v) != 3:
            raise PluginInterfaceError("LinearAttention: query, key and value must be "
                                       "(batch, time, heads * dim)")
        self.gates(inputs)
        # the core passes FLOAT as the type of an absent input: remember whether past_state
        # is there for output_types (asked after the shapes)
        self.has_past = not absent(inputs, 3)
        hq, hkv = int(self.attrs["q_num_heads"]), int(self.attrs["kv_num_heads"])
        dk: IntLike = q[2] // hq
        dv: IntLike = v[2] // hkv
        return [[q[0], q[1], dv * hq], [q[0], hkv, dk, dv]]

    def output_types(self, input_types: Sequence[DataType | None]) -> list[DataType]:
        q = input_types[0]
        assert q is not None
        past = input_types[3] if len(input_types) > 3 else None
        has_past = past is not None if self.has_past is None else self.has_past
        return [q, past if has_past and past is not None else q]

    def gates(self, inputs: Sequence[DimsExprs | None]) -> None:
        """Check that decay and beta are given exactly where the update rule uses them."""
        rule = self.attrs["update_rule"]
        for idx, name, needed in ((4, "decay", rule in ("gated", "gated_delta")),
                                  (5, "beta", rule in ("delta", "gated_delta"))):
            if needed == absent(inputs, idx):
                raise PluginInterfaceError(
                    f"LinearAttention: update_rule {rule!r} "
                    f"{'requires' if needed else 'forbids'} the {name} input")


class CausalConvWithState(Op):
    """Depthwise causal 1-D convolution of input ``(B, C, L)`` with weight ``(C, 1, k)``,
    optional bias ``(C)`` and past_state ``(B, C, k - 1)`` (absent: zeros): output
    ``(B, C, L)`` and present_state ``(B, C, k - 1)``; ``activation`` none, silu or swish."""

    n_outputs = 2

    def setup(self) -> None:
        if self.attrs["activation"] not in ("none", "silu", "swish"):
            raise PluginInterfaceError(
                f"CausalConvWithState: activation {self.attrs['activation']!r} is not one of "
                "none, silu, swish")

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> Shapes:
        x, w = inputs[0], inputs[1]
        assert x is not None and w is not None
        if len(x) != 3 or len(w) != 3:
            raise PluginInterfaceError("CausalConvWithState: input must be (batch, channels, "
                                       "length) and weight (channels, 1, k)")
        return [list(x), [x[0], x[1], w[2] - 1]]
