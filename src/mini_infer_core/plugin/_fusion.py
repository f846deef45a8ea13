"""What a plugin returns when it absorbs the node consuming its output (see builder/fusion.py),
and the fusions every device's convolution and batch normalization share
(:class:`ConvFusion`, :class:`BatchNormFusion`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from .._record import field, record
from ._types import DataType

__all__ = ["ACTIVATIONS", "BatchNormFusion", "ConvFusion", "Fusion", "per_channel"]

#: the activations a Conv plugin may absorb after its clamp (where it lists them in
#: ``fusable``, and ``__act__``/``__act_args__`` in its ``hidden_fields``), with the defaults
#: of their (alpha, beta): HardSigmoid max(0, min(1, alpha x + beta)), HardSwish
#: x HardSigmoid(x) with (1/6, 1/2), Sigmoid, Swish x Sigmoid(alpha x)
ACTIVATIONS: dict[str, tuple[float, float]] = {
    "HardSigmoid": (0.2, 0.5), "HardSwish": (1.0 / 6.0, 0.5), "Sigmoid": (0.0, 0.0),
    "Swish": (1.0, 0.0)}


@record
class Fusion:
    """What a plugin returns from ``fuse``: new constant values for its own inputs (an index
    equal to the input count appends one), and consumer inputs to append as its own."""

    constants: dict[int, np.ndarray[Any, Any]] = field(default_factory=dict)
    append_inputs: list[int] = field(default_factory=list)
    #: the type the plugin's output takes from now on (an absorbed Cast), None: unchanged
    output_type: DataType | None = None
    #: the shape the plugin's output takes from now on, a ``DimsExprs`` or any sequence of
    #: dimensions (an absorbed consumer that changes it: a Tokenizer that counts its tokens
    #: as the TfIdfVectorizer after it did), None: the consumer's output is shaped as the
    #: plugin's was
    output_dims: Sequence[Any] | None = None


def per_channel(c: Any, channels: int, rank: int) -> np.ndarray[Any, Any] | None:
    """A constant that broadcasts per channel over an NC... tensor of ``rank``, as a
    ``(channels,)`` array; None when it varies along any other axis (or is not constant)."""
    if c is None:
        return None
    arr = np.asarray(c)
    if arr.size == 1:
        return np.full(channels, arr.reshape(-1)[0], dtype=arr.dtype)
    if arr.ndim > rank or rank < 2:
        return None
    shape = (1,) * (rank - arr.ndim) + arr.shape
    if shape[1] != channels or any(d != 1 for i, d in enumerate(shape) if i != 1):
        return None
    return arr.reshape(channels)


def _scale_filters(w: np.ndarray[Any, Any], k: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``w`` (M, ...) with filter m multiplied by ``k[m]``, computed in float64."""
    f64 = np.float64
    return (np.asarray(w, f64) * np.asarray(k, f64).reshape(-1, *([1] * (w.ndim - 1)))
            ).astype(w.dtype)


def _fold_affine(op_type: str, c: Any, own: Sequence[Any], residual: bool) -> Fusion | None:
    """conv(x) * k or conv(x) + d, with k, d constant per output channel."""
    w = own[1]
    b = own[2] if len(own) > 2 else None
    if w is None or (len(own) > 2 and own[2] is None):
        return None  # runtime weights or bias
    k = per_channel(c, w.shape[0], w.ndim)
    if k is None or (op_type == "Mul" and residual):
        return None  # a Mul after the residual would scale it too
    f64 = np.float64
    bias = np.zeros(w.shape[0], f64) if b is None else np.asarray(b, f64)
    if op_type == "Add":
        return Fusion(constants={2: (bias + k.astype(f64)).astype(w.dtype)})
    return Fusion(constants={1: _scale_filters(w, k), 2: (bias * k.astype(f64)).astype(w.dtype)})


def _fold_bn(attrs: dict[str, Any], bn: Sequence[Any], own: Sequence[Any]) -> Fusion | None:
    """BatchNormalization(conv(x)) as conv(x) with scaled weights and a shifted bias."""
    if attrs.get("training_mode") or attrs.get("spatial", 1) != 1 or len(bn) < 5:
        return None
    scale, shift, mean, var = bn[1:5]
    w = own[1]
    b = own[2] if len(own) > 2 else None
    if any(v is None for v in (scale, shift, mean, var, w)) or (len(own) > 2 and b is None):
        return None  # runtime parameters, weights or bias: cannot fold
    f64 = np.float64
    k = np.asarray(scale, f64) / np.sqrt(np.asarray(var, f64) + float(attrs.get("epsilon",
                                                                                  1e-5)))
    bias = np.zeros(w.shape[0], f64) if b is None else np.asarray(b, f64)
    new_b = ((bias - np.asarray(mean, f64)) * k + np.asarray(shift, f64)).astype(w.dtype)
    return Fusion(constants={1: _scale_filters(w, k), 2: new_b})


