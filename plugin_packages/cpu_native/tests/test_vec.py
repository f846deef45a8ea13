"""``_vec.c``: products of a few rows (``mi_gemv_f32``, under the Gemm and MatMul plugins),
the mean of the trailing axes (ReduceMean, GlobalAveragePool) and the channel scale of a
squeeze-and-excitation block (Mul), against onnxruntime and float64 NumPy, on the AVX2 and
plain C paths and with 1 and 2 threads."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from mini_infer_cpu_native import _matmul, _native, _vec, squeeze
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core
from mini_infer_core.threads import set_num_threads

RNG = np.random.default_rng(41)


@pytest.fixture(params=["avx2", "plain"])
def isa(request: pytest.FixtureRequest) -> Iterator[str]:
    """The kernels' AVX2 and plain C paths (``_vec.c`` follows the GEMM's setting)."""
    if _native.use_gemm_isa(request.param) != request.param:
        _native.use_gemm_isa(None)
        pytest.skip(f"this CPU cannot run the {request.param} kernels")
    yield request.param
    _native.use_gemm_isa(None)


@pytest.fixture(params=[1, 2])
def threads(request: pytest.FixtureRequest) -> Iterator[int]:
    set_num_threads(request.param)
    yield request.param
    set_num_threads(None)


@pytest.fixture
def gemvs(count_calls: Callable[[Any, str, str], dict[str, int]]) -> dict[str, int]:
    """How often the plugins made matrix-vector calls (a test fails if another path ran)."""
    return count_calls(_vec, "gemv_call", "calls")


def _f(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _model(nodes: list[onnx.NodeProto], feeds: dict[str, np.ndarray],
           inits: dict[str, np.ndarray], opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape))
         for k, v in feeds.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def _check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], *, rtol: float = 1e-5,
           atol: float = 1e-4) -> mini_infer_core.InferenceSession:
    """Our output against onnxruntime's, twice (the second run replays the calls), then on
    other values of the same shapes (calls bound to the arrays read the new values)."""
    sess = mini_infer_core.InferenceSession(model, device="cpu")
    theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = sess.run(None, feeds)[0]
    again = sess.run(None, feeds)[0]
    want = theirs.run(None, feeds)[0]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    np.testing.assert_array_equal(again, got)
    other = {k: _f(*v.shape) for k, v in feeds.items()}
    np.testing.assert_allclose(sess.run(None, other)[0], theirs.run(None, other)[0],
                               rtol=rtol, atol=atol)
    return sess


def _inner(nodes: list[onnx.NodeProto], inputs: list[str]) -> list[onnx.NodeProto]:
    """``nodes`` between Neg nodes (each of ``inputs`` negated first, the output "y" after):
    their arrays are then the engine's own, which it binds calls to (``bind_run``)."""
    renamed = [onnx.NodeProto() for _ in nodes]
    for new, node in zip(renamed, nodes, strict=True):
        new.CopyFrom(node)
        new.input[:] = [f"{i}_n" if i in inputs else i for i in node.input]
        new.output[:] = ["y_n" if o == "y" else o for o in node.output]
    return ([helper.make_node("Neg", [i], [f"{i}_n"]) for i in inputs] + renamed
            + [helper.make_node("Neg", ["y_n"], ["y"])])


# ---- Gemm and MatMul of a few rows ----------------------------------------------------

@pytest.mark.parametrize("m", [1, 2, 3, 4])
@pytest.mark.parametrize(("k", "n"), [(1, 1), (7, 5), (33, 47), (160, 131), (515, 1001)])
def test_gemm_few_rows(isa: str, threads: int, gemvs: dict[str, int], m: int, k: int,
                       n: int) -> None:
    """A Linear layer (transB, bias, Relu) of a few rows, B packed by the build: sizes off
    the 24-column tile and the 8-float vector, K odd; 1-2 rows on the kernel, 3-4 on the
    GEMM; the plain path is cpu_basic's."""
    w, bias = _f(n, k), _f(n)
    model = _model([helper.make_node("Gemm", ["x", "w", "b"], ["g"], transB=1),
                    helper.make_node("Relu", ["g"], ["y"])],
                   {"x": _f(m, k)}, {"w": w, "b": bias})
    _check(model, {"x": _f(m, k)})
    assert (gemvs["calls"] > 0) == (isa == "avx2" and m <= _vec.MAX_ROWS)


