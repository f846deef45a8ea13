"""Scaled dot-product Attention (opsets 23-24 and 25+) and RotaryEmbedding (opset 23).

Attention follows onnx's definition step by step, in the input's precision (as the
reference does, so float16/bfloat16 results round alike):

* 3-D Q/K/V (batch, seq, heads * head_size) are split into heads (``q_num_heads``,
  ``kv_num_heads``); 4-D ones are (batch, heads, seq, head_size);
* past_key/past_value are prepended (present_key/present_value outputs);
* the additive bias combines attn_mask (bool: False -> -inf; shorter than the total length:
  padded with -inf/False), is_causal (bottom-right aligned: query i attends key j iff
  j <= i + offset, offset = past length, or nonpad_kv_seqlen[b] - q_len with an external
  cache), the sliding window (opset 25) and nonpad_kv_seqlen padding;
* grouped-query attention repeats each KV head q_heads / kv_heads times;
* scores = (Q * sqrt(scale)) @ (K * sqrt(scale))^T, softcap (c * tanh(x / c)), + bias,
  softmax (in ``softmax_precision`` when given), rows whose bias is all -inf give 0;
* qk_matmul_output: mode 0/1 the (softcapped) scores, 2 with the bias, 3 the softmax.

Shapes and attributes are the schemas' (:mod:`mini_infer_core.ops.attention`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import attention as schema
from mini_infer_core.plugin import DataType
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._nn_util import put
from ._util import kernels

__all__ = ["Attention_23", "Attention", "RotaryEmbedding"]

Array = NDArray[Any]


def _mm(a: Array, b: Array) -> Array:
    r: Array = np.matmul(a, b)
    return r if r.dtype == a.dtype else r.astype(a.dtype)


def _heads(x: Array, n: int) -> Array:
    b, s, h = x.shape
    return x.reshape(b, s, n, h // n).transpose(0, 2, 1, 3)


def _frontier(base: Array, offset: Any, allowed_fn: Any) -> Array:
    """base + (0 where allowed, -inf elsewhere); ``offset`` a scalar or per batch."""
    q, kv = base.shape[-2:]
    i = np.arange(q).reshape(q, 1)
    j = np.arange(kv).reshape(1, kv)
    per_batch = np.ndim(offset) > 0
    pos = i + (np.reshape(offset, (-1, 1, 1)) if per_batch else int(offset))
    allowed = allowed_fn(pos, j)
    bias = np.where(allowed, base.dtype.type(0), base.dtype.type(-np.inf))
    if per_batch:
        return base + bias.reshape(bias.shape[0], 1, q, kv)  # type: ignore[no-any-return]
    return base + bias  # type: ignore[no-any-return]


def _softmax(x: Array) -> Array:
    m = np.max(x, axis=-1, keepdims=True)
    zero = np.zeros((), x.dtype)
    e = np.exp(x - np.where(np.isneginf(m), zero, m))
    s = np.sum(e, axis=-1, keepdims=True)
    return e / np.where(s == zero, np.ones((), x.dtype), s)  # type: ignore[no-any-return]


def attention(q: Array, k: Array, v: Array, mask: Array | None, past_k: Array | None,
              past_v: Array | None, nonpad: Array | None, a: dict[str, Any]
              ) -> tuple[Array, Array, Array, Array]:
    """(Y, present_key, present_value, qk_matmul_output) per onnx's reference."""
    dt = q.dtype
    three_d = q.ndim == 3
    if three_d:
        qh, kvh = schema.heads(a)
        q, k, v = _heads(q, qh), _heads(k, kvh), _heads(v, kvh)
    scale = a["scale"]
    if scale is None:
        scale = 1 / np.sqrt(q.shape[3])
    s = dt.type(np.sqrt(scale))
    if past_k is not None:
        k = np.concatenate((past_k, k), axis=2)
    if past_v is not None:
        v = np.concatenate((past_v, v), axis=2)
    present_k, present_v = k, v
    sq, total = q.shape[2], k.shape[2]
    bias = np.zeros((sq, total), dtype=dt)
    if mask is not None and (pad := total - mask.shape[-1]) > 0:
        mask = np.pad(mask, [(0, 0)] * (mask.ndim - 1) + [(0, pad)],
                      constant_values=False if mask.dtype == np.bool_ else -np.inf)
    left, right = a.get("left_window_size", -1), a.get("right_window_size", -1)
    windowed = left >= 0 or right >= 0
    if past_k is None and nonpad is not None:
        offset: Any = nonpad.reshape(-1) - sq
    else:
        offset = past_k.shape[2] if past_k is not None else 0
    if a["is_causal"]:
        if mask is not None and mask.dtype == np.bool_:
            mask = np.where(mask, dt.type(0), dt.type(-np.inf))
        base = np.zeros((sq, total), dt) if mask is None else mask.astype(dt)
        if windowed:
            base = np.zeros((sq, total), dt) + base
        bias = _frontier(base, offset, lambda p, j: j <= p)
    elif mask is not None:
        if mask.dtype == np.bool_:
            mask = np.where(mask, dt.type(0), dt.type(-np.inf))
        bias = bias + mask.astype(dt)
    if windowed:
        def window(p: Array, j: Array) -> Array:
            d = p - j
            ok = np.ones(d.shape, np.bool_)
            if left >= 0:
                ok &= d <= left
            if right >= 0:
                ok &= -d <= right
            return ok

        bias = _frontier(np.zeros((sq, total), dt) + bias, offset, window)
    if nonpad is not None:
        keep = np.arange(total) < nonpad.reshape(-1, 1)
        bias = bias + np.where(keep, 0, -np.inf).astype(dt).reshape(-1, 1, 1, total)
    hq, hk = q.shape[1], k.shape[1]
    if hq != hk and hq % hk == 0 and v.shape[1] == hk:
        k = np.repeat(k, hq // hk, axis=1)
        v = np.repeat(v, hq // hk, axis=1)
    scores = _mm(q * s, np.swapaxes(k, 2, 3) * s)
    cap = a["softcap"]
    if cap and cap > 0:
        scores = np.tanh(scores / dt.type(cap)) * dt.type(cap)
    with_bias = scores + bias
    mode = a["qk_matmul_output_mode"]
    qk_out = with_bias if mode == 2 else scores
    sm_in = with_bias
    if a["softmax_precision"] is not None:
        sm_in = sm_in.astype(DataType(a["softmax_precision"]).numpy)
    probs = _softmax(sm_in)
    all_masked = np.isneginf(np.max(bias, axis=-1, keepdims=True))
    probs = np.where(all_masked, np.zeros((), probs.dtype), probs)
    if mode == 3:
        qk_out = probs
    y = _mm(probs.astype(dt), v)
    if three_d:
        y = y.transpose(0, 2, 1, 3).reshape(y.shape[0], y.shape[2], -1)
    return y, present_k, present_v, qk_out.astype(dt)


class _Attention(CpuPlugin, schema.AttentionBase):
    def compute(self, q: Array, k: Array, v: Array, mask: Array | None = None,
                past_k: Array | None = None, past_v: Array | None = None,
                nonpad: Array | None = None, *, out: Any, **attrs: Any) -> None:
        res = attention(q, k, v, mask, past_k, past_v, nonpad, attrs)
        for i, r in enumerate(res):
            put(out, i, r)


Attention_23, Attention = kernels(_Attention, schema.Attention_23, schema.Attention,
                                  module=__name__)


class RotaryEmbedding(CpuPlugin, schema.RotaryEmbedding):
    """Rotates (x1, x2) pairs -- the two halves of the first ``rotary_embedding_dim``
    features, or interleaved even/odd ones -- by cos/sin caches indexed by position_ids
    (or the caches are already (batch, seq, dim/2))."""

    def compute(self, x: Array, cos: Array, sin: Array, pos: Array | None = None, *,
                out: Array, interleaved: int, num_heads: int | None,
                rotary_embedding_dim: int) -> None:
        if x.ndim == 4:
            xt = x.transpose(0, 2, 1, 3)
        else:
            assert num_heads  # the schema checked it
            b, s, h = x.shape
            xt = x.reshape(b, s, num_heads, h // num_heads)
        dim = rotary_embedding_dim or xt.shape[3]
        half = dim // 2
        if pos is not None:
            cos, sin = cos[pos], sin[pos]
        if cos.shape[-1] != half or sin.shape[-1] != half:
            raise PluginInterfaceError(
                f"RotaryEmbedding: caches end in {cos.shape[-1]}, expected {half}")
        c, s_ = cos[:, :, None, :], sin[:, :, None, :]
        rot = xt[..., :dim]
        x1, x2 = (rot[..., 0::2], rot[..., 1::2]) if interleaved else (rot[..., :half],
                                                                         rot[..., half:])
        real = c * x1 - s_ * x2
        imag = s_ * x1 + c * x2
        res = np.array(xt, copy=True)
        if interleaved:
            res[..., 0:dim:2] = real
            res[..., 1:dim:2] = imag
        else:
            res[..., :half] = real
            res[..., half:dim] = imag
        if x.ndim == 4:
            np.copyto(out, res.transpose(0, 2, 1, 3))
        else:
            np.copyto(out, res.reshape(x.shape))
