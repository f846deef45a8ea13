"""Unit tests of the plugin API's value types and the memory planner."""

from __future__ import annotations

import numpy as np
import pytest

from mini_infer_core.engine.memory import plan_memory
from mini_infer_core.plugin import (
    DimExpr,
    DimsExprs,
    PluginField,
    PluginFieldCollection,
    decode_fields,
    encode_fields,
    fields_from_values,
)


def test_dim_expressions_fold_constants_and_evaluate_symbols() -> None:
    n = DimExpr.sym("N")
    h = DimExpr.const(224)
    out = (h + 2 * 3 - 7) // 2 + 1
    assert out.is_constant() and out.get_constant_value() == 112
    e = (n * 3 + 1).ceil_div(2)
    assert not e.is_constant()
    assert e.evaluate({"N": 4}) == 7
    assert DimExpr.from_json(e.to_json()).evaluate({"N": 5}) == 8
    with pytest.raises(ValueError):
        n.get_constant_value()


def test_dims_exprs_display_and_values() -> None:
    d = DimsExprs([DimExpr.sym("batch"), 3], values=None)
    assert d.display() == ("batch", 3)
    assert not d.is_static()
    s = DimsExprs([2], values=[4, -1])
    assert s.values is not None and [v.get_constant_value() for v in s.values] == [4, -1]


def test_fields_round_trip_through_bytes() -> None:
    fc = fields_from_values({"alpha": 0.5, "axes": (1, 2), "mode": "constant",
                             "value": np.array([1.5], np.float32), "n": 3})
    back = decode_fields(encode_fields(fc))
    v = back.values_dict()
    assert v["alpha"] == pytest.approx(0.5) and v["axes"] == (1, 2) and v["n"] == 3
    assert v["mode"] == "constant"
    assert isinstance(v["value"], np.ndarray) and v["value"].tolist() == [1.5]


def test_corrupt_field_bytes_raise_value_error() -> None:
    data = encode_fields(PluginFieldCollection([PluginField.from_value("k", (1, 2, 3))]))
    with pytest.raises(ValueError):
        decode_fields(data[:-5])
    with pytest.raises(ValueError):
        decode_fields(b"XXXX" + data[4:])


def test_memory_plan_reuses_dead_buffers_without_overlap() -> None:
    # a chain: each tensor lives from its producer to its consumer
    sizes = [1000, 2000, 1000, 3000, 500]
    lifetimes = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 4)]
    plan = plan_memory(sizes, lifetimes)
    assert plan.naive_bytes >= sum(sizes)
    assert plan.peak_bytes < plan.naive_bytes
    for i in range(len(sizes)):
        for j in range(i + 1, len(sizes)):
            live = lifetimes[i][0] <= lifetimes[j][1] and lifetimes[j][0] <= lifetimes[i][1]
            if live:
                a = (plan.offsets[i], plan.offsets[i] + sizes[i])
                b = (plan.offsets[j], plan.offsets[j] + sizes[j])
                assert a[1] <= b[0] or b[1] <= a[0], (i, j, a, b)
    assert all(o % 64 == 0 for o in plan.offsets)


def test_memory_plan_random_lifetimes_never_collide() -> None:
    rng = np.random.default_rng(1)
    for _ in range(20):
        n = 30
        sizes = rng.integers(1, 10_000, n).tolist()
        starts = rng.integers(0, 20, n)
        lifetimes = [(int(s), int(s + rng.integers(0, 6))) for s in starts]
        plan = plan_memory(sizes, lifetimes)
        for i in range(n):
            for j in range(i + 1, n):
                if lifetimes[i][0] <= lifetimes[j][1] and lifetimes[j][0] <= lifetimes[i][1]:
                    ai, aj = plan.offsets[i], plan.offsets[j]
                    assert ai + sizes[i] <= aj or aj + sizes[j] <= ai


def test_equal_expressions_are_equal_however_they_were_built() -> None:
    """Sums and products are kept in canonical form: what reshapes and broadcasts compute
    reduces to the dimension it is (no growing max() chains), and evaluation agrees with
    plain integer arithmetic."""
    n, t, h = DimExpr.sym("N"), DimExpr.sym("T"), DimExpr.sym("H")
    assert ((n * 12) // 12).same_as(n) and ((n * t * 768) // (n * t * 12)).same_as(64)
    assert (t * n - n * t).same_as(0) and n.max(n).same_as(n)
    assert ((n + 1) * (t + 2)).same_as(n * t + 2 * n + t + 2)
    assert n.max(n + 1).same_as(n + 1) and n.min(-1).same_as(-1)  # decided by bounds
    assert not (n // 2).same_as(n) and not ((n + 1) // 2).same_as((n + 2) // 2)
    nested = n
    for _ in range(200):  # a chain exporters write: reshape back and forth, broadcast
        nested = ((nested * 12) // 12).max((nested * 3) // 3) + 0
    assert nested.same_as(n) and len(str(nested)) < 5
    exprs = [(n + 5) // 2 * 3 - t, (h * 2 + 1).ceil_div(3), n.max(t) * h - 7]
    for values in ({"N": 3, "T": 4, "H": 5}, {"N": 0, "T": 9, "H": 1}):
        got = [e.evaluate(values) for e in exprs]
        n_, t_, h_ = values["N"], values["T"], values["H"]
        assert got == [(n_ + 5) // 2 * 3 - t_, -(-(h_ * 2 + 1) // 3), max(n_, t_) * h_ - 7]
        for e in exprs:  # the engine file's form gives back the same expression
            assert DimExpr.from_json(e.to_json()).evaluate(values) == e.evaluate(values)
