"""The rewrite pass: operator chains exporters write for one activation or normalization
become that one ONNX operator, before plugins are chosen.

- ``x * Sigmoid(x)`` -> ``Swish`` (SiLU; x feeds both, which a producer's single-consumer
  fusion cannot absorb), ``x * HardSigmoid(x)`` (1/6, 0.5) -> ``HardSwish``, and so is
  ``x * Clip(x + 3, 0, 6) / 6`` (Paddle's, either order of the product and the division);
- ``0.5 * x * (1 + Erf(x / sqrt 2))`` -> ``Gelu``, and the tanh form
  ``0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`` -> ``Gelu(approximate="tanh")``
  (GPT-2's), in the orders torch and jax2tf write them;
- ``(x - mean) / sqrt(var + eps) * gamma + beta`` over the last axis (ReduceMean, Sub, Pow,
  ReduceMean, Add, Sqrt, Div, Mul, Add) -> ``LayerNormalization``;
- the dynamic-int8 chain ``MatMulInteger -> Cast -> Mul(Mul(x_scale, w_scale)) -> Add``
  -> ``com.microsoft::MatMulIntegerToFloat`` (:mod:`.qdynamic`);
- QDQ chains (DequantizeLinear -> Conv/MatMul -> QuantizeLinear) -> ``QLinearConv`` and
  ``QLinearMatMul`` (:mod:`.qdq`), and the Add, Mul, pooling, Concat and Sigmoid between
  QDQ pairs -> their ``com.microsoft`` integer operators (:mod:`.qdq_ops`).

A chain is replaced only where its intermediate tensors are read by nothing else and are no
graph outputs; the new node carries the opset that defines its operator (and keeps its
result's name), so plugins are selected for it as for any node. ``BuilderConfig(fuse=False)``
turns the pass off with the rest of fusion.

Every QDQ chain starts at a ``DequantizeLinear``: a network without one is not offered the
QDQ rules, and their modules are not imported (a float model's start, issue 30).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from .._record import record, replace
from ..network import Network, Node
from ..plugin import PluginField, PluginFieldCollection

__all__ = ["rewrite"]

#: the opset that defines each operator a rewrite makes
_SINCE = {"Swish": 24, "HardSwish": 14, "Gelu": 20, "LayerNormalization": 17}


@record
class _Graph:
    """The network's nodes (None where a rule removed one), with producers and readers."""

    nodes: list[Node | None]
    constants: dict[str, np.ndarray[Any, Any]]
    outputs: set[str]

    def __post_init__(self) -> None:
        self.producer: dict[str, int] = {}
        self.readers: dict[str, list[int]] = {}
        for i, n in enumerate(self.nodes):
            assert n is not None
            for o in n.outputs:
                if o:
                    self.producer[o] = i
            for x in n.inputs:
                if x:
                    self.readers.setdefault(x, []).append(i)

    def node(self, tensor: str, op: str) -> Node | None:
        """The node of type ``op`` that produces ``tensor`` (and only it), if any."""
        i = self.producer.get(tensor)
        n = self.nodes[i] if i is not None else None
        return n if n is not None and n.op_type == op and not n.domain else None

    def private(self, tensor: str, readers: int = 1) -> bool:
        """Whether ``tensor`` is read by exactly ``readers`` nodes and is no graph output."""
        return len(self.readers.get(tensor, ())) == readers and tensor not in self.outputs

    def scalar(self, tensor: str) -> float | None:
        arr = self.constants.get(tensor)
        return float(arr.reshape(-1)[0]) if arr is not None and arr.size == 1 else None

    def other(self, node: Node, tensor: str) -> str | None:
        """The other input of a two-input node that reads ``tensor``."""
        a, b = (list(node.inputs) + ["", ""])[:2]
        return b if a == tensor else a if b == tensor else None


def _near(value: float | None, want: float, tol: float = 1e-3) -> bool:
    return value is not None and abs(value - want) <= tol * abs(want)


