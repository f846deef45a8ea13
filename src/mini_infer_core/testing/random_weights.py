"""Random, well-scaled weights for the light test models (:func:`randomize_weights`).

The light models that ship with onnx (see :mod:`mini_infer_core.testing.light_models`) do
not store their weights: each one is produced by a ``ConstantOfShape`` node with a constant
value, so every class gets (nearly) the same score.  :func:`randomize_weights` replaces
such weights by random initializers drawn according to how each weight is used (He normal
for Conv/Gemm/MatMul weights, BatchNormalization statistics fitted to the estimated moments
of the activation they normalize, ...), so that the outputs are discriminative and the
activations stay O(1) through the deep networks.

Like :mod:`~mini_infer_core.testing.light_models`, this module holds pure functions on
:class:`onnx.ModelProto` and imports only numpy and onnx. The graph helpers both modules
use live in ``_onnx_graph``; this module never imports from ``light_models``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from onnx import ModelProto, NodeProto, TensorProto, ValueInfoProto, helper, numpy_helper

from ._onnx_graph import (
    _attr,
    _constant_tensors,
    _consumers,
    _copy,
    _is_parameter_slot,
    _op,
    _trace_weight,
    _used_names,
    _Weight,
)

__all__ = ["randomize_weights"]

_ONNX_DOMAINS = ("", "ai.onnx")

# Ops a weight may flow through (as input 0) before reaching the op that gives it its role.
_PASS_THROUGH_OPS = frozenset({"Unsqueeze", "Squeeze", "Reshape", "Flatten", "Identity"})
_MULTIPLICATIVE_OPS = frozenset({"Mul", "Div"})
_ADDITIVE_OPS = frozenset({"Add", "Sub", "Sum"})
_MAX_PASS_THROUGH = 16
_MOMENT_SAMPLE = 1 << 16
_FLOAT_TYPES = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16)

Shape = tuple[int, ...]



def _normal(rng: np.random.Generator, shape: Shape, std: float, mean: float = 0.0) -> np.ndarray:
    values = rng.standard_normal(size=shape, dtype=np.float32)
    values *= np.float32(std)
    values += np.float32(mean)
    return values


def _uniform(rng: np.random.Generator, shape: Shape, low: float, high: float) -> np.ndarray:
    values = rng.random(size=shape, dtype=np.float32)
    values *= np.float32(high - low)
    values += np.float32(low)
    return values


def _he_normal(rng: np.random.Generator, shape: Shape, fan_in: int) -> np.ndarray:
    return _normal(rng, shape, math.sqrt(2.0 / max(fan_in, 1)))


@dataclass(frozen=True)
class _Moments:
    """Estimated mean and mean square of an activation (over its elements)."""

    mean: float
    square: float

    @property
    def variance(self) -> float:
        return max(self.square - self.mean**2, 0.0)

    @property
    def std(self) -> float:
        return math.sqrt(self.variance)


_INPUT_MOMENTS = _Moments(0.5, 1.0 / 3.0)  # of U[0, 1), like the runner's arange input
_UNIT_MOMENTS = _Moments(0.0, 1.0)


def _draw(
    rng: np.random.Generator, node: NodeProto | None, weight: _Weight, data: _Moments
) -> np.ndarray:
    """Random values for ``weight``; ``data`` estimates the moments of the activation it
    is applied to (the input of the BatchNormalization, Add...)."""
    shape, seen, position = weight.shape, weight.seen_shape, weight.position
    op = _op(node) if node is not None else ""
    std = max(data.std, 1e-6)
    if op in ("Conv", "ConvTranspose"):
        if position == 1 and len(seen) >= 2:
            return _he_normal(rng, shape, math.prod(seen[1:]))
        if position == 2:
            return _normal(rng, shape, 0.01)
    elif op == "Gemm" and node is not None:
        if position in (0, 1) and len(seen) == 2:
            transposed = bool(_attr(node, "transA" if position == 0 else "transB", 0))
            # A is [M, K] (or [K, M] transposed), B is [K, N] (or [N, K]): fan-in is K.
            k_axis = (0 if transposed else 1) if position == 0 else (1 if transposed else 0)
            return _he_normal(rng, shape, seen[k_axis])
        if position == 2:
            return _normal(rng, shape, 0.01)
    elif op == "MatMul":
        if len(seen) >= 2:
            return _he_normal(rng, shape, seen[-2] if position == 1 else seen[-1])
    elif op == "BatchNormalization":
        # Mean and variance follow the estimated statistics of the incoming activation, so
        # that the layer really normalizes it, as a trained one does.
        if position == 1:  # scale
            return _uniform(rng, shape, 0.5, 1.5)
        if position == 2:  # bias
            return _normal(rng, shape, 0.1)
        if position == 3:  # mean
            return _normal(rng, shape, 0.1 * std, mean=data.mean)
        if position == 4:  # variance, positive
            return _uniform(rng, shape, 0.5, 1.5) * std**2
    elif op == "InstanceNormalization":
        if position == 1:
            return _uniform(rng, shape, 0.5, 1.5)
    elif op == "PRelu":
        return _uniform(rng, shape, 0.0, 0.25)
    elif op in _MULTIPLICATIVE_OPS:
        return _uniform(rng, shape, 0.5, 1.5)
    elif op in _ADDITIVE_OPS:
        return _normal(rng, shape, 0.1 * std)
    return _normal(rng, shape, 0.1)


def _array_moments(array: np.ndarray) -> _Moments:
    """Moments of a parameter (estimated on a subsample of large ones)."""
    values = np.asarray(array).reshape(-1)
    if values.size == 0:
        return _Moments(0.0, 0.0)
    if values.size > _MOMENT_SAMPLE:
        values = values[:: values.size // _MOMENT_SAMPLE]
    values = values.astype(np.float64)
    return _Moments(float(values.mean()), float(np.mean(values**2)))


def _relu_moments(x: _Moments) -> _Moments:
    """Moments of relu(x) for a Gaussian x with x's mean and variance."""
    mu, sigma = x.mean, x.std
    if sigma < 1e-12 * max(abs(mu), 1.0):
        return _Moments(max(mu, 0.0), max(mu, 0.0) ** 2)
    z = mu / sigma
    cdf = 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))
    pdf = math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return _Moments(mu * cdf + sigma * pdf, (mu**2 + sigma**2) * cdf + mu * sigma * pdf)


