"""mini-infer-cpu-native's compiled activations, Softmax / LogSoftmax and LayerNormalization
(``_act.c``) against onnxruntime and onnx's ReferenceEvaluator, through real ONNX models built
into engines whose nodes this distribution's plugins take: odd lengths, empty tensors, rows
of one, large magnitudes, NaN and infinities; every copy of the kernels this CPU runs
(AVX-512F, AVX2+FMA, plain C: forced lower by a test hook) at 1 and 2 threads; the math
itself against float64 on a dense grid; the cases handed back to cpu_basic; the wrappers'
refusals."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from mini_infer_cpu_native import NAMESPACE, _act, activations, softmax
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from threadpoolctl import threadpool_limits

import mini_infer_core

RNG = np.random.default_rng(23)
#: the copies of the kernels this CPU can run (2 AVX-512F, 1 AVX2+FMA, 0 plain C)
_BEST = _act.act_isa()
ISAS = list(range(_BEST + 1))
#: values every elementwise test input starts with
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 100.0, -100.0, 1e4, -1e4, 1e-30,
                    -1e-30, 88.8, -88.8, 20.0, -20.0, 6.0, -6.0, 3.5, -3.5, 0.9, -0.9],
                   np.float32)


@pytest.fixture(params=ISAS, ids=lambda i: ("plain C", "AVX2+FMA", "AVX-512F")[i])
def isa(request: pytest.FixtureRequest) -> Iterator[int]:
    """Each copy of the kernels this CPU runs (the lower ones forced)."""
    _act.set_act_isa(request.param)
    assert _act.act_isa() == request.param
    yield request.param
    _act.set_act_isa(None)


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many compiled calls the plugins made (so a test fails if cpu_basic took over)."""
    count = {"act": 0, "softmax": 0, "layer_norm": 0}
    for name in count:
        module = softmax if name == "softmax" else activations
        real = getattr(module, f"{name}_call")

        def counted(*args: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
            count[_name] += 1
            return _real(*args, **kw)

        monkeypatch.setattr(module, f"{name}_call", counted)
    return count


def _model(op: str, attrs: dict[str, Any], x: np.ndarray, opset: int,
           inits: dict[str, np.ndarray] | None = None, n_out: int = 1) -> onnx.ModelProto:
    inits = inits or {}
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    outs = ["y", "mean", "inv_std"][:n_out]
    node = helper.make_node(op, ["x", *inits], outs, **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", elem, list(x.shape))],
        [helper.make_tensor_value_info(o, elem, None) for o in outs],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=9)


def _check(model: onnx.ModelProto, x: np.ndarray, op: str, rtol: float = 1e-5,
           atol: float = 1e-6, native: bool = True, oracles: tuple[str, ...] = ("ort", "ref")
           ) -> list[np.ndarray]:
    """Built by mini-infer with this distribution's plugin for ``op`` (cpu_basic's where not
    ``native``), run, and compared with onnxruntime and onnx's ReferenceEvaluator.

    onnxruntime's logistic is off by up to ~6e-8 absolutely in its negative tail (where
    sigmoid(-16) is 1.1e-7 it gives 6e-8, and 0 below -17), which Swish multiplies by |x|
    (up to 26 there for alpha 0.7): its Swish is compared at atol 4e-6 (the reference, whose
    float32 formula has no such error, at atol). onnx's reference LogSoftmax is the log of its
    Softmax: -inf where exp underflows (a logit more than ~88 below its row's maximum:
    onnxruntime and we give the finite value), so there it is left to onnxruntime."""
    engine = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(
        device="cpu", time_tactics=False))
    sess = mini_infer_core.InferenceSession(engine)
    spaces = {n.plugin_namespace for n in sess.engine.nodes if n.op_type == op}
    assert spaces == {NAMESPACE if native else "mini_infer.cpu"}
    got = sess.run(None, {"x": x})
    wants = []
    if "ort" in oracles:
        wants.append(ort.InferenceSession(model.SerializeToString(),
                                          providers=["CPUExecutionProvider"]).run(None, {"x": x}))
    if "ref" in oracles:
        with np.errstate(all="ignore"):
            wants.append(ReferenceEvaluator(model).run(None, {"x": x}))
    for oracle, want in zip(oracles, wants, strict=True):
        assert len(got) == len(want)
        tol = max(atol, 4e-6) if oracle == "ort" and op == "Swish" else atol
        for g, w in zip(got, want, strict=True):
            if oracle == "ref" and op == "LogSoftmax":
                w = np.where(np.isneginf(w) & (g < -80), g, w)
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=rtol, atol=tol, err_msg=oracle)
    return got