def _node(like: Node, op: str, inputs: list[str], output: str, **attrs: Any) -> Node:
    fields = PluginFieldCollection([PluginField.from_value(k, v) for k, v in attrs.items()])
    return Node(f"{like.name}:{op}", op, "", inputs, [output], fields, _SINCE[op])


def _swish(g: _Graph, i: int, mul: Node) -> tuple[list[int], Node] | None:
    """Mul(x, Sigmoid(x)) or Mul(x, HardSigmoid(x)) in either order."""
    if mul.op_type != "Mul" or len(mul.inputs) != 2:
        return None
    for gate in mul.inputs:
        for op in ("Sigmoid", "HardSigmoid"):
            act = g.node(gate, op)
            if act is None or g.other(mul, gate) != act.inputs[0] or not g.private(gate):
                continue
            if op == "Sigmoid":
                return [g.producer[gate], i], _node(mul, "Swish", [act.inputs[0]],
                                                    mul.outputs[0], alpha=1.0)
            attrs = act.fields.values_dict()
            if _near(attrs.get("alpha", 0.2), 1 / 6) and _near(attrs.get("beta", 0.5), 0.5):
                return [g.producer[gate], i], _node(mul, "HardSwish", [act.inputs[0]],
                                                    mul.outputs[0])
    return None


def _gelu_tail(g: _Graph, one_plus: str) -> tuple[str, list[int], str] | None:
    """``0.5 * x * one_plus`` in torch's orders: (x, the nodes, the result)."""
    m1 = _single(g, one_plus, "Mul")
    other = g.other(m1, one_plus) if m1 is not None else None
    if m1 is None or not other:
        return None
    half = g.node(other, "Mul")
    if half is not None and g.private(other):  # Mul(Mul(x, 0.5), 1 + ...)
        xs = [v for v in half.inputs if not _near(g.scalar(v), 0.5)]
        if len(xs) == 1 and len(half.inputs) == 2:
            return xs[0], [g.producer[other], g.producer[m1.outputs[0]]], m1.outputs[0]
    m2 = _single(g, m1.outputs[0], "Mul")
    if m2 is None:
        return None
    nodes = [g.producer[m1.outputs[0]], g.producer[m2.outputs[0]]]
    if _near(g.scalar(g.other(m2, m1.outputs[0]) or ""), 0.5):  # Mul(Mul(x, 1 + ...), 0.5)
        return other, nodes, m2.outputs[0]
    x = g.other(m2, m1.outputs[0])  # Mul(x, Mul(0.5, 1 + ...)) (jax2tf's)
    if x and _near(g.scalar(other), 0.5):
        return x, nodes, m2.outputs[0]
    return None


def _gelu(g: _Graph, i: int, act: Node) -> tuple[list[int], Node] | None:
    """Erf or Tanh at the heart of a Gelu chain."""
    if act.op_type not in ("Erf", "Tanh") or not g.private(act.outputs[0]):
        return None
    (r,) = g.readers[act.outputs[0]]
    add = g.nodes[r]
    if add is None or add.op_type != "Add" or not _near(
            g.scalar(g.other(add, act.outputs[0]) or ""), 1.0):
        return None
    tail = _gelu_tail(g, add.outputs[0])
    if tail is None:
        return None
    x, tail_nodes, out = tail
    inner = _gelu_inner(g, act, x)
    if inner is None:
        return None
    approximate = "none" if act.op_type == "Erf" else "tanh"
    return [*inner, i, r, *tail_nodes], _node(g.nodes[r] or act, "Gelu", [x], out,
                                              approximate=approximate)


