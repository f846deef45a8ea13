"""The MatMul plugin (``matmul.py``) and the products under it (``_matmul.py``, the compiled
GEMM's ``mi_matmul_f32``): whole models against onnxruntime and onnx's ReferenceEvaluator
(every rank, broadcast batches, 1-D operands, sizes off the tiles, 1 and 0, constant and
computed B, Transpose nodes feeding it, the nodes it fuses), on every GEMM kernel this CPU
runs (AVX-512, AVX2 + FMA, the plain C loops) and with 1 and 2 threads; the products of
strided views against float64 NumPy, read in place."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from mini_infer_cpu_native import _matmul, _native, matmul
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import mini_infer_core
from mini_infer_core.threads import set_num_threads

RNG = np.random.default_rng(23)


@pytest.fixture(params=["avx512", "avx2", "plain"])
def isa(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every code path of the GEMM this CPU can run (the plain C loops make the plugins take
    cpu_basic's NumPy path, as on a CPU without AVX2: checked there too)."""
    if _native.use_gemm_isa(request.param) != request.param:
        _native.use_gemm_isa(None)
        pytest.skip(f"this CPU cannot run the GEMM's {request.param} kernels")
    yield request.param
    _native.use_gemm_isa(None)


@pytest.fixture
def compiled(count_calls: Callable[[Any, str, str], dict[str, int]]) -> dict[str, int]:
    """How often the plugins made compiled products (so a test fails if NumPy took over)."""
    return count_calls(_matmul, "product_calls", "products")


def _packed_kind() -> int | None:
    """The ``__wpacked__`` a build here gives a constant B: 2 (panels of 24) where the AVX2
    kernels run, 1 (of 48) with AVX-512, None without the vector kernels."""
    return {"avx2": 2, "avx512": 1}.get(_native.gemm_isa())


def _f(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (scale * RNG.standard_normal(shape)).astype(np.float32)


def _model(nodes: list[onnx.NodeProto], feeds: dict[str, np.ndarray],
           inits: dict[str, np.ndarray], opset: int = 17) -> onnx.ModelProto:
    elem = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32}
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(k, elem[v.dtype], list(v.shape)) for k, v in feeds.items()],
        [helper.make_tensor_value_info("y", elem[next(iter(feeds.values())).dtype], None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def _check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], *, rtol: float = 1e-5,
           atol: float = 1e-4) -> mini_infer_core.InferenceSession:
    """Our output against onnxruntime's and the ReferenceEvaluator's; twice (the second run
    replays the calls the first one made)."""
    sess = mini_infer_core.InferenceSession(model, device="cpu")
    got = sess.run(None, feeds)[0]
    again = sess.run(None, feeds)[0]
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    ref = ReferenceEvaluator(model).run(None, feeds)[0]
    assert got.shape == want.shape == np.shape(ref)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)
    np.testing.assert_array_equal(got, again)
    return sess


def _ours(sess: mini_infer_core.InferenceSession, op: str = "MatMul") -> Any:
    nodes = [n for n in sess.engine.nodes if n.op_type == op]
    assert nodes and all(n.plugin_namespace == "mini_infer.cpu_native" for n in nodes)
    return nodes[0].plugin


SHAPES = [
    ((5, 7), (7, 3)),
    ((2, 5, 7), (7, 30)),                # activations of rank 3 x a weight: one GEMM
    ((2, 3, 9, 16), (16, 25)),
    ((3, 5, 7), (1, 7, 4)),              # a weight with a batch of one
    ((3, 17, 8), (3, 8, 33)),            # a batch of products
    ((2, 1, 6, 5), (3, 5, 7)),           # batch dimensions broadcast both ways
    ((1, 12, 13, 8), (1, 12, 8, 13)),    # attention's Q.K^T
    ((2, 2, 3, 4, 5), (2, 1, 5, 6)),     # rank 5: a call per leading index
    ((7,), (7, 4)),                      # 1-D operands, promoted
    ((4, 7), (7,)),
    ((7,), (7,)),
    ((3, 4, 7), (7,)),
    ((1, 1), (1, 1)),
    ((49, 25), (25, 1)),                 # one column
    ((1, 300), (300, 70)),               # one row
    ((197, 96), (96, 130)),              # tails of every tile
    ((23, 0), (0, 5)),                   # K = 0: zeros
    ((0, 5), (5, 3)),                    # no rows
    ((3, 5), (5, 0)),                    # no columns
]