def _input(shape: tuple[int, ...], scale: float = 4.0) -> np.ndarray:
    x = (RNG.standard_normal(shape) * scale).astype(np.float32)
    flat = x.reshape(-1)
    k = min(flat.size, SPECIAL.size)
    flat[:k] = SPECIAL[:k]
    return x


# (op, attributes, opset)
ELEMENTWISE = [
    ("Erf", {}, 13), ("Gelu", {}, 20), ("Gelu", {"approximate": "tanh"}, 20),
    ("Sigmoid", {}, 13), ("Swish", {}, 24), ("Swish", {"alpha": 0.7}, 24),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, 6), ("HardSwish", {}, 14), ("Tanh", {}, 13),
    ("LeakyRelu", {"alpha": 0.1}, 16),
]
_IDS = [f"{op}{'-' + '-'.join(f'{k}={v}' for k, v in a.items()) if a else ''}"
        for op, a, _ in ELEMENTWISE]


@pytest.mark.parametrize("op, attrs, opset", ELEMENTWISE, ids=_IDS)
@pytest.mark.parametrize("shape", [(1, 3, 37), (5,), (1,), (0, 7)])
def test_elementwise(op: str, attrs: dict[str, Any], opset: int, shape: tuple[int, ...],
                     isa: int, compiled: dict[str, int]) -> None:
    x = _input(shape)
    _check(_model(op, attrs, x, opset), x, op)
    assert compiled["act"] == 1


@pytest.mark.parametrize("op, attrs, opset", ELEMENTWISE, ids=_IDS)
def test_elementwise_on_the_pool(op: str, attrs: dict[str, Any], opset: int, isa: int,
                                 threads: int, compiled: dict[str, int]) -> None:
    """Enough values (an odd count) to be split between the threads."""
    x = _input((3, 11001), scale=30.0)
    _check(_model(op, attrs, x, opset), x, op)
    assert compiled["act"] == 1


def test_a_node_keeps_its_compiled_call_while_its_arrays_stay(compiled: dict[str, int]
                                                               ) -> None:
    """Between two other nodes Gelu reads and writes the engine's arena views, the same
    objects at every run: its call is made once."""
    x = _input((2, 45))
    nodes = [helper.make_node("Neg", ["x"], ["a"]), helper.make_node("Gelu", ["a"], ["b"]),
             helper.make_node("Neg", ["b"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)],
                              ir_version=9)
    sess = mini_infer_core.InferenceSession(mini_infer_core.load(
        model, config=mini_infer_core.BuilderConfig(device="cpu", time_tactics=False)))
    for _ in range(3):
        x = _input((2, 45))
        want = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], want, rtol=1e-5, atol=1e-6)
    assert compiled["act"] == 1  # made once, run three times


SOFTMAX_CASES = [  # shape, axis
    ((2, 7, 37), -1), ((2, 7, 37), 1), ((2, 7, 37), 0), ((3, 1, 5), 1), ((4, 1), -1),
    ((5,), 0), ((2, 0, 3), 1), ((3, 17, 2, 9), 2),
]