@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("c_shape", [None, (1,), (37,), (1, 37), (2, 1), (2, 37)])
def test_gemm_transposes_and_c(gemvs: dict[str, int], trans_a: int, trans_b: int,
                               c_shape: tuple[int, ...] | None) -> None:
    """transA (A read through its strides), transB, alpha and beta, C as a scalar, a bias
    per column, per row or a full residual (2 x 29 @ 29 x 37)."""
    m, k, n = 2, 29, 37
    x = _f(k, m) if trans_a else _f(m, k)
    inits = {"w": _f(n, k) if trans_b else _f(k, n)}
    inputs = ["x", "w"]
    if c_shape is not None:
        inits["c"] = _f(*c_shape)
        inputs.append("c")
    model = _model([helper.make_node("Gemm", inputs, ["y"], transA=trans_a, transB=trans_b,
                                     alpha=0.75, beta=1.5)], {"x": x}, inits)
    _check(model, {"x": x})
    assert gemvs["calls"] > 0


def test_gemm_runtime_b_and_residual(gemvs: dict[str, int]) -> None:
    """B computed (read in place, rows ldb apart) and a runtime C of the output's shape (a
    residual), one row."""
    x, w, c = _f(1, 45), _f(45, 70), _f(1, 70)
    model = _model([helper.make_node("Gemm", ["x", "w", "c"], ["y"])],
                   {"x": x, "w": w, "c": c}, {})
    _check(model, {"x": x, "w": w, "c": c})
    assert gemvs["calls"] > 0


@pytest.mark.parametrize("shape", [(1, 300), (300,), (2, 1, 300), (1, 3, 300), (5, 300)])
def test_matmul_few_rows(threads: int, gemvs: dict[str, int], shape: tuple[int, ...]) -> None:
    """MatMul by a constant weight with its epilogue (bias, residual, Clip): rows after the
    batch is flattened 1-2 take the kernel, 3 and 5 the GEMM; 1-D A too."""
    w, bias = _f(300, 203), _f(203)
    x, r = _f(*shape), _f(*shape[:-1], 203)
    model = _model([helper.make_node("MatMul", ["x", "w"], ["p"]),
                    helper.make_node("Add", ["p", "b"], ["q"]),
                    helper.make_node("Add", ["q", "r"], ["s"]),
                    helper.make_node("Clip", ["s", "lo", "hi"], ["y"])],
                   {"x": x, "r": r}, {"w": w, "b": bias, "lo": np.array(-1.0, np.float32),
                                      "hi": np.array(2.5, np.float32)})
    _check(model, {"x": x, "r": r})
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    assert (gemvs["calls"] > 0) == (rows <= _vec.MAX_ROWS)