@pytest.mark.parametrize("ashape, bshape", SHAPES)
@pytest.mark.parametrize("constant_b", [True, False])
def test_products_of_every_rank(ashape: tuple[int, ...], bshape: tuple[int, ...],
                                constant_b: bool, isa: str, compiled: dict[str, int]) -> None:
    a, b = _f(*ashape), _f(*bshape)
    feeds = {"a": a} if constant_b else {"a": a, "b": b}
    model = _model([helper.make_node("MatMul", ["a", "b"], ["y"])], feeds,
                   {"b": b} if constant_b else {})
    sess = _check(model, feeds)
    plugin = _ours(sess)
    packed = constant_b and len(bshape) >= 2 and set(bshape[:-2]) <= {1} and isa != "plain"
    assert bool(plugin.hidden.get("__wpacked__")) == packed
    assert (compiled["products"] > 0) == (isa != "plain")  # the compiled GEMM ran


def test_a_weight_shared_by_two_products_is_read_where_it_is() -> None:
    """A constant read by two nodes is not reordered by the build (the other reader would
    see the panels): each MatMul reads it as it is, and packs its own copy at the first run."""
    x, w = _f(6, 10), _f(10, 9)
    nodes = [helper.make_node("MatMul", ["a", "w"], ["p"]),
             helper.make_node("Relu", ["a"], ["a2"]),
             helper.make_node("MatMul", ["a2", "w"], ["r"]),
             helper.make_node("Sub", ["p", "r"], ["y"])]
    model = _model(nodes, {"a": x}, {"w": w})
    sess = _check(model, {"a": x})
    assert not any(n.plugin.hidden.get("__wpacked__") for n in sess.engine.nodes
                   if n.op_type == "MatMul")


@pytest.mark.parametrize("perm_a, perm_b, ashape, bshape", [
    ((0, 2, 1), None, (2, 8, 5), (2, 8, 6)),            # A^T
    (None, (0, 1, 3, 2), (1, 4, 10, 8), (1, 4, 10, 8)),  # Q.K^T, both computed
    ((1, 0), (1, 0), (9, 4), (33, 9)),
])
@pytest.mark.parametrize("constant_b", [True, False])
def test_transpose_nodes_feeding_a_product(perm_a: tuple[int, ...] | None,
                                          perm_b: tuple[int, ...] | None,
                                          ashape: tuple[int, ...], bshape: tuple[int, ...],
                                          constant_b: bool) -> None:
    a, b = _f(*ashape), _f(*bshape)
    nodes = []
    left, right = "a", "b"
    if perm_a:
        nodes.append(helper.make_node("Transpose", ["a"], ["at"], perm=list(perm_a)))
        left = "at"
    if perm_b:
        nodes.append(helper.make_node("Transpose", ["b"], ["bt"], perm=list(perm_b)))
        right = "bt"
    nodes.append(helper.make_node("MatMul", [left, right], ["y"]))
    feeds = {"a": a} if constant_b else {"a": a, "b": b}
    _check(_model(nodes, feeds, {"b": b} if constant_b else {}), feeds)


def _fused(after: list[tuple[str, list[str], dict[str, Any]]], m: int = 10, k: int = 12,
           n: int = 14, batch: tuple[int, ...] = (2,)) -> tuple[onnx.ModelProto,
                                                                dict[str, np.ndarray]]:
    """x (batch, m, k) @ w (k, n), then each (op, its other inputs, attributes) in turn."""
    inits: dict[str, np.ndarray] = {"w": _f(k, n, scale=0.3)}
    feeds = {"x": _f(*batch, m, k), "r": _f(*batch, m, n)}
    consts = {"bias": _f(n), "bias3": _f(1, 1, n), "half": np.array(0.5, np.float32),
              "eight": np.array(8.0, np.float32), "col": _f(m, 1), "big": _f(3, 1, 1, n),
              "lo": np.array(-0.4, np.float32), "hi": np.array(0.9, np.float32)}
    nodes = [helper.make_node("MatMul", ["x", "w"], ["t0"])]
    for i, (op, others, attrs) in enumerate(after):
        for o in others:
            if o in consts:
                inits[o] = consts[o]
        out = "y" if i == len(after) - 1 else f"t{i + 1}"
        nodes.append(helper.make_node(op, [f"t{i}", *others], [out], **attrs))
    used = {x for nd in nodes for x in nd.input}
    return _model(nodes, {k: v for k, v in feeds.items() if k in used}, inits), \
        {k: v for k, v in feeds.items() if k in used}