def _propagate_moments(
    node: NodeProto, inputs: list[_Moments | None], params: list[np.ndarray | None]
) -> _Moments | None:
    """Estimate the moments of ``node``'s output from those of its inputs.

    ``inputs[i]`` is the estimate for input ``i`` when it is an activation (None when it is
    a parameter or unknown) and ``params[i]`` its value when it is a parameter.  The rules
    assume independent, zero-mean weights and treat activations as Gaussian; they are
    rough, but they let the BatchNormalization statistics follow the real scale of the
    activations, so that the scale does not drift geometrically with depth.
    """
    op = _op(node)
    known = [m for m in inputs if m is not None]
    if not known:
        return None
    x = inputs[0] if inputs and inputs[0] is not None else known[0]
    operands = [
        m if m is not None else (_array_moments(p) if p is not None else None)
        for m, p in zip(inputs, params, strict=True)
    ]

    def param(position: int) -> np.ndarray | None:
        return params[position] if position < len(params) else None

    def bias_moments(position: int) -> _Moments:
        bias = param(position)
        return _array_moments(bias) if bias is not None else _Moments(0.0, 0.0)

    if op in ("Conv", "ConvTranspose"):
        weight = param(1)
        if weight is None or weight.ndim < 2:
            return x
        fan_in = math.prod(weight.shape[1:])
        w, b = _array_moments(weight), bias_moments(2)
        return _Moments(b.mean, x.square * fan_in * w.square + b.square)
    if op in ("Gemm", "MatMul"):
        a = operands[0] if operands[0] is not None else x
        b = operands[1] if len(operands) > 1 and operands[1] is not None else _UNIT_MOMENTS
        k = 1
        if op == "MatMul":
            if (array := param(1)) is not None and array.ndim >= 2:
                k = array.shape[-2]
            elif (array := param(0)) is not None and array.ndim >= 1:
                k = array.shape[-1]
            return _Moments(0.0, k * a.square * b.square)
        for position, attr in ((0, "transA"), (1, "transB")):
            array = param(position)
            if array is not None and array.ndim == 2:
                transposed = bool(_attr(node, attr, 0))
                axis = (0 if transposed else 1) if position == 0 else (1 if transposed else 0)
                k = array.shape[axis]
        alpha, beta = float(_attr(node, "alpha", 1.0)), float(_attr(node, "beta", 1.0))
        c = bias_moments(2)
        return _Moments(beta * c.mean, alpha**2 * k * a.square * b.square + beta**2 * c.square)
    if op == "BatchNormalization":
        arrays = [param(i) for i in (1, 2, 3, 4)]
        if any(a is None for a in arrays):
            return x
        scale, bias, mean, var = (
            np.asarray(a, dtype=np.float64).reshape(-1) for a in arrays if a is not None
        )
        if not scale.size == bias.size == mean.size == var.size:
            return x
        gain = scale / np.sqrt(var + float(_attr(node, "epsilon", 1e-5)))
        shift = gain * (x.mean - mean) + bias  # per-channel output mean
        return _Moments(float(shift.mean()), float(np.mean(gain**2 * x.variance + shift**2)))
    if op == "InstanceNormalization":
        scale_moments, shift_moments = bias_moments(1), bias_moments(2)
        return _Moments(shift_moments.mean, scale_moments.square + shift_moments.square)
    if op == "Relu":
        return _relu_moments(x)
    if op == "Mul":
        product = _Moments(1.0, 1.0)
        for factor in operands:
            if factor is not None:
                product = _Moments(product.mean * factor.mean, product.square * factor.square)
        return product
    if op == "Div":
        divisor = param(1)
        if divisor is not None and np.all(divisor != 0):
            inverse = _array_moments(1.0 / np.asarray(divisor, dtype=np.float64))
            return _Moments(x.mean * inverse.mean, x.square * inverse.square)
        return x
    if op in _ADDITIVE_OPS:
        terms = [t for t in operands if t is not None]
        signs = [1.0] + [(-1.0 if op == "Sub" else 1.0)] * (len(terms) - 1)
        total = sum(sign * t.mean for sign, t in zip(signs, terms, strict=True))
        return _Moments(total, sum(t.variance for t in terms) + total**2)
    if op == "Concat":
        return _Moments(
            sum(k.mean for k in known) / len(known), sum(k.square for k in known) / len(known)
        )
    return x