def test_batched_matmul_one_row() -> None:
    """A batch of one-row products with their own B (a decoder's attention step): the GEMM's
    batched products, right."""
    a, b = _f(2, 4, 1, 33), _f(2, 4, 33, 17)
    model = _model([helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": a, "b": b}, {})
    _check(model, {"a": a, "b": b})


@pytest.mark.parametrize("panel", [0, 24, 48])
@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_gemv_kernel(isa: str, threads: int, panel: int, m: int) -> None:
    """The kernel itself against float64 NumPy: B packed in panels of 24 or 48 or in place
    (a wider array's columns), A transposed, row and column bias, residual, alpha, clamp,
    K below the four streams' length; 3 and 4 rows (two passes)."""
    for k, n in ((3, 50), (517, 77), (1000, 1280)):
        a = np.ascontiguousarray(_f(k, m)).T
        big = _f(k, n + 9)
        b = big[:, 4: 4 + n]
        bias, cbias, res = _f(m), _f(n), _f(m, n)
        c = np.empty((m, n), np.float32)
        packed = _native.pack_b(b, panel) if panel else b
        _native.run_calls([_vec.gemv_call(a, packed, c, k, panel=panel, bias=bias, cbias=cbias,
                                          res=res, alpha=0.5, lo=-3.0, hi=4.0)])
        want = np.clip(0.5 * (a.astype(np.float64) @ b) + bias[:, None] + cbias + res, -3, 4)
        np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-3 * np.sqrt(k))


def test_gemv_refuses_bad_panel() -> None:
    with pytest.raises(ValueError, match="multiples of 24"):
        _vec.gemv_call(_f(1, 8), _f(8 * 30), np.empty((1, 30), np.float32), 8, panel=30)


def test_product_calls_take_the_kernel_for_few_rows() -> None:
    """_matmul.product_calls: up to MAX_ROWS rows one mi_gemv_f32 call, more the GEMM's."""
    b = _native.pack_b(_f(64, 40), 24)
    for m, kernel in ((1, "mi_gemv_f32"), (2, "mi_gemv_f32"), (3, "mi_matmul_f32")):
        calls = _matmul.product_calls(_f(m, 64), _f(64, 40), np.empty((m, 40), np.float32),
                                      packed_b=b, panels=2)
        assert [c[0].__name__ for c in calls] == [kernel]


# ---- squeeze-and-excitation: ReduceMean, GlobalAveragePool, Mul -------------------------

@pytest.fixture
def binds(count_calls: Callable[[Any, str, str], dict[str, int]]) -> dict[str, int]:
    """How often squeeze's plugins bound a compiled call to a step's arrays."""
    return count_calls(squeeze, "partial", "calls")


@pytest.fixture
def means(count_calls: Callable[[Any, str, str], dict[str, int]]) -> dict[str, int]:
    return count_calls(squeeze, "row_mean_call", "calls")


@pytest.mark.parametrize(("shape", "axes", "keepdims"), [
    ((2, 7, 5, 3), [2, 3], 1), ((2, 7, 5, 3), [-1, -2], 0), ((1, 13, 9, 11), [1, 2, 3], 1),
    ((3, 40), [1], 1), ((2, 3, 4), None, 0), ((1, 960, 7, 7), [2, 3], 1),
    ((1, 5, 1, 1), [2, 3], 1), ((2, 3, 37), [-1], 0)])
@pytest.mark.parametrize("opset", [13, 18])
def test_reduce_mean_trailing(isa: str, means: dict[str, int], binds: dict[str, int],
                              shape: tuple[int, ...],
                              axes: list[int] | None, keepdims: int, opset: int) -> None:
    x = _f(*shape)
    inits: dict[str, np.ndarray] = {}
    inputs = ["x"]
    attrs: dict[str, Any] = {"keepdims": keepdims}
    if axes is not None and opset >= 18:
        inits["axes"] = np.array(axes, np.int64)
        inputs.append("axes")
    elif axes is not None:
        attrs["axes"] = axes
    node = helper.make_node("ReduceMean", inputs, ["y"], **attrs)
    for nodes in ([node], _inner([node], ["x"])):
        model = _model(nodes, {"x": x}, inits, opset=opset)
        _check(model, {"x": x}, rtol=1e-5, atol=1e-6)
    assert means["calls"] > 0
    assert binds["calls"] > 0


@pytest.mark.parametrize("axes", [[1], [0, 1], [1, 2]])
def test_reduce_mean_other_axes(means: dict[str, int], axes: list[int]) -> None:
    """Axes that are not the trailing ones: cpu_basic's, right."""
    x = _f(2, 6, 5, 4)
    model = _model([helper.make_node("ReduceMean", ["x"], ["y"], axes=axes)], {"x": x}, {},
                   opset=13)
    _check(model, {"x": x}, atol=1e-6)
    assert means["calls"] == 0


@pytest.mark.parametrize("shape", [(1, 7, 5, 3), (2, 96, 14, 14), (1, 3, 1, 1), (2, 4, 9),
                                   (2, 96, 28, 29)])  # the last: rows shared by the threads
def test_global_average_pool(isa: str, threads: int, means: dict[str, int],
                             binds: dict[str, int], shape: tuple[int, ...]) -> None:
    x = _f(*shape)
    node = helper.make_node("GlobalAveragePool", ["x"], ["y"])
    for nodes in ([node], _inner([node], ["x"])):
        _check(_model(nodes, {"x": x}, {}), {"x": x}, atol=1e-6)
    assert means["calls"] > 0
    assert binds["calls"] > 0


@pytest.fixture
def scales(count_calls: Callable[[Any, str, str], dict[str, int]]) -> dict[str, int]:
    return count_calls(squeeze, "row_scale_call", "calls")


@pytest.mark.parametrize(("xshape", "sshape", "compiled"), [
    ((1, 72, 28, 28), (1, 72, 1, 1), True), ((2, 7, 5, 3), (2, 7, 1, 1), True),
    ((2, 96, 28, 29), (2, 96, 1, 1), True),  # rows shared by the threads
    ((2, 7, 5, 3), (7, 1, 1), False), ((2, 7, 5, 3), (2, 7, 5, 1), True),
    ((2, 7, 5, 3), (1, 1, 1, 1), True), ((3, 11), (3, 1), True),
    ((2, 7, 5, 3), (1, 7, 1, 1), False), ((2, 7, 5, 3), (2, 7, 5, 3), False),
    ((2, 7, 5, 3), (3,), False)])
@pytest.mark.parametrize("scale_first", [False, True])
def test_se_scale_mul(isa: str, threads: int, scales: dict[str, int], binds: dict[str, int],
                      xshape: tuple[int, ...],
                      sshape: tuple[int, ...], compiled: bool, scale_first: bool) -> None:
    """x * s[..., 1, 1] (either order) of a computed gate (HardSigmoid of a ReduceMean, as in
    MobileNetV3): the compiled rows where s is one value per row over trailing axes,
    cpu_basic's broadcasts otherwise."""
    x, s = _f(*xshape), _f(*sshape)
    inputs = ["g", "x"] if scale_first else ["x", "g"]
    nodes = [helper.make_node("HardSigmoid", ["s"], ["g"]), helper.make_node("Mul", inputs, ["y"])]
    for graph in (nodes, _inner(nodes, ["x", "s"])):
        _check(_model(graph, {"x": x, "s": s}, {}), {"x": x, "s": s}, atol=1e-6)
    assert (scales["calls"] >= 1) == compiled
    assert (binds["calls"] >= 1) == compiled


def test_se_block(threads: int) -> None:
    """The whole block: mean, 1x1 convolutions, HardSigmoid, scale."""
    x = _f(1, 16, 9, 9)
    model = _model([
        helper.make_node("ReduceMean", ["x"], ["m"], axes=[2, 3], keepdims=1),
        helper.make_node("Conv", ["m", "w1", "b1"], ["h"]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Conv", ["r", "w2", "b2"], ["e"]),
        helper.make_node("HardSigmoid", ["e"], ["g"], alpha=1 / 6),
        helper.make_node("Mul", ["x", "g"], ["y"])],
        {"x": x}, {"w1": _f(8, 16, 1, 1), "b1": _f(8), "w2": _f(16, 8, 1, 1), "b2": _f(16)},
        opset=13)
    _check(model, {"x": x}, atol=1e-5)
