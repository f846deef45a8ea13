"""LSTM, GRU and RNN on the compiled kernel (``_rnn.c``; the plugins of
:mod:`mini_infer_cpu_native.rnn`) against onnxruntime: directions, layouts (onnxruntime has
only layout 0: a layout-1 model is compared with its layout-0 twin on transposed inputs),
batch 1 and above, odd hidden sizes, sequence_lens shorter than the sequence, initial states,
clip, peepholes, coupled gates, GRU's linear_before_reset, two layers in one model, an empty
batch; the AVX-512, AVX2 and plain C cells; 1 and 2 threads; weights packed by the build and
read back from an engine file; activations the kernel does not compute left to cpu_basic's."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from mini_infer_cpu_native import _act, _native, rnn
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import mini_infer_core

RNG = np.random.default_rng(27)
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
OUTS = {"RNN": ["y", "yh"], "GRU": ["y", "yh"], "LSTM": ["y", "yh", "yc"]}


@pytest.fixture
def kernel_calls(count_calls: Callable[[Any, str, str], dict[str, int]]) -> dict[str, int]:
    """How many compiled calls the recurrent plugins made (one per direction)."""
    return count_calls(rnn, "_call", "calls")


@pytest.fixture(params=[2, 1, 0])
def cell_isa(request: pytest.FixtureRequest) -> Iterator[int]:
    """The gate arithmetic's AVX-512, AVX2 and plain C copies (as far as this CPU has them)."""
    _act.set_act_isa(request.param)
    if _act.act_isa() != request.param:
        _act.set_act_isa(None)
        pytest.skip(f"this CPU cannot run copy {request.param} of the activations")
    yield request.param
    _act.set_act_isa(None)


@pytest.fixture(params=["avx512", "avx2", "plain"])
def gemm_isa(request: pytest.FixtureRequest) -> Iterator[str]:
    """The recurrent product's paths: AVX-512 rows of 48-column panels (up to 4 batch rows),
    mi_gemv_f32 and the GEMM (AVX2), plain C."""
    if _native.use_gemm_isa(request.param) != request.param:
        _native.use_gemm_isa(None)
        pytest.skip(f"this CPU cannot run the {request.param} kernels")
    yield request.param
    _native.use_gemm_isa(None)