class ConvFusion:
    """What a convolution absorbs from the node after it, for any device's Conv plugin
    (``class Conv(ConvFusion, MyPlugin)``): a BatchNormalization, or a Mul/Add by a constant
    per output channel (folded into W and B at build time), an Add/Sum of a same-shaped tensor
    (a residual: appended as input ``r``), and a Relu or Clip after them. The plugin's
    ``attributes`` declare ``__residual__`` (0), ``__relu__`` (0) and, where it lists Clip in
    ``fusable``, ``__clip__`` (None); its kernel applies them after the product:
    ``y = act(conv(x, W) + B + r)``.

    A plugin whose kernels have more activations lists those of :data:`ACTIVATIONS` it applies
    in ``fusable`` and ``__act__``, ``__act_args__`` in its ``hidden_fields``: one of them
    after the product (or after a Relu's or Clip's place: never both) is recorded there, its
    name and (alpha, beta) (``y = act(conv(x, W) + B + r)`` with that function). The default
    ``fusable`` has none of them."""

    attrs: dict[str, Any]
    hidden: dict[str, Any]
    hidden_fields: ClassVar[tuple[str, ...]]
    fusable: ClassVar[frozenset[str]] = frozenset(
        {"BatchNormalization", "Mul", "Add", "Sum", "Relu", "Clip"})

    def fuse(self, op_type: str, attrs: dict[str, Any], consumer_constants: Sequence[Any],
             consumer_dims: Sequence[Any], position: int,
             own_constants: Sequence[Any]) -> Fusion | None:
        a = self.attrs
        if a["__relu__"] or a.get("__clip__") is not None or self.hidden.get("__act__"):
            return None  # nothing follows the activation
        if op_type in ACTIVATIONS:
            return self._fuse_activation(op_type, attrs)
        if op_type == "BatchNormalization":
            return None if a["__residual__"] else _fold_bn(attrs, consumer_constants,
                                                         own_constants)
        if op_type in ("Mul", "Add") and len(consumer_constants) == 2 and \
                consumer_constants[1 - position] is not None and not attrs.get("broadcast"):
            return _fold_affine(op_type, consumer_constants[1 - position], own_constants,
                                residual=bool(a["__residual__"]))
        if op_type in ("Add", "Sum"):
            if a["__residual__"] or len(consumer_dims) != 2 or attrs.get("broadcast"):
                return None
            other = 1 - position
            mine, theirs = consumer_dims[position], consumer_dims[other]
            if theirs is None or mine is None or len(theirs) != len(mine) or not all(
                    p.same_as(q) for p, q in zip(mine, theirs, strict=True)):
                return None  # only a same-shaped residual is added in place
            fusion = Fusion(append_inputs=[other])
            if len(own_constants) < 3:  # no bias input: r must not arrive in B's place
                w = own_constants[1]
                if w is None:
                    return None
                fusion.constants[2] = np.zeros(w.shape[0], w.dtype)
            a["__residual__"] = 1
            return fusion
        if op_type == "Relu":
            a["__relu__"] = 1
            return Fusion()
        if op_type == "Clip":
            lo, hi = attrs.get("min"), attrs.get("max")
            if len(consumer_constants) > 1:  # opset 11+: bounds are inputs
                if any(c is None for c, d in zip(consumer_constants[1:], consumer_dims[1:],
                                                 strict=True) if d is not None):
                    return None
                bounds = [None if c is None else float(np.asarray(c).reshape(-1)[0])
                          for c in consumer_constants[1:3]]
                lo, hi = (bounds + [None, None])[:2]
            a["__clip__"] = (-np.inf if lo is None else float(lo),
                             np.inf if hi is None else float(hi))
            return Fusion()
        return None

    def _fuse_activation(self, op_type: str, attrs: dict[str, Any]) -> Fusion | None:
        """An activation of :data:`ACTIVATIONS` the plugin declares (``fusable`` and the
        hidden fields), recorded with its (alpha, beta)."""
        if op_type not in self.fusable or not {"__act__", "__act_args__"} <= set(
                self.hidden_fields):
            return None
        alpha, beta = ACTIVATIONS[op_type]
        if op_type in ("HardSigmoid", "Swish"):
            alpha = float(attrs.get("alpha", alpha))
        if op_type == "HardSigmoid":
            beta = float(attrs.get("beta", beta))
        self.hidden["__act__"] = op_type
        self.hidden["__act_args__"] = (alpha, beta)
        return Fusion()


class BatchNormFusion:
    """What an inference BatchNormalization (``y = x * a + b`` per channel) absorbs, for any
    device's plugin (``class BatchNormalization(BatchNormFusion, MyPlugin)``): a Mul/Add by a
    constant per channel (folded into scale and bias at build time) and a Relu after it
    (``__relu__``, declared in the plugin's ``attributes``, applied by its kernel)."""

    attrs: dict[str, Any]
    fusable: ClassVar[frozenset[str]] = frozenset({"Mul", "Add", "Relu"})

    def fuse(self, op_type: str, attrs: dict[str, Any], consumer_constants: Sequence[Any],
             consumer_dims: Sequence[Any], position: int,
             own_constants: Sequence[Any]) -> Fusion | None:
        a = self.attrs
        if a["training_mode"] or a["spatial"] != 1 or a["__relu__"] or attrs.get("broadcast"):
            return None
        if op_type == "Relu":
            a["__relu__"] = 1
            return Fusion()
        scale, bias = own_constants[1], own_constants[2]
        dims = consumer_dims[position]
        if scale is None or bias is None or dims is None or len(consumer_constants) != 2:
            return None
        k = per_channel(consumer_constants[1 - position], scale.size, len(dims))
        if k is None:
            return None
        f64 = np.float64
        if op_type == "Add":
            return Fusion(constants={2: (np.asarray(bias, f64) + k).astype(bias.dtype)})
        return Fusion(constants={1: (np.asarray(scale, f64) * k).astype(scale.dtype),
                                 2: (np.asarray(bias, f64) * k).astype(bias.dtype)})