@pytest.mark.parametrize("after, fused", [
    ([("Add", ["bias"], {}), ("Relu", [], {})], ["MatMul"]),           # a Linear + ReLU
    ([("Add", ["bias3"], {}), ("Add", ["r"], {}), ("Clip", ["lo", "hi"], {})], ["MatMul"]),
    ([("Add", ["r"], {}), ("Add", ["bias"], {})], ["MatMul"]),         # residual, then bias
    ([("Div", ["eight"], {}), ("Add", ["r"], {})], ["MatMul"]),        # attention's scale
    ([("Add", ["bias"], {}), ("Mul", ["half"], {}), ("Relu", [], {})], ["MatMul"]),
    ([("Add", ["bias"], {}), ("Add", ["bias3"], {})], ["MatMul"]),     # two biases: one
    ([("Relu", [], {}), ("Add", ["bias"], {})], ["MatMul", "Add"]),    # nothing after it
    ([("Add", ["r"], {}), ("Mul", ["half"], {})], ["MatMul", "Mul"]),  # it would scale r
    ([("Add", ["col"], {})], ["MatMul", "Add"]),                       # varies along rows
    ([("Add", ["big"], {})], ["MatMul", "Add"]),                       # grows the output
    ([("Clip", [], {"min": -0.2, "max": 0.3})], ["MatMul"]),           # opset-6 Clip
])
def test_the_nodes_a_product_takes_on(after: list[tuple[str, list[str], dict[str, Any]]],
                                      fused: list[str], isa: str,
                                      compiled: dict[str, int]) -> None:
    model, feeds = _fused(after)
    if any(attrs for _, _, attrs in after):
        model.opset_import[0].version = 9  # Clip's bounds as attributes (before opset 11)
    sess = _check(model, feeds)
    assert [n.op_type for n in sess.engine.nodes] == fused
    took = set(_ours(sess).hidden) & {"__bias__", "__residual__", "__alpha__", "__clip__"}
    assert bool(took) == (after[0][1] not in (["col"], ["big"]))
    assert (compiled["products"] > 0) == (isa != "plain")


def test_a_fused_product_survives_the_engine_file(tmp_path: Path) -> None:
    """Packed weights, a fused bias, residual, scale and clamp, written and read back in
    another process."""
    model, feeds = _fused([("Div", ["eight"], {}), ("Add", ["bias"], {}), ("Add", ["r"], {}),
                           ("Relu", [], {})], m=33, k=70, n=50)
    engine = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(device="cpu"))
    plugin = engine.nodes[0].plugin  # type: ignore[attr-defined]
    assert [n.op_type for n in engine.nodes] == ["MatMul"]
    assert plugin.hidden.get("__wpacked__") == _packed_kind()
    path = tmp_path / "fused.engine"
    engine.save(str(path))
    for name, value in feeds.items():
        np.save(tmp_path / f"{name}.npy", value)
    script = (
        "import sys, numpy as np, mini_infer_core as mi\n"
        "d = sys.argv[2]\n"
        "s = mi.InferenceSession(sys.argv[1], device='cpu')\n"
        "feeds = {k: np.load(f'{d}/{k}.npy') for k in ('x', 'r')}\n"
        "np.save(f'{d}/y.npy', s.run(None, feeds)[0])\n")
    subprocess.run([sys.executable, "-c", script, str(path), str(tmp_path)], check=True,
                   timeout=300)
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), want, rtol=1e-5, atol=1e-4)