def _f(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def _layer(op: str, name: str, x: str, n_in: int, hid: int, dirs: int, *, bias: bool = True,
           lens: str = "", h0: str = "", c0: str = "", peep: bool = False,
           outs: tuple[str, ...] = ("y", "yh", "yc"), **attrs: Any
           ) -> tuple[onnx.NodeProto, list[onnx.TensorProto]]:
    g = GATES[op]
    inits = [numpy_helper.from_array(_f(dirs, g * hid, n_in, scale=0.4), f"{name}_w"),
             numpy_helper.from_array(_f(dirs, g * hid, hid, scale=0.4), f"{name}_r")]
    inputs = [x, f"{name}_w", f"{name}_r", ""]
    if bias:
        inits.append(numpy_helper.from_array(_f(dirs, 2 * g * hid, scale=0.5), f"{name}_b"))
        inputs[3] = f"{name}_b"
    inputs += [lens, h0]
    if op == "LSTM":
        inputs.append(c0)
        if peep:
            inits.append(numpy_helper.from_array(_f(dirs, 3 * hid, scale=0.5), f"{name}_p"))
            inputs.append(f"{name}_p")
    while inputs and inputs[-1] == "":
        inputs.pop()
    direction = {1: "forward", 2: "bidirectional"}[dirs]
    if attrs.get("direction") == "reverse":
        direction = attrs.pop("direction")
    node = helper.make_node(op, inputs, list(outs[:len(OUTS[op])]), hidden_size=hid,
                            direction=direction, **attrs)
    return node, inits


def _model(nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto],
           feeds: dict[str, np.ndarray], outs: list[str], opset: int = 14) -> onnx.ModelProto:
    types = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32}
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(k, types[v.dtype], list(v.shape))
         for k, v in feeds.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def _layout0(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with its recurrent nodes' ``layout`` 1 made 0 (onnxruntime has only layout
    0): :func:`_check` transposes the feeds and outputs around it."""
    other = onnx.ModelProto()
    other.CopyFrom(model)
    for node in other.graph.node:
        for a in node.attribute:
            if a.name == "layout":
                a.i = 0
    for value in other.graph.input:  # X, initial_h, initial_c: their first two axes swapped
        dims = value.type.tensor_type.shape.dim
        if len(dims) == 3:
            first, second = dims[0].dim_value, dims[1].dim_value
            dims[0].dim_value, dims[1].dim_value = second, first
    return other


def _ort_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """onnxruntime's outputs of ``model``; a layout-1 model runs as its layout-0 twin on
    transposed feeds, the outputs transposed back."""
    layout = any(a.name == "layout" and a.i for n in model.graph.node for a in n.attribute)
    if not layout:
        sess = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"])
        return list(sess.run(None, feeds))
    sess = ort.InferenceSession(_layout0(model).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    moved = {k: v.transpose(1, 0, 2) if v.ndim == 3 else v for k, v in feeds.items()}
    return [o.transpose(2, 0, 1, 3) if o.ndim == 4 else o.transpose(1, 0, 2)
            for o in sess.run(None, moved)]


def _check(model: onnx.ModelProto, feeds: dict[str, np.ndarray],
           tol: float = 2e-5) -> mini_infer_core.InferenceSession:
    """Every output against onnxruntime's, on two runs (the second replays the kept calls)
    and on new values of the float inputs."""
    sess = mini_infer_core.InferenceSession(model, device="cpu")
    for run in range(3):
        if run == 2:
            feeds = {k: _f(*v.shape) if v.dtype == np.float32 else v for k, v in feeds.items()}
        got, want = sess.run(None, feeds), _ort_run(model, feeds)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    return sess


def _feeds(op: str, t: int, b: int, n_in: int, hid: int, dirs: int, layout: int,
           lens: list[int] | None, states: bool) -> dict[str, np.ndarray]:
    feeds = {"x": _f(b, t, n_in) if layout else _f(t, b, n_in)}
    if lens is not None:
        feeds["lens"] = np.array(lens, np.int32)
    st = (b, dirs, hid) if layout else (dirs, b, hid)
    if states:
        feeds["h0"] = _f(*st)
        if op == "LSTM":
            feeds["c0"] = _f(*st)
    return feeds


CASES = [  # (T, B, I, H, dirs, layout, lens, states)
    (5, 1, 7, 13, 1, 0, None, False),
    (6, 3, 10, 50, 2, 0, [6, 2, 4], True),
    (4, 2, 16, 13, 1, 1, [1, 4], True),
    (7, 4, 9, 50, 2, 1, None, True),
    (1, 1, 128, 128, 1, 0, None, True),
    (3, 5, 4, 20, 2, 0, [3, 1, 2, 3, 2], False),
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_matches_onnxruntime(kernel_calls: dict[str, int], op: str,
                             case: tuple[Any, ...]) -> None:
    t, b, n_in, hid, dirs, layout, lens, states = case
    feeds = _feeds(op, t, b, n_in, hid, dirs, layout, lens, states)
    node, inits = _layer(op, "l", "x", n_in, hid, dirs, lens="lens" if lens else "",
                         h0="h0" if states else "", c0="c0" if states else "", layout=layout)
    _check(_model([node], inits, feeds, OUTS[op]), feeds)
    assert kernel_calls["calls"] == dirs


@pytest.mark.parametrize("batch", [1, 3, 6])
@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_product_paths(gemm_isa: str, kernel_calls: dict[str, int], op: str,
                       batch: int) -> None:
    """Each path of the per-step product, at batch rows below and above 4 (and 2), with the
    weights packed for the path of this CPU and read by the one chosen here."""
    feeds = _feeds(op, 5, batch, 19, 50, 2, 0, None, True)
    node, inits = _layer(op, "l", "x", 19, 50, 2, h0="h0", c0="c0")
    _check(_model([node], inits, feeds, OUTS[op]), feeds)
    assert kernel_calls["calls"] == 2


@pytest.mark.parametrize("lbr", [0, 1])
@pytest.mark.parametrize("case", CASES[1:4])
def test_gru_linear_before_reset(kernel_calls: dict[str, int], lbr: int,
                                 case: tuple[Any, ...]) -> None:
    t, b, n_in, hid, dirs, layout, lens, states = case
    feeds = _feeds("GRU", t, b, n_in, hid, dirs, layout, lens, states)
    node, inits = _layer("GRU", "l", "x", n_in, hid, dirs, lens="lens" if lens else "",
                         h0="h0" if states else "", layout=layout, linear_before_reset=lbr)
    _check(_model([node], inits, feeds, OUTS["GRU"]), feeds)
    assert kernel_calls["calls"] == dirs


@pytest.mark.parametrize("dirs", [1, 2])
def test_lstm_peepholes_clip_coupled(cell_isa: int, threads: int, kernel_calls: dict[str, int],
                                     dirs: int) -> None:
    """Peepholes, clip (inputs large enough that it bounds many), input_forget, sequence
    lengths and initial states, on each copy of the cell and at 1 and 2 threads."""
    feeds = _feeds("LSTM", 6, 3, 11, 13, dirs, 0, [6, 3, 5], True)
    feeds["x"] *= 4
    for forget in (0, 1):
        node, inits = _layer("LSTM", "l", "x", 11, 13, dirs, lens="lens", h0="h0", c0="c0",
                             peep=True, clip=1.5, input_forget=forget)
        _check(_model([node], inits, feeds, OUTS["LSTM"]), feeds)
    assert kernel_calls["calls"] == 2 * dirs


@pytest.mark.parametrize("op", ["GRU", "RNN"])
def test_clip_and_cells(cell_isa: int, op: str) -> None:
    feeds = _feeds(op, 5, 2, 8, 50, 2, 0, [5, 3], True)
    feeds["x"] *= 4
    node, inits = _layer(op, "l", "x", 8, 50, 2, lens="lens", h0="h0", clip=0.8)
    _check(_model([node], inits, feeds, OUTS[op]), feeds)


def test_reverse_and_no_bias(kernel_calls: dict[str, int]) -> None:
    feeds = _feeds("LSTM", 5, 2, 6, 13, 1, 0, [2, 5], False)
    node, inits = _layer("LSTM", "l", "x", 6, 13, 1, bias=False, lens="lens",
                         direction="reverse")
    _check(_model([node], inits, feeds, OUTS["LSTM"]), feeds)
    assert kernel_calls["calls"] == 1


def test_rnn_relu(kernel_calls: dict[str, int]) -> None:
    feeds = _feeds("RNN", 4, 3, 5, 13, 2, 0, None, True)
    node, inits = _layer("RNN", "l", "x", 5, 13, 2, h0="h0",
                         activations=["Relu", "Tanh"])
    _check(_model([node], inits, feeds, OUTS["RNN"]), feeds)
    assert kernel_calls["calls"] == 2


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
@pytest.mark.parametrize("dirs", [1, 2])
def test_stacked(threads: int, kernel_calls: dict[str, int], op: str, dirs: int) -> None:
    """Two layers in one model (the first's Y, directions joined, as the second's X), only Y
    and the second's Y_h asked for."""
    t, b, n_in, hid = 7, 2, 12, 50
    first, i1 = _layer(op, "a", "x", n_in, hid, dirs, outs=("y1", "", ""))
    join = [helper.make_node("Transpose", ["y1"], ["y1t"], perm=[0, 2, 1, 3]),
            helper.make_node("Reshape", ["y1t", "shape"], ["x2"])]
    shape = numpy_helper.from_array(np.array([t, b, dirs * hid], np.int64), "shape")
    second, i2 = _layer(op, "b", "x2", dirs * hid, 13, dirs, outs=("y", "yh", ""))
    feeds = {"x": _f(t, b, n_in)}
    _check(_model([first, *join, second], [*i1, shape, *i2], feeds, ["y", "yh"]), feeds)
    assert kernel_calls["calls"] == 2 * dirs


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_empty_batch(op: str) -> None:
    """No batch rows: empty outputs of the right shapes (onnx's reference evaluator: this
    onnxruntime aborts the process on an empty batch)."""
    feeds = {"x": np.zeros((4, 0, 6), np.float32)}
    node, inits = _layer(op, "l", "x", 6, 13, 2)
    model = _model([node], inits, feeds, OUTS[op])
    got = mini_infer_core.InferenceSession(model, device="cpu").run(None, feeds)
    want = ReferenceEvaluator(model).run(None, feeds)
    assert [g.shape for g in got] == [w.shape for w in want]


