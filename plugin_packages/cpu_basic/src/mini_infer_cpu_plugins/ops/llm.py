"""SwiGLU, TensorScatter, LinearAttention and CausalConvWithState (schemas:
:mod:`mini_infer_core.ops.llm`). Half-precision inputs are computed in float32."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import llm as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin

__all__ = ["SwiGLU", "TensorScatter", "LinearAttention", "CausalConvWithState"]

Array = NDArray[Any]


def _work(x: Array) -> Array:
    """``x`` in the precision to compute in: float64 stays, everything else float32."""
    return x if x.dtype == np.float64 else x.astype(np.float32)


def _sigmoid(z: Array) -> Array:
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-z))


class SwiGLU(CpuPlugin, schema.SwiGLU):
    def compute(self, a: Array, b: Array, *, out: Array, alpha: float) -> None:
        if a.shape != b.shape:
            raise PluginInterfaceError(f"SwiGLU {self.name!r}: A {a.shape} and B {b.shape} "
                                       "must have the same shape")
        x = _work(a)
        np.copyto(out, x * _sigmoid(x * alpha) * _work(b), casting="unsafe")


class TensorScatter(CpuPlugin, schema.TensorScatter):
    def compute(self, past: Array, update: Array, write_indices: Array | None = None, *,
                out: Array, mode: str, axis: int) -> None:
        a = self.axis(past.ndim)
        if past.shape[:a] + past.shape[a + 1:] != update.shape[:a] + update.shape[a + 1:] \
                or update.shape[a] > past.shape[a]:
            raise PluginInterfaceError(
                f"TensorScatter {self.name!r}: update {update.shape} does not fit past_cache "
                f"{past.shape} along axis {a}")
        np.copyto(out, past)
        size, length = past.shape[a], update.shape[a]
        starts = np.zeros(past.shape[0], np.int64) if write_indices is None else \
            np.asarray(write_indices, np.int64).reshape(-1)
        if starts.size != past.shape[0]:
            raise PluginInterfaceError(
                f"TensorScatter {self.name!r}: write_indices has {starts.size} entries for a "
                f"batch of {past.shape[0]}")
        for b in range(past.shape[0]):
            at = int(starts[b]) + np.arange(length)
            if mode == "circular":
                at %= size
            elif length and (at[0] < 0 or at[-1] >= size):
                raise PluginInterfaceError(
                    f"TensorScatter {self.name!r}: batch {b} writes positions {at[0]}.."
                    f"{at[-1]}, outside the cache of {size} (mode 'linear')")
            np.moveaxis(out[b], a - 1, 0)[at] = np.moveaxis(update[b], a - 1, 0)


def _heads(x: Array, heads: int) -> Array:
    """(B, T, H * D) -> (B, H, T, D)."""
    b, t, hd = x.shape
    if hd % heads:
        raise PluginInterfaceError(f"LinearAttention: last dimension {hd} does not split "
                                   f"into {heads} heads")
    return x.reshape(b, t, heads, hd // heads).transpose(0, 2, 1, 3)


class LinearAttention(CpuPlugin, schema.LinearAttention):
    """The recurrence step by step, every batch and head at once, in float32."""

    def compute(self, q: Array, k: Array, v: Array, past: Array | None = None,
                decay: Array | None = None, beta: Array | None = None, *, out: Any,
                q_num_heads: int, kv_num_heads: int, scale: float, update_rule: str,
                **_: Any) -> None:
        hq, hkv = q_num_heads, kv_num_heads
        gated = update_rule in ("gated", "gated_delta")
        delta = update_rule in ("delta", "gated_delta")
        if gated != (decay is not None) or delta != (beta is not None):
            raise PluginInterfaceError(
                f"LinearAttention {self.name!r}: update_rule {update_rule!r} takes "
                f"{'decay' if gated else 'no decay'} and {'beta' if delta else 'no beta'}")
        bsz, t = q.shape[:2]
        q4 = _heads(q.astype(np.float32), hq)
        k4 = _heads(k.astype(np.float32), hkv)
        v4 = _heads(v.astype(np.float32), hkv)
        dk, dv = q4.shape[3], v4.shape[3]
        if decay is not None:
            g = decay.astype(np.float32)
            g4 = (g.reshape(bsz, t, hkv, 1).transpose(0, 2, 1, 3) if g.shape[2] == hkv
                  else _heads(g, hkv))
        if beta is not None:
            be = beta.astype(np.float32)
            b4 = be.reshape(bsz, t, be.shape[2], 1).transpose(0, 2, 1, 3)
        state = (np.zeros((bsz, hkv, dk, dv), np.float32) if past is None
                 else past.astype(np.float32))
        if state.shape != (bsz, hkv, dk, dv):
            raise PluginInterfaceError(
                f"LinearAttention {self.name!r}: past_state {state.shape} is not "
                f"{(bsz, hkv, dk, dv)}")
        factor = np.float32(scale) if scale else np.float32(1 / np.sqrt(dk))
        group = hq // hkv
        y = np.empty((bsz, hq, t, dv), np.float32)
        for i in range(t):
            k_t, v_t = k4[:, :, i], v4[:, :, i]
            if gated:
                state = state * np.exp(g4[:, :, i])[..., None]
            if delta:
                v_t = b4[:, :, i] * (v_t - np.einsum("bhdm,bhd->bhm", state, k_t))
            state = state + k_t[..., :, None] * v_t[..., None, :]
            q_t = q4[:, :, i].reshape(bsz, hkv, group, dk)
            y[:, :, i] = factor * np.einsum("bhgd,bhdm->bhgm", q_t, state).reshape(
                bsz, hq, dv)
        o, s = out
        np.copyto(o, y.transpose(0, 2, 1, 3).reshape(o.shape), casting="unsafe")
        np.copyto(s, state, casting="unsafe")


class CausalConvWithState(CpuPlugin, schema.CausalConvWithState):
    def compute(self, x: Array, w: Array, bias: Array | None = None,
                past: Array | None = None, *, out: Any, activation: str) -> None:
        bsz, ch, length = x.shape
        if w.shape[:2] != (ch, 1):
            raise PluginInterfaceError(
                f"CausalConvWithState {self.name!r}: weight {w.shape} is not ({ch}, 1, k)")
        k = w.shape[2]
        xs = _work(x)
        pad = np.zeros((bsz, ch, k - 1), xs.dtype) if past is None else past.astype(xs.dtype)
        if pad.shape != (bsz, ch, k - 1):
            raise PluginInterfaceError(
                f"CausalConvWithState {self.name!r}: past_state {pad.shape} is not "
                f"{(bsz, ch, k - 1)}")
        padded = np.concatenate([pad, xs], axis=2)
        taps = w[:, 0, :].astype(xs.dtype)
        y = np.zeros_like(xs)
        for j in range(k):
            y += taps[None, :, j, None] * padded[:, :, j:j + length]
        if bias is not None:
            y += bias.astype(xs.dtype)[None, :, None]
        if activation in ("silu", "swish"):
            y = y * _sigmoid(y)
        o, s = out
        np.copyto(o, y, casting="unsafe")
        np.copyto(s, padded[:, :, padded.shape[2] - (k - 1):], casting="unsafe")