def _logits(shape: tuple[int, ...]) -> np.ndarray:
    x = (RNG.standard_normal(shape) * 3).astype(np.float32)
    flat = x.reshape(-1)
    if flat.size >= 8:
        flat[1] = -1e4  # a masked position, as attention masks write it
        flat[3] = -np.inf
        flat[5] = 80.0  # exp would overflow without the maximum taken off
    return x


@pytest.mark.parametrize("log", [False, True], ids=["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("shape, axis", SOFTMAX_CASES)
def test_softmax(shape: tuple[int, ...], axis: int, log: bool, isa: int,
                 compiled: dict[str, int]) -> None:
    op = "LogSoftmax" if log else "Softmax"
    x = _logits(shape)
    _check(_model(op, {"axis": axis}, x, 13), x, op)
    assert compiled["softmax"] == (1 if x.size else 0)


@pytest.mark.parametrize("log", [False, True], ids=["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("shape, axis", [((12, 128, 128), -1), ((4, 96, 50), 1)],
                         ids=["attention", "inner-axis"])
def test_softmax_on_the_pool(shape: tuple[int, ...], axis: int, log: bool, isa: int,
                             threads: int, compiled: dict[str, int]) -> None:
    op = "LogSoftmax" if log else "Softmax"
    x = _logits(shape)
    x[0, 0] -= 1e4  # a whole row of large negative logits: the maximum keeps it finite
    _check(_model(op, {"axis": axis}, x, 13), x, op)
    assert compiled["softmax"] == 1


@pytest.mark.parametrize("log", [False, True], ids=["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis", [1, 2])
def test_softmax_before_opset_13_flattens_at_axis(axis: int, log: bool, isa: int,
                                                  compiled: dict[str, int]) -> None:
    """Against onnxruntime only: onnx's reference runs opset 11's Softmax along the axis
    alone, as opset 13's does, not over the input flattened to 2-D there."""
    op = "LogSoftmax" if log else "Softmax"
    x = _logits((2, 5, 9))
    _check(_model(op, {"axis": axis}, x, 11), x, op, oracles=("ort",))
    assert compiled["softmax"] == 1


@pytest.mark.parametrize("log", [False, True], ids=["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_rows_with_nan_or_inf(axis: int, log: bool, isa: int) -> None:
    """A row holding NaN or +inf is NaN throughout, as onnx's reference computes it; a row of
    one value is 1 (LogSoftmax: 0)."""
    op = "LogSoftmax" if log else "Softmax"
    x = _logits((4, 19))
    x[1, 4] = np.nan
    x[2, 7] = np.inf
    got = _check(_model(op, {"axis": axis}, x, 13), x, op, oracles=("ref",))[0]
    if axis == -1:
        assert np.isnan(got[1]).all() and np.isnan(got[2]).all()
        assert not np.isnan(got[[0, 3]]).any()


@pytest.mark.parametrize("log", [False, True], ids=["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis", [-1, 1])
def test_softmax_far_below_the_maximum(axis: int, log: bool, isa: int) -> None:
    """Logits 0 to 120 below their row's maximum (exp from 1 down past float32's subnormals:
    along the last axis onnxruntime's exp, subnormal down to exp(-103.97) on AVX-512, 0 below
    exp(-88.38) elsewhere; along another axis _act.h's exp_neg, 0 under exp(-87) = 1.6e-38):
    against onnxruntime, and against the float64 formula within 1e-6 relatively or 2e-38
    absolutely (Softmax; LogSoftmax, which takes no exp of the far values, within 1e-6 or
    1e-5)."""
    x = np.stack([-np.linspace(0.0, 120.0, 301, dtype=np.float32)[RNG.permutation(301)]
                  for _ in range(6)]).reshape(2, 3, 301)
    if axis == 1:
        x = np.ascontiguousarray(x.transpose(0, 2, 1))
    op = "LogSoftmax" if log else "Softmax"
    got = _check(_model(op, {"axis": axis}, x, 13), x, op, atol=2e-38, oracles=("ort",))[0]
    x64 = x.astype(np.float64)
    z = x64 - x64.max(axis=axis, keepdims=True)
    want = z - np.log(np.exp(z).sum(axis=axis, keepdims=True))
    if log:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)
        return
    want = np.exp(want)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=2e-38)
    if axis == 1:
        assert (got[want < 1e-39] == 0).all()  # what exp_neg flushes (the reference: subnormal)


@pytest.mark.parametrize("op, opset, ref", [
    ("Sigmoid", 13, lambda x: 1 / (1 + np.exp(-x))),
    ("Tanh", 13, np.tanh),
])
def test_the_exp_neg_functions_far_out(op: str, opset: int, ref: Any, isa: int) -> None:
    """Sigmoid and Tanh take exp of -|x| (exp_neg, which gives 0 where exp is under 1.7e-38):
    on -120 to 120, against onnx's reference (and onnxruntime, but for Sigmoid) and the
    float64 formula within 1e-6 relatively or 2e-38 absolutely; Sigmoid 0 from -87.5 down,
    where float64 gives under 1e-38."""
    x = np.linspace(-120.0, 120.0, 4800, dtype=np.float32).reshape(3, 1600)
    oracles = ("ref",) if op == "Sigmoid" else ("ort", "ref")  # onnxruntime's: see _check
    got = _check(_model(op, {}, x, opset), x, op, rtol=1e-6, atol=2e-38, oracles=oracles)[0]
    with np.errstate(over="ignore"):
        want = ref(x.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=2e-38)
    if op == "Sigmoid":
        assert (got[x < -87.5] == 0).all()


LN_CASES = [  # shape, axis
    ((2, 3, 37), -1), ((2, 3, 37), -2), ((4, 1), -1), ((7,), 0), ((3, 5, 19), 0),
    ((0, 8), -1),
]


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no bias"])
@pytest.mark.parametrize("shape, axis", LN_CASES)
def test_layer_normalization(shape: tuple[int, ...], axis: int, bias: bool, isa: int,
                             compiled: dict[str, int]) -> None:
    a = axis % len(shape)
    norm = shape[a:]
    x = (RNG.standard_normal(shape) * 3 + 2).astype(np.float32)
    inits = {"scale": RNG.standard_normal(norm).astype(np.float32)}
    if bias:
        inits["bias"] = RNG.standard_normal(norm).astype(np.float32)
    model = _model("LayerNormalization", {"axis": axis, "epsilon": 1e-5}, x, 17, inits)
    _check(model, x, "LayerNormalization", rtol=1e-5, atol=2e-6)
    assert compiled["layer_norm"] == (1 if x.size else 0)


@pytest.mark.parametrize("shape", [(1, 128, 768), (1, 3136, 96)], ids=["BERT", "ConvNeXt"])
def test_layer_normalization_on_the_pool_with_mean_and_inv_std_dev(
        shape: tuple[int, ...], isa: int, threads: int, compiled: dict[str, int]) -> None:
    """Large offsets and magnitudes (the variance from the deviations, not the squares), and
    the optional Mean and InvStdDev outputs."""
    n = shape[-1]
    x = (RNG.standard_normal(shape) * 100 + 50).astype(np.float32)
    inits = {"scale": RNG.standard_normal(n).astype(np.float32),
             "bias": RNG.standard_normal(n).astype(np.float32)}
    model = _model("LayerNormalization", {"axis": -1, "epsilon": 1e-3}, x, 17, inits, n_out=3)
    got = _check(model, x, "LayerNormalization", rtol=1e-4, atol=2e-5)
    assert got[1].shape == shape[:-1] + (1,) and got[1].dtype == np.float32
    assert compiled["layer_norm"] == 1


# ---- what stays cpu_basic's -------------------------------------------------------------

def test_float64_inputs_are_cpu_basic_s(compiled: dict[str, int]) -> None:
    x = _input((3, 21)).astype(np.float64)
    for op, opset in (("Sigmoid", 13), ("Tanh", 13), ("Softmax", 13)):
        _check(_model(op, {}, x, opset), x, op, oracles=("ref",))
    assert compiled == {"act": 0, "softmax": 0, "layer_norm": 0}


def test_layer_normalization_with_float64_statistics_is_cpu_basic_s(
        compiled: dict[str, int]) -> None:
    x = (RNG.standard_normal((3, 10)) + 1).astype(np.float32)
    inits = {"scale": np.ones(10, np.float32)}
    model = _model("LayerNormalization", {"stash_type": 11}, x, 17, inits)
    _check(model, x, "LayerNormalization", oracles=("ort",))  # the reference lacks it
    assert compiled["layer_norm"] == 0


def test_strided_views_are_cpu_basic_s(compiled: dict[str, int]) -> None:
    """A plugin handed arrays the kernels cannot read in one block (a transposed view)
    computes them with cpu_basic's NumPy kernel."""
    x = RNG.standard_normal((6, 5)).astype(np.float32).T
    out = np.empty((5, 6), np.float32)
    tanh = activations.Tanh("t")
    tanh.setup()
    tanh.compute(x, out=out)
    np.testing.assert_allclose(out, np.tanh(x), rtol=1e-6)
    plugin = softmax.Softmax_13("s", axis=-1)
    plugin.setup()
    plugin.compute(x, out=out, axis=-1)
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(-1, keepdims=True), rtol=1e-6)
    assert compiled == {"act": 0, "softmax": 0, "layer_norm": 0}


# ---- the math against float64 ---------------------------------------------------------

def _erf64(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _gelu64(x: np.ndarray) -> np.ndarray:
    return x * 0.5 * np.vectorize(math.erfc, otypes=[np.float64])(  # type: ignore[no-any-return]
        -x / math.sqrt(2))


def _sigmoid64(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


#: (function, float64 reference, domain, largest error in ulps: _act.h's documented bound)
MATH = [
    ("exp", np.exp, (-87.0, 88.7), 1.0),
    ("erf", _erf64, (-10.0, 10.0), 1.1),
    ("tanh", np.tanh, (-12.0, 12.0), 2.0),
    ("sigmoid", _sigmoid64, (-80.0, 80.0), 2.5),
    ("gelu", lambda x: _gelu64(x), (-1.0, 10.0), 2.5),
    ("swish", lambda x: x * _sigmoid64(x), (-80.0, 80.0), 3.0),
]


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    w = want.astype(np.float32)
    a = np.abs(w.astype(np.float64))
    ulp = np.where(a < 2.0 ** -126, 2.0 ** -149,
                   np.ldexp(1.0, np.frexp(np.maximum(a, 2.0 ** -126))[1] - 24))
    return np.abs(got.astype(np.float64) - want) / ulp  # type: ignore[no-any-return]


@pytest.mark.parametrize("fn, ref, domain, bound", MATH, ids=[m[0] for m in MATH])
def test_the_math_against_float64(fn: str, ref: Any, domain: tuple[float, float],
                                  bound: float, isa: int) -> None:
    """Every copy within the bound _act.h documents, on 200k points of the domain (plus the
    neighbours of the branch points: erf's 0.9277 and tanh's 0.625)."""
    x = np.concatenate([np.linspace(*domain, 200_001, dtype=np.float32),
                        RNG.uniform(-1, 1, 20_000).astype(np.float32),
                        np.array([0.9277, -0.9277, 0.625, -0.625, 0.9277 * math.sqrt(2),
                                  -0.9277 * math.sqrt(2)], np.float32)])
    x = x[(x >= domain[0]) & (x <= domain[1])]
    y = np.empty_like(x)
    _act.act(fn, x, y, 1.0)  # Swish's alpha: 1 (SiLU)
    with np.errstate(all="ignore"):
        err = _ulps(y, ref(x.astype(np.float64)))
    assert err.max() <= bound, (fn, x[err.argmax()], err.max())


def test_gelu_below_minus_one_within_its_cancellation(isa: int) -> None:
    """Below x = -1, onnxruntime's formula 0.5 x (1 + erf(x / sqrt 2)) cancels where erf is
    near -1: every copy is within an absolute 1.2e-7 |x| of float64 (a few ulps of erf's
    1), as onnxruntime is; -0 or a tiny value from x = -5.6 down."""
    x = np.linspace(-12.0, -1.0, 200_001, dtype=np.float32)
    y = np.empty_like(x)
    _act.act("gelu", x, y)
    err = np.abs(y.astype(np.float64) - _gelu64(x.astype(np.float64)))
    assert (err <= 1.2e-7 * np.abs(x)).all(), (x[err.argmax()], err.max())


def test_erf_without_its_big_branch_is_the_full_computation_bit_for_bit(isa: int) -> None:
    """A vector with no value at or past erf's split (|t| < 0.921875: |x| < 1.3037 in Gelu)
    skips the big branch's polynomial and exp: each value is what it is in a vector that
    needs it (a 3.0 in every fourth lane), bit for bit, for Erf and Gelu, in the whole
    vectors, the partial last one and across the split's neighbours."""
    for fn, edge in (("erf", 0.921875), ("gelu", 1.3037)):
        x = RNG.uniform(-edge, edge, 4099).astype(np.float32)
        x[:6] = [0.0, -0.0, edge, -edge, np.nextafter(np.float32(edge), np.float32(0)),
                 np.float32(1.30373)]
        alone = np.empty_like(x)
        _act.act(fn, x, alone)
        mixed = np.repeat(x, 4)
        mixed[3::4] = 3.0
        y = np.empty_like(mixed)
        _act.act(fn, mixed, y)
        np.testing.assert_array_equal(alone.view(np.uint32), y[0::4].view(np.uint32))


def test_the_vector_copies_agree_with_the_plain_one() -> None:
    """Where the CPU has vector copies, each gives the plain copy's results on every function
    (the same algorithm, products and sums fused or not: a few ulps, more in Gelu-tanh's and
    Swish's far negative tails, where the rounding of the argument of exp is amplified; an
    absolute 1e-7 where HardSigmoid's alpha x + beta cancels, 2.4e-7 |x| where Gelu's
    1 + erf does)."""
    if _BEST == 0:
        pytest.skip("this CPU runs the plain C copy only (no AVX2+FMA)")
    x = np.concatenate([SPECIAL, (RNG.standard_normal(100_003) * 10).astype(np.float32)])
    for fn in _act.ACT_OPS:
        outs = []
        for level in ISAS:
            _act.set_act_isa(level)
            y = np.empty_like(x)
            _act.act(fn, x, y, 0.3, 0.4)
            outs.append(y)
        _act.set_act_isa(None)
        for y in outs[1:]:
            if fn == "gelu":
                finite = np.isfinite(x)
                diff = np.abs(y[finite].astype(np.float64) - outs[0][finite])
                assert (diff <= 1e-5 * np.abs(outs[0][finite]) + 2.4e-7 * np.abs(x[finite])
                        ).all(), fn
                continue
            np.testing.assert_allclose(y, outs[0], rtol=1e-5, atol=1e-7, err_msg=fn)


def _ort_run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]  # type: ignore[no-any-return]


@pytest.mark.parametrize("op, opset", [("Erf", 13), ("Gelu", 20), ("Softmax", 13),
                                       ("LogSoftmax", 13)])
def test_onnxruntimes_arithmetic_bit_for_bit(op: str, opset: int) -> None:
    """Erf, Gelu (approximate "none") and Softmax / LogSoftmax along the last axis compute
    what onnxruntime's CPU kernels compute, in the same order (MLAS's erf kernel and Gelu's
    three passes; its sum-exp kernels' exp, lanes and horizontal sum, then 1 / sum): on this
    CPU's best copy, which follows the MLAS kernel onnxruntime dispatches to on the same CPU,
    the outputs are onnxruntime's bit for bit, where the previous arithmetic (_act.h's own erf,
    its exp_neg and a differently ordered sum) differed in 10-30% of the values by 1-9 ulps
    and moved a dynamically quantized Whisper encoder by 4e-3 (issue 25). NaN aside (MLAS's
    erf gives +-1 for NaN, ours NaN). Rows of 1-300 values: whole vectors, their tails, the
    48-value blocks of onnxruntime's AVX-512 loop; logits far below the maximum."""
    if _BEST == 0:
        pytest.skip("the plain C copy does its products unfused: not onnxruntime's AVX2 order")
    if op in ("Erf", "Gelu"):
        x = np.concatenate([SPECIAL[1:], (RNG.standard_normal(50_001) * 3).astype(np.float32),
                            np.linspace(-12, 12, 20_001, dtype=np.float32)])
        xs = [x]
    else:
        xs = [(RNG.standard_normal((7, n)) * s).astype(np.float32)
              for n in (1, 5, 16, 47, 48, 49, 250, 300) for s in (1.0, 8.0, 40.0)]
    for x in xs:
        model = _model(op, {"axis": -1} if "Softmax" in op else {}, x, opset)
        sess = mini_infer_core.InferenceSession(mini_infer_core.load(
            model, config=mini_infer_core.BuilderConfig(device="cpu", time_tactics=False)))
        got = sess.run(None, {"x": x})[0]
        np.testing.assert_array_equal(got.view(np.uint32), _ort_run(model, x).view(np.uint32),
                                      err_msg=f"{op} {x.shape}")


def test_results_do_not_depend_on_the_thread_count() -> None:
    x = (RNG.standard_normal((64, 1001)) * 5).astype(np.float32)
    outs = []
    for n in (1, 2):
        with threadpool_limits(n, user_api="mini_infer"):
            y, s, ln = np.empty_like(x), np.empty_like(x), np.empty_like(x)
            _act.act("gelu", x, y)
            _act.softmax(x, s, 1)
            _act.layer_norm(x, np.ones(1001, np.float32), None, ln, 64, 1e-5)
            outs.append((y, s, ln))
    for a, b in zip(*outs, strict=True):
        np.testing.assert_array_equal(a, b)


# ---- the wrappers refuse what the kernels would misread -------------------------------

def test_the_wrappers_refuse_arrays_the_kernels_would_misread() -> None:
    x = np.zeros(32, np.float32)
    with pytest.raises(TypeError, match="mi_act_f32: x must be float32"):
        _act.act("erf", x.astype(np.float64), x)
    with pytest.raises(ValueError, match="y holds 16 values, x 32"):
        _act.act("erf", x, np.zeros(16, np.float32))
    with pytest.raises(ValueError, match="y overlaps x without being x itself"):
        _act.act("tanh", x[:16], x[8:24])
    with pytest.raises(ValueError, match="is not C-contiguous"):
        _act.softmax(x.reshape(4, 8).T, np.zeros((8, 4), np.float32), 1)
    with pytest.raises(ValueError, match="read-only"):
        ro = np.zeros(32, np.float32)
        ro.flags.writeable = False
        _act.act("sigmoid", x, ro)
    with pytest.raises(ValueError, match="scale holds 4 values, and must hold 8"):
        _act.layer_norm(x, np.ones(4, np.float32), None, np.empty_like(x), 4, 1e-5)
    with pytest.raises(ValueError, match="unknown function"):
        _act.act("relu6", x, x)
    _act.act("sigmoid", x, x)  # in place: each value read before it is written
    np.testing.assert_array_equal(x, 0.5)