def test_other_activations_are_cpu_basics(kernel_calls: dict[str, int]) -> None:
    """Activations the compiled cell does not compute: cpu_basic's kernel runs, right, and
    the weights are left unpacked."""
    feeds = _feeds("LSTM", 4, 2, 6, 13, 1, 0, None, False)
    node, inits = _layer("LSTM", "l", "x", 6, 13, 1,
                         activations=["HardSigmoid", "Tanh", "Softsign"])
    sess = _check(_model([node], inits, feeds, OUTS["LSTM"]), feeds)
    assert kernel_calls["calls"] == 0
    plugin = [n for n in sess.engine.nodes if n.op_type == "LSTM"][0].plugin
    assert "__wpacked__" not in plugin.hidden


def test_packed_weights_survive_the_engine_file(tmp_path: Path) -> None:
    feeds = _feeds("GRU", 5, 2, 9, 13, 2, 0, [5, 4], True)
    node, inits = _layer("GRU", "l", "x", 9, 13, 2, lens="lens", h0="h0",
                         linear_before_reset=1)
    model = _model([node], inits, feeds, OUTS["GRU"])
    engine = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(device="cpu"))
    plugin = [n for n in engine.nodes if n.op_type == "GRU"][0].plugin
    assert plugin.hidden["__wpacked__"] in (24, 48) and plugin.hidden["__rpacked__"] in (24, 48)
    path = tmp_path / "m.engine"
    path.write_bytes(engine.serialize())
    back = mini_infer_core.Runtime().deserialize_engine(path.read_bytes())
    got = back.create_execution_context().execute(feeds)
    want = _ort_run(model, feeds)
    for name, w in zip(OUTS["GRU"], want, strict=True):
        np.testing.assert_allclose(got[name], w, rtol=2e-5, atol=2e-5)


