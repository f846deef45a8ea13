"""Issue 29, item 15: nested max/min dimension expressions are simplified before anyone sees
them. Magika's output shape read ``max(max(max(max(min(1000000000, unk__214), unk__214), ...)``;
it is ``unk__214``. The oracle of the simplification is Python's own ``max``/``min`` over the
same expression tree evaluated with plain integers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_infer_core.plugin import DimExpr

N, H, C = DimExpr.sym("N"), DimExpr.sym("H"), DimExpr.sym("C")
BIG = 1_000_000_000


def test_magikas_chain_is_its_symbol() -> None:
    u = DimExpr.sym("unk__214")
    e = u.min(BIG).max(u)  # a Slice to 1e9, then broadcasts against the batch
    for _ in range(3):
        e = e.max(u)
    assert str(e) == "unk__214"


@pytest.mark.parametrize("expr, text", [
    (N.max(H).max(C), "max(C, H, N)"),                 # nested: one flat list
    (C.max(N.max(H)), "max(C, H, N)"),                 # in the order of the text
    (N.max(H).max(N).max(H), "max(H, N)"),             # duplicates once
    (N.min(H).min(N.min(C)), "min(C, H, N)"),
    (N.max(N.min(H)), "N"), (N.min(N.max(H)), "N"),   # absorption
    (N.max(H).max(H.min(C)), "max(H, N)"),             # max(.., H, min(H, C)): H covers it
    (N.max(3).max(5), "max(5, N)"),                    # the constants as one
    (N.min(3).min(5).min(H), "min(3, H, N)"),
    (N.max(0), "N"), ((N - 1).max(N), "N"),            # bounds decide (a dimension >= 0)
    ((N + 2).min(N.max(H)).min(N), "N"),
])
def test_nested_min_max_read_simply(expr: DimExpr, text: str) -> None:
    assert str(expr) == text


def test_the_same_set_is_the_same_expression_however_nested() -> None:
    a = N.max(H).max(C.max(N))
    b = C.max(H).max(N)
    assert a.same_as(b) and str(a) == str(b) == "max(C, H, N)"
    assert DimExpr.from_json(a.to_json()).same_as(a)  # the engine file keeps it


#: a random expression over N, H, C and small constants: (DimExpr, the same on plain ints)
Pair = tuple[DimExpr, Callable[[dict[str, int]], int]]


def _leaf(draw: Any) -> Pair:
    if draw(st.booleans()):
        name = draw(st.sampled_from("NHC"))
        return DimExpr.sym(name), lambda v, name=name: v[name]
    k = draw(st.integers(0, 9))
    return DimExpr.const(k), lambda v, k=k: k


@st.composite
def _exprs(draw: Any, depth: int = 4) -> Pair:
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return _leaf(draw)
    (a, fa), (b, fb) = draw(_exprs(depth - 1)), draw(_exprs(depth - 1))
    op = draw(st.sampled_from(["max", "min", "+", "-"]))
    if op == "max":
        return a.max(b), lambda v: max(fa(v), fb(v))
    if op == "min":
        return a.min(b), lambda v: min(fa(v), fb(v))
    if op == "+":
        return a + b, lambda v: fa(v) + fb(v)
    return a - b, lambda v: fa(v) - fb(v)


@settings(max_examples=300, deadline=None)
@given(_exprs(), st.lists(st.integers(0, 12), min_size=3, max_size=3))
def test_simplified_expressions_keep_their_value(pair: Pair, values: list[int]) -> None:
    expr, plain = pair
    bindings = dict(zip("NHC", values, strict=True))
    assert expr.evaluate(bindings) == plain(bindings), str(expr)
    assert DimExpr.from_json(expr.to_json()).evaluate(bindings) == plain(bindings)


def test_magikas_output_shape_is_its_batch_dimension() -> None:
    pytest.importorskip("magika", reason="Magika's model ships in the magika wheel (test extra)")
    import subprocess
    import sys
    from pathlib import Path

    import mini_infer_core as mi

    script = Path(__file__).resolve().parents[1] / "scripts" / "identify_files.py"
    model = subprocess.run([sys.executable, str(script), "--model"], capture_output=True,
                           text=True, check=True, timeout=300).stdout.strip()
    sess = mi.InferenceSession(model)
    (batch, _) = sess.get_inputs()[0].shape
    assert sess.get_outputs()[0].shape == [batch, 214]