def test_packed_weights_are_unpacked_where_the_compiled_gemm_cannot_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An engine built with packed weights, run where the vector kernels are missing (a CPU
    without AVX2 loading it): NumPy gets B in ONNX's order, and the fused epilogue."""
    if not _native.gemm_available():
        pytest.skip("no vector kernels here: nothing is packed")
    model, feeds = _fused([("Mul", ["half"], {}), ("Add", ["bias"], {}), ("Relu", [], {})])
    engine = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(device="cpu"))
    assert engine.nodes[0].plugin.hidden["__wpacked__"] == _packed_kind()  # type: ignore[attr-defined]
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    monkeypatch.setattr(matmul, "gemm_available", lambda: False)
    got = mini_infer_core.InferenceSession(engine).run(None, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_one_thread_and_two_give_the_same_sums() -> None:
    """Each output is one thread's sum in k order: the split between threads changes
    nothing, in a single product, a batch of them and a product with its epilogue."""
    model, feeds = _fused([("Add", ["bias"], {}), ("Add", ["r"], {})], m=150, k=300, n=200)
    qk_feeds = {"q": _f(12, 64, 40), "k": _f(12, 40, 64)}
    qk = _model([helper.make_node("MatMul", ["q", "k"], ["y"])], qk_feeds, {})
    results: dict[int, list[np.ndarray]] = {}
    try:
        for threads in (1, 2):
            set_num_threads(threads)
            results[threads] = [
                mini_infer_core.InferenceSession(model, device="cpu").run(None, feeds)[0],
                mini_infer_core.InferenceSession(qk, device="cpu").run(None, qk_feeds)[0]]
    finally:
        set_num_threads(None)
    for one, two in zip(results[1], results[2], strict=True):
        np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("bshape", [(9, 30), (4, 9, 30)])
def test_operands_computed_are_read_on_each_run(bshape: tuple[int, ...]) -> None:
    """B (and A, the residual) computed, the same arena views from run to run with other
    values: the recorded calls read them where they are, nothing kept from the run before."""
    nodes = [helper.make_node("Neg", [f"{x}_in"], [x]) for x in "abr"]
    nodes += [helper.make_node("MatMul", ["a", "b"], ["p"]),
              helper.make_node("Add", ["p", "r"], ["s"]), helper.make_node("Neg", ["s"], ["y"])]
    a, b, r = _f(4, 5, 9), _f(*bshape), _f(4, 5, 30)
    model = _model(nodes, {"a_in": a, "b_in": b, "r_in": r}, {})
    sess = mini_infer_core.InferenceSession(model, device="cpu")
    assert [n.op_type for n in sess.engine.nodes].count("Add") == 0  # the residual is fused
    for _ in range(3):
        got = -sess.run(None, {"a_in": -a, "b_in": -b, "r_in": -r})[0]
        np.testing.assert_allclose(got, np.matmul(a.astype(np.float64), b) + r, rtol=1e-5,
                                   atol=1e-5)
        a, b, r = a * 0.5 + 1.0, b * -2.0, r - 3.0


def test_integer_products_are_cpu_basics(compiled: dict[str, int]) -> None:
    a = RNG.integers(-50, 50, (4, 6, 7)).astype(np.int32)
    b = RNG.integers(-50, 50, (7, 5)).astype(np.int32)
    model = _model([helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": a}, {"b": b})
    sess = _check(model, {"a": a}, rtol=0, atol=0)
    assert not _ours(sess).hidden.get("__wpacked__") and compiled["products"] == 0


# ---- the products under the plugin, on views ---------------------------------------------

def _views() -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(what, A, B) pairs of views the GEMM reads where they are."""
    a, b = _f(30, 41), _f(41, 27)
    big = _f(4, 30, 90)
    return [
        ("A transposed", np.ascontiguousarray(a.T).T, b),
        ("A's rows apart, every other column", _f(30, 82)[:, ::2], b),
        ("A reversed", a[::-1], b),
        ("A broadcast over a batch", np.broadcast_to(a, (3, 30, 41)), _f(3, 41, 27)),
        ("B's rows apart", a, _f(41, 60)[:, 5:32]),
        ("a batch sliced out of a larger one", big[:, :, 10:51], _f(4, 41, 27)),
        ("B transposed (packed on each run)", a, np.ascontiguousarray(b.T).T),
        ("a batch of B transposed (copied on each run)", _f(2, 30, 41),
         np.swapaxes(_f(2, 27, 41), 1, 2)),
    ]


@pytest.mark.parametrize("what, a, b", _views(), ids=[v[0] for v in _views()])
def test_views_are_read_through_their_strides(what: str, a: np.ndarray, b: np.ndarray,
                                              isa: str) -> None:
    if isa == "plain":
        pytest.skip("the plugins take NumPy's path without vector kernels")
    out = np.full(np.matmul(a[..., :1, :], b).shape[:-2] + (a.shape[-2], b.shape[-1]),
                  np.nan, np.float32)
    calls = _matmul.product_calls(a, b, out)
    _native.run_calls(calls)
    np.testing.assert_allclose(out, np.matmul(a.astype(np.float64), b), rtol=1e-5, atol=1e-5)
    last = calls[-1][1][0].contents
    if "packed" not in what and "copied" not in what:
        assert len(calls) == 1
        assert last.a == a.__array_interface__["data"][0]  # A where it is, no copy
        assert last.b == b.__array_interface__["data"][0]


@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (4, 7, 24), (9, 33, 25), (31, 64, 47),
                                     (8, 256, 48), (130, 20, 3), (3, 200, 97),
                                     # K in blocks (AVX2: M over 16, K over 512), the last one short
                                     (37, 777, 29), (21, 1100, 50), (70, 513, 200),
                                     (20, 600, 49),  # one column left: not a GEMV
                                     # rows of one block up to 7/4 of one (AVX2), and over
                                     (197, 600, 50), (300, 520, 30)])
def test_the_vector_kernels_agree_with_the_plain_loops(m: int, k: int, n: int) -> None:
    """The same products (both operands packed, and in place with their epilogue) on every
    kernel this CPU has, against float64 and each other."""
    a, b = _f(m, k), _f(k, n)
    cb, r = _f(n), _f(m, n)
    want = np.clip(0.5 * (a.astype(np.float64) @ b) + cb + r, -1.0, 2.0)
    got = {}
    try:
        for isa in ("plain", "avx2", "avx512"):
            if _native.use_gemm_isa(isa) != isa:
                continue
            packed = np.empty((1, 1, m, n), np.float32)
            _native.matmul(_native.pack_a(a), _native.pack_b(b), packed, k, a_packed=True,
                           b_packed=True)
            np.testing.assert_allclose(packed[0, 0], a.astype(np.float64) @ b, rtol=1e-5,
                                       atol=1e-5 * np.sqrt(k))
            for kind, width in ((1, _native.B_PANEL), (2, _native.B_PANEL_AVX2)):
                # a MatMul's weights: A in place, B in panels of 48 or 24, the epilogue
                c = np.empty((1, 1, m, n), np.float32)
                _native.matmul(a[None, None], _native.pack_b(b, width), c, k, b_packed=kind,
                               cbias=cb, res=r[None, None], alpha=0.5, lo=-1.0, hi=2.0)
                np.testing.assert_allclose(c[0, 0], want, rtol=1e-5, atol=1e-5 * np.sqrt(k),
                                           err_msg=f"{isa}, panels of {width}")
            c = np.empty((1, 1, m, n), np.float32)
            _native.matmul(a[None, None], b[None, None], c, k, cbias=cb, res=r[None, None],
                           alpha=0.5, lo=-1.0, hi=2.0)
            np.testing.assert_allclose(c[0, 0], want, rtol=1e-5, atol=1e-5 * np.sqrt(k))
            got[isa] = c
    finally:
        _native.use_gemm_isa(None)
    assert "plain" in got and len(got) >= (2 if _native.gemm_available() else 1)


@pytest.mark.parametrize("width", [48, 24])
def test_packing_b_undoes(width: int) -> None:
    for k, n in [(5, 1), (7, 48), (3, 50), (9, 97), (1, 200), (4, 23), (6, 24)]:
        b = _f(k, n)
        packed = _native.pack_b(b, width)
        np.testing.assert_array_equal(_native.unpack_b(packed, k, n, width), b)
        np.testing.assert_array_equal(_native.unpack_b(_native.pack_b(
            np.ascontiguousarray(b.T).T, width), k, n, width), b)
    packed = _native.pack_b(np.arange(2 * 30, dtype=np.float32).reshape(2, 30), width)
    first = np.r_[0:width, 30:30 + width] if width < 30 else np.r_[0:60]
    np.testing.assert_array_equal(packed[: first.size], first)  # K rows of the first panel


def test_panels_of_another_width_are_refused() -> None:
    with pytest.raises(ValueError, match="panels of 16 columns"):
        _native.pack_b(_f(3, 4), 16)
    with pytest.raises(ValueError, match="b_packed 3"):
        _native.matmul(_f(1, 1, 2, 3), _native.pack_b(_f(3, 4)), np.empty((1, 1, 2, 4),
                       np.float32), 3, b_packed=3)


@pytest.mark.parametrize("kind", [1, 2])
def test_an_engine_of_either_panel_width_runs_on_every_kernel(
        kind: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Weights packed in panels of 48 (AVX-512 builds, engines of before) or of 24 (AVX2
    builds), written to an engine file and read back, give onnxruntime's results on every
    kernel this CPU has (the NumPy path after unpacking them where none runs)."""
    if not _native.gemm_available():
        pytest.skip("no vector kernels here: nothing is packed")
    monkeypatch.setattr(matmul, "_panels", lambda: kind)
    model, feeds = _fused([("Add", ["bias"], {}), ("Add", ["r"], {})], m=37, k=600, n=100)
    engine = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(device="cpu"))
    assert engine.nodes[0].plugin.hidden["__wpacked__"] == kind  # type: ignore[attr-defined]
    path = tmp_path / "w.engine"
    engine.save(str(path))
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    try:
        for isa in ("avx512", "avx2", "plain"):
            if _native.use_gemm_isa(isa) != isa:
                continue
            got = mini_infer_core.InferenceSession(str(path), device="cpu").run(None, feeds)[0]
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4, err_msg=isa)
    finally:
        _native.use_gemm_isa(None)