def test_packed_weights_unpacked_for_cpu_basic() -> None:
    """A plugin whose weights the build packed, made to run cpu_basic's kernel (its compiled
    path refused here): the weights are put back in ONNX's order, and the result is right."""
    feeds = _feeds("LSTM", 4, 2, 6, 13, 2, 0, None, True)
    node, inits = _layer("LSTM", "l", "x", 6, 13, 2, h0="h0", c0="c0", peep=True)
    model = _model([node], inits, feeds, OUTS["LSTM"])
    engine = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(device="cpu"))
    plugin = [n for n in engine.nodes if n.op_type == "LSTM"][0].plugin
    assert plugin.hidden["__wpacked__"]
    ctx = engine.create_execution_context()
    original = rnn._Compiled._plan
    try:
        rnn._Compiled._plan = lambda *a, **k: None  # type: ignore[method-assign]
        got = ctx.execute(feeds)
    finally:
        rnn._Compiled._plan = original  # type: ignore[method-assign]
    want = _ort_run(model, feeds)
    for name, w in zip(OUTS["LSTM"], want, strict=True):
        np.testing.assert_allclose(got[name], w, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("run_isa", ["avx2", "plain"])
def test_weights_packed_on_one_cpu_run_on_another(run_isa: str) -> None:
    """An engine built where the AVX-512 kernels run (48-column panels) and run by the AVX2
    or plain C kernels (another CPU), and the other way round: the same results."""
    feeds = _feeds("GRU", 6, 3, 10, 50, 2, 0, [6, 2, 5], True)
    node, inits = _layer("GRU", "l", "x", 10, 50, 2, lens="lens", h0="h0",
                         linear_before_reset=1)
    model = _model([node], inits, feeds, OUTS["GRU"])
    want = _ort_run(model, feeds)
    for build_isa, use in ((None, run_isa), (run_isa, None)):
        _native.use_gemm_isa(build_isa)
        try:
            engine = mini_infer_core.load(
                model, config=mini_infer_core.BuilderConfig(device="cpu"))
        finally:
            _native.use_gemm_isa(None)
        if _native.use_gemm_isa(use) != (use or _native.gemm_isa()):
            _native.use_gemm_isa(None)
            pytest.skip(f"this CPU cannot run the {use} kernels")
        try:
            got = engine.create_execution_context().execute(feeds)
        finally:
            _native.use_gemm_isa(None)
        for name, w in zip(OUTS["GRU"], want, strict=True):
            np.testing.assert_allclose(got[name], w, rtol=2e-5, atol=2e-5)