def _gelu_inner(g: _Graph, act: Node, x: str) -> list[int] | None:
    """The nodes between x and the Erf/Tanh: x / sqrt2 (or x * 1/sqrt2) for Erf;
    sqrt(2/pi) * (x + 0.044715 * x^3) for Tanh."""
    u = act.inputs[0]
    if act.op_type == "Erf":
        for op, c in (("Div", math.sqrt(2)), ("Mul", 1 / math.sqrt(2))):
            n = g.node(u, op)
            if n is not None and g.private(u) and n.inputs[0] == x and _near(
                    g.scalar(n.inputs[1]), c):
                return [g.producer[u]]
        return None
    scale = g.node(u, "Mul")
    w = g.other(scale, next((v for v in scale.inputs if _near(
        g.scalar(v), math.sqrt(2 / math.pi))), "")) if scale is not None else None
    add = g.node(w, "Add") if w and g.private(u) and g.private(w) else None
    cube_term = g.other(add, x) if add is not None else None
    cm = g.node(cube_term, "Mul") if cube_term and g.private(cube_term) else None
    if cm is None:
        return None
    product = _monomial(g, cube_term or "", x)
    if product is None or product[0] != 3 or not _near(product[1], 0.044715):
        return None
    return [g.producer[u], g.producer[w or ""], *product[2]]


def _monomial(g: _Graph, tensor: str, x: str) -> tuple[int, float, list[int]] | None:
    """``tensor`` as ``c * x^n`` made by private Mul and Pow nodes in any order (torch's
    ``0.044715 * Pow(x, 3)``, jax2tf's ``x * (x * (0.044715 * x))``): (n, c, the nodes)."""
    if tensor == x:
        return 1, 1.0, []
    c = g.scalar(tensor)
    if c is not None:
        return 0, c, []
    i = g.producer.get(tensor)
    n = g.nodes[i] if i is not None else None
    if n is None or n.domain or not g.private(tensor) or len(n.inputs) != 2:
        return None
    if n.op_type == "Pow" and n.inputs[0] == x and _near(g.scalar(n.inputs[1]), 3.0):
        return 3, 1.0, [i or 0]
    if n.op_type != "Mul":
        return None
    a, b = (_monomial(g, v, x) for v in n.inputs)
    if a is None or b is None:
        return None
    return a[0] + b[0], a[1] * b[1], [*a[2], *b[2], i or 0]


def _axes(g: _Graph, reduce: Node) -> list[int] | None:
    attrs = reduce.fields.values_dict()
    if "axes" in attrs and attrs["axes"] is not None:
        return [int(a) for a in np.atleast_1d(attrs["axes"])]
    if len(reduce.inputs) > 1 and reduce.inputs[1] in g.constants:
        return [int(a) for a in g.constants[reduce.inputs[1]].reshape(-1)]
    return None


def _layer_norm(g: _Graph, i: int, mean: Node) -> tuple[list[int], Node] | None:
    """ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, then Mul gamma, Add beta."""
    if mean.op_type != "ReduceMean" or _axes(g, mean) != [-1] or not g.private(
            mean.outputs[0]):
        return None
    x = mean.inputs[0]
    (rs,) = g.readers[mean.outputs[0]]
    sub = g.nodes[rs]
    if sub is None or sub.op_type != "Sub" or sub.inputs[0] != x or not g.private(
            sub.outputs[0], 2):
        return None
    d = sub.outputs[0]
    pw = next((g.nodes[j] for j in g.readers[d] if (g.nodes[j] or mean).op_type == "Pow"), None)
    div = next((g.nodes[j] for j in g.readers[d] if (g.nodes[j] or mean).op_type == "Div"), None)
    if pw is None or div is None or not _near(g.scalar(pw.inputs[1]), 2.0) or div.inputs[0] != d:
        return None
    chain = [i, rs, g.producer[pw.outputs[0]]]
    var = _single(g, pw.outputs[0], "ReduceMean")
    if var is None or _axes(g, var) != [-1]:
        return None
    add = _single(g, var.outputs[0], "Add")
    eps = g.scalar(g.other(add, var.outputs[0]) or "") if add is not None else None
    sqrt = _single(g, add.outputs[0], "Sqrt") if add is not None else None
    if add is None or eps is None or sqrt is None or div.inputs[1] != sqrt.outputs[0] or \
            not g.private(sqrt.outputs[0]):
        return None
    chain += [g.producer[n.outputs[0]] for n in (var, add, sqrt, div)]
    out, gamma, beta = div.outputs[0], "", ""
    mul = _single(g, out, "Mul")
    if mul is not None and (g.other(mul, out) or "") in g.constants:
        gamma, out = g.other(mul, out) or "", mul.outputs[0]
        chain.append(g.producer[out])
        add2 = _single(g, out, "Add")
        if add2 is not None and (g.other(add2, out) or "") in g.constants:
            beta, out = g.other(add2, out) or "", add2.outputs[0]
            chain.append(g.producer[out])
    if not gamma:
        return None  # LayerNormalization needs a scale; a bare normalization stays as it is
    return chain, _node(mean, "LayerNormalization", [x, gamma, beta] if beta else [x, gamma],
                        out, axis=-1, epsilon=float(eps))