def _fills_float(node: NodeProto) -> bool:
    """Whether a ConstantOfShape node produces float32 (its ``value`` defaults to 0.0f)."""
    for attr in node.attribute:
        if attr.name == "value":
            return bool(attr.t.data_type == TensorProto.FLOAT)
    return True


def _fill_tensor(tensor: TensorProto, name: str, array: np.ndarray) -> None:
    """Make ``tensor`` a float32 tensor holding ``array`` (in place: big weights are not
    copied from message to message)."""
    tensor.Clear()
    tensor.name = name
    tensor.data_type = TensorProto.FLOAT
    tensor.dims.extend(array.shape)
    tensor.raw_data = np.ascontiguousarray(array, dtype="<f4").tobytes()


def _tensor_value_info(name: str, shape: Shape) -> ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


# --------------------------------------------------------------------------- transforms


def randomize_weights(
    model: ModelProto, seed: int = 0, *, redraw_initializers: bool = True
) -> ModelProto:
    """Return a copy whose constant ``ConstantOfShape`` weights are random initializers.

    Every ``ConstantOfShape`` node with a constant shape input and a float32 fill value is
    replaced by a float32 initializer of the same name and shape.  With
    ``redraw_initializers`` (the default), float32 initializers used as parameters (Conv,
    Gemm, BatchNormalization... inputs) are redrawn too: a few light models mix such stored
    BatchNormalization statistics, made for other weights and 0-255 images, with the
    constant weights, and they would crush or blow up the activations.

    The values depend on how a weight is used, found by following it (through
    Unsqueeze/Reshape/...) to the node that consumes it, and keep activations O(1) through
    the deep networks:

    * Conv/ConvTranspose/Gemm/MatMul weights: He normal, std ``sqrt(2 / fan_in)`` (for Conv
      ``fan_in = prod(shape[1:])``; for Gemm it respects ``transA``/``transB``); their
      biases: N(0, 0.01);
    * BatchNormalization: scale U(0.5, 1.5), bias N(0, 0.1), and statistics that fit the
      activation entering the layer, as trained ones do: mean ``mu + N(0, 0.1) * sigma``
      and variance ``U(0.5, 1.5) * sigma**2``, where ``mu`` and ``sigma`` are its mean and
      standard deviation as estimated by propagating first and second moments from the
      inputs (assumed to be in [0, 1), like
      :func:`~mini_infer_core.testing.light_models.default_inputs`) through the graph.
      Without this, ResNet-50 and ShuffleNet logits grow to ~1e5 (the scale drifts
      geometrically with depth);
    * multiplicative parameters (Mul, Div, InstanceNormalization scale): U(0.5, 1.5);
      additive ones (Add, Sub, Sum): ``N(0, 0.1) * sigma``; anything else N(0, 0.1).

    Shape initializers left unused are removed, with their graph inputs; when such an
    initializer was listed as a graph input (IR version 3 requires it), the new weight is
    listed in its place.  The result is deterministic for a given ``seed``.
    """
    out = _copy(model)
    graph = out.graph
    rng = np.random.default_rng(seed)
    nodes = list(graph.node)
    constants = _constant_tensors(graph)
    consumers = _consumers(nodes)
    initializer_names = {init.name for init in graph.initializer}
    output_names = {value_info.name for value_info in graph.output}

    removed: set[int] = set()
    new_weights: list[_Weight] = []  # from ConstantOfShape nodes
    shape_inputs: dict[str, list[str]] = {}  # shape initializer -> weights it shaped
    for index, node in enumerate(nodes):
        shape_tensor = constants.get(node.input[0]) if node.input else None
        if (
            node.op_type != "ConstantOfShape"
            or node.domain not in _ONNX_DOMAINS
            or shape_tensor is None
            or not _fills_float(node)
        ):
            continue
        shape = tuple(int(d) for d in numpy_helper.to_array(shape_tensor).reshape(-1))
        new_weights.append(_trace_weight(node.output[0], shape, nodes, consumers, constants))
        shape_inputs.setdefault(node.input[0], []).append(node.output[0])
        removed.add(index)

    redrawn: list[_Weight] = []  # existing initializers
    if redraw_initializers:
        for init in graph.initializer:
            if init.data_type != TensorProto.FLOAT or init.name in output_names:
                continue
            weight = _trace_weight(init.name, tuple(init.dims), nodes, consumers, constants)
            if weight.user >= 0 and _is_parameter_slot(nodes[weight.user], weight.position):
                redrawn.append(weight)

    by_user: dict[int, list[_Weight]] = {}
    for weight in new_weights + redrawn:
        by_user.setdefault(weight.user, []).append(weight)

    # Walk the (topologically sorted) graph, drawing each weight when its user is reached,
    # with the estimated moments of the activations seen so far.
    drawn: dict[str, np.ndarray] = {}
    seen_as: dict[str, _Weight] = {}
    constant_arrays: dict[str, np.ndarray] = {}
    activations: dict[str, _Moments] = {
        vi.name: _INPUT_MOMENTS for vi in graph.input if vi.name not in initializer_names
    }

    def parameter(name: str) -> np.ndarray | None:
        if name in seen_as:
            weight = seen_as[name]
            array = drawn[weight.name]
            fits = math.prod(weight.seen_shape) == array.size
            return array.reshape(weight.seen_shape) if fits else array
        tensor = constants.get(name)
        if tensor is None or tensor.data_type not in _FLOAT_TYPES:
            return None
        if name not in constant_arrays:
            constant_arrays[name] = numpy_helper.to_array(tensor)
        return constant_arrays[name]

    for index, node in enumerate(nodes):
        if index in removed:
            continue
        weights = sorted(by_user.get(index, []), key=lambda w: w.position)
        if weights:
            positions = {w.position for w in weights}
            data = [
                activations[name]
                for position, name in enumerate(node.input)
                if position not in positions and name in activations
            ]
            for weight in weights:
                values = _draw(rng, node, weight, data[0] if data else _UNIT_MOMENTS)
                drawn[weight.name] = values.astype(np.float32, copy=False)
                seen_as[weight.seen_name] = weight
        moments = _propagate_moments(
            node,
            [activations.get(name) if name else None for name in node.input],
            [parameter(name) if name and name not in activations else None for name in node.input],
        )
        if moments is not None and math.isfinite(moments.mean) and math.isfinite(moments.square):
            for name in node.output:
                if name:
                    activations[name] = moments
    for weight in by_user.get(-1, []):
        values = _draw(rng, None, weight, _UNIT_MOMENTS)
        drawn[weight.name] = values.astype(np.float32, copy=False)

    # Rewrite the graph.
    kept_nodes = [node for index, node in enumerate(nodes) if index not in removed]
    del graph.node[:]
    graph.node.extend(kept_nodes)

    used = _used_names(graph)
    obsolete = {name for name in shape_inputs if name not in used}
    for position in reversed(range(len(graph.initializer))):
        init = graph.initializer[position]
        if init.name in obsolete:
            del graph.initializer[position]
        elif init.name in drawn:
            _fill_tensor(init, init.name, drawn[init.name])
    for weight in new_weights:
        _fill_tensor(graph.initializer.add(), weight.name, drawn[weight.name])

    shapes = {w.name: w.shape for w in new_weights}
    new_inputs: list[ValueInfoProto] = []
    listed: set[str] = set()
    for value_info in graph.input:
        if value_info.name not in obsolete:
            new_inputs.append(value_info)
            listed.add(value_info.name)
        for name in shape_inputs.get(value_info.name, []):
            if name not in listed:
                new_inputs.append(_tensor_value_info(name, shapes[name]))
                listed.add(name)
    if out.ir_version < 4:  # every initializer must also be a graph input
        for name, shape in shapes.items():
            if name not in listed:
                new_inputs.append(_tensor_value_info(name, shape))
                listed.add(name)
    del graph.input[:]
    graph.input.extend(new_inputs)

    kept_value_info = [vi for vi in graph.value_info if vi.name not in listed]
    del graph.value_info[:]
    graph.value_info.extend(kept_value_info)
    return out