def _single(g: _Graph, tensor: str, op: str) -> Node | None:
    """The one node that reads ``tensor``, if it is an ``op``."""
    if not g.private(tensor):
        return None
    n = g.nodes[g.readers[tensor][0]]
    return n if n is not None and n.op_type == op and not n.domain else None


def _bound(g: _Graph, clip: Node, k: int, name: str) -> float | None:
    """A Clip's lower (k 1) or upper (k 2) bound: its constant input, or its attribute
    before opset 11."""
    if len(clip.inputs) > k and clip.inputs[k]:
        return g.scalar(clip.inputs[k])
    value = clip.fields.values_dict().get(name)
    return None if value is None else float(value)


def _by_six(g: _Graph, tensor: str) -> tuple[Node, str] | None:
    """The node dividing ``tensor`` (its only reader) by 6 (a Div by 6 or a Mul by 1/6), and
    the node's output."""
    for op, factor in (("Div", 6.0), ("Mul", 1.0 / 6.0)):
        n = _single(g, tensor, op)
        if n is not None and (n.inputs[0] == tensor or op == "Mul") and _near(
                g.scalar(g.other(n, tensor) or ""), factor):
            return n, n.outputs[0]
    return None


def _hard_swish_clip(g: _Graph, i: int, add: Node) -> tuple[list[int], Node] | None:
    """``x * Clip(x + 3, 0, 6) / 6`` (Paddle's hardswish) in either order of the product and
    the division: Add, Clip, Mul, Div (or Mul by 1/6) -> HardSwish."""
    if add.op_type != "Add" or len(add.inputs) != 2:
        return None
    three = next((v for v in add.inputs if _near(g.scalar(v), 3.0)), None)
    x = g.other(add, three) if three is not None else None
    clip = _single(g, add.outputs[0], "Clip")
    if x is None or clip is None or not (_bound(g, clip, 1, "min") == 0.0
                                         and _near(_bound(g, clip, 2, "max"), 6.0)):
        return None
    c = clip.outputs[0]
    mul = _single(g, c, "Mul")
    if mul is not None and g.other(mul, c) == x:  # x * clip, then / 6
        six = _by_six(g, mul.outputs[0])
        out = six[1] if six is not None else ""
    else:  # clip / 6, then x * it
        six = _by_six(g, c)
        mul = _single(g, six[1], "Mul") if six is not None else None
        if mul is None or six is None or g.other(mul, six[1]) != x:
            return None
        out = mul.outputs[0]
    if six is None:
        return None
    chain = [i, g.producer[c], g.producer[mul.outputs[0]], g.producer[six[1]]]
    return chain, _node(add, "HardSwish", [x], out)


_RULES: Sequence[Callable[[_Graph, int, Node], tuple[list[int], Node] | None]] = (
    _swish, _gelu, _layer_norm, _hard_swish_clip)


def _qdq_rules(integer: Callable[[str], bool], fresh: dict[str, np.ndarray[Any, Any]],
               extra: dict[str, tuple[list[Node], list[Node]]]
               ) -> list[Callable[[_Graph, int, Node], tuple[list[int], Node] | None]]:
    """The QDQ rules (:mod:`.qdq`, :mod:`.qdq_ops`) for the integer operators ``integer``
    accepts; the constants they make go to ``fresh``, the nodes around one to ``extra``."""
    from .qdq import qdq_conv, qdq_gemm, qdq_matmul
    from .qdq_ops import qdq_between

    rules: list[Callable[[_Graph, int, Node], tuple[list[int], Node] | None]] = []
    if integer("QLinearConv"):
        rules += [partial(qdq_conv, fresh=fresh), partial(qdq_gemm, fresh=fresh, extra=extra)]
    if integer("QLinearMatMul"):
        rules.append(partial(qdq_matmul, fresh=fresh))
    # Add, Mul, pooling, Concat, Sigmoid between QDQ pairs (:mod:`.qdq_ops`)
    # (and DequantizeLinear -> HardSigmoid|Tanh|... -> QuantizeLinear: QLinearLookup)
    rules.append(partial(qdq_between, fresh=fresh, ok=lambda op: integer(
        op if "::" in op else f"com.microsoft::{op}")))
    return rules


def rewrite(network: Network, integer: Callable[[str], bool] = lambda op: True
            ) -> tuple[Network, list[str]]:
    """The network with every chain above (and the QDQ chains of :mod:`.qdq` into the integer
    operators ``integer`` accepts: those the target device has plugins for) replaced by its
    operator; what was replaced."""
    network, prepared = _prepare(network, integer)
    g = _Graph(list(network.nodes), network.constants, {t.name for t in network.outputs})
    fresh: dict[str, np.ndarray[Any, Any]] = {}  # constants the QDQ rules make
    rules: list[Callable[[_Graph, int, Node], tuple[list[int], Node] | None]] = [*_RULES]
    extra: dict[str, tuple[list[Node], list[Node]]] = {}  # nodes around a rewritten one
    if any(n.op_type == "DequantizeLinear" and not n.domain for n in network.nodes):
        rules += _qdq_rules(integer, fresh, extra)
    if any(n.op_type == "MatMulInteger" and not n.domain for n in network.nodes) and integer(
            "com.microsoft::MatMulIntegerToFloat"):
        from .qdynamic import integer_to_float

        rules.append(integer_to_float)
    done: list[str] = []
    for i in range(len(g.nodes)):
        node = g.nodes[i]
        if node is None or node.domain:
            continue
        for rule in rules:
            try:
                found = rule(g, i, node)
            except (KeyError, ValueError, TypeError, IndexError):
                found = None  # a shape of graph the rule does not know: leave it
            if found is None:
                continue
            chain, new = found
            if any(g.nodes[j] is None for j in chain):
                continue
            last = max(chain)
            for j in chain:
                g.nodes[j] = None
            g.nodes[last] = new  # where the result was made: every input is made before
            done.append(f"{new.op_type} from {len(chain)} nodes at {node.name!r}")
            break
    if not done:
        return network, prepared
    nodes = []
    for n in g.nodes:
        if n is not None:
            before, after = extra.get(n.name, ([], []))
            nodes += [*before, n, *after]
    return replace(network, nodes=nodes,
                   constants={**network.constants, **fresh} if fresh else network.constants
                   ), [*prepared, *done]


def _prepare(network: Network, integer: Callable[[str], bool]) -> tuple[Network, list[str]]:
    """The exact rewrites of :mod:`.qdq_prepare` before the rules (NNCF's int8 activations
    as uint8, a MaxPool before its DequantizeLinear; QOperator's 8-bit MaxPool and QGemm),
    where the network has QDQ pairs or QOperator convolutions."""
    if not any(n.op_type in ("DequantizeLinear", "QLinearConv") and not n.domain
               for n in network.nodes):
        return network, []
    from .qdq_prepare import prepare_qdq

    return prepare_qdq(network, integer)
