"""Sequences, optionals and maps end to end (issue 15): graph inputs and outputs that are lists
of arrays or None, the sequence and optional operators, Loop and If carrying them, engine files
that keep their kinds, and the errors a wrong input gets. Every result is compared with
onnxruntime and onnx's ReferenceEvaluator (``expected``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx.reference import ReferenceEvaluator

from mini_infer_core.builder import Builder, BuilderConfig
from mini_infer_core.errors import BuildError, InputError
from mini_infer_core.importer import parse_onnx
from mini_infer_core.plugin import DataType, ValueKind
from mini_infer_core.plugin._kinds import kind_from_proto, parse_type_string, type_proto
from mini_infer_core.runtime import Runtime
from mini_infer_core.session import InferenceSession

ort = pytest.importorskip("onnxruntime")


def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any], opset: int = 18,
           valid: bool = True) -> onnx.ModelProto:
    """A model, checked by onnx unless it is not ``valid`` ONNX on purpose."""
    model = h.make_model(h.make_graph(nodes, "seq", inputs, outputs),
                         opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 8
    if valid:
        onnx.checker.check_model(model, full_check=True)
    return model


def _seq(name: str, shape: list[Any] | None = None, dtype: int = T.FLOAT) -> Any:
    return h.make_tensor_sequence_value_info(name, dtype, shape)


def expected(model: onnx.ModelProto, feeds: dict[str, Any]) -> list[Any]:
    """onnxruntime's outputs, checked against onnx's reference evaluator."""
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ours = sess.run(None, feeds)
    ref = ReferenceEvaluator(model).run(None, feeds)
    for a, b in zip(ours, ref, strict=True):
        same(a, b)
    return ours


def same(got: Any, want: Any) -> None:
    """Equal values: arrays (dtype, shape, close), lists of them, None."""
    if want is None:
        assert got is None
    elif isinstance(want, list):
        assert isinstance(got, list), f"{type(got).__name__} where a list is expected"
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            same(g, w)
    else:
        got, want = np.asarray(got), np.asarray(want)
        assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def seq_ops_model() -> onnx.ModelProto:
    """A sequence input and a tensor in; the sequence with the tensor inserted, an element,
    the length, the concatenation and the sequence without its last element out."""
    nodes = [
        h.make_node("SequenceInsert", ["s", "t"], ["inserted"]),
        h.make_node("SequenceAt", ["inserted", "pos"], ["at"]),
        h.make_node("SequenceLength", ["inserted"], ["n"]),
        h.make_node("ConcatFromSequence", ["inserted"], ["cat"], axis=0),
        h.make_node("SequenceErase", ["s"], ["erased"]),
    ]
    return _model(nodes, [_seq("s", [None, 3]), h.make_tensor_value_info("t", T.FLOAT, [2, 3]),
                          h.make_tensor_value_info("pos", T.INT64, [])],
                  [_seq("inserted", [None, 3]), h.make_tensor_value_info("at", T.FLOAT, [None, 3]),
                   h.make_tensor_value_info("n", T.INT64, []),
                   h.make_tensor_value_info("cat", T.FLOAT, [None, 3]), _seq("erased")])


def seq_feeds(sizes: tuple[int, ...] = (1, 4), pos: int = -1) -> dict[str, Any]:
    rng = np.random.default_rng(sum(sizes))
    return {"s": [rng.standard_normal((k, 3)).astype(np.float32) for k in sizes],
            "t": rng.standard_normal((2, 3)).astype(np.float32), "pos": np.array(pos)}


def test_sequence_inputs_and_outputs_through_inference_session() -> None:
    model = seq_ops_model()
    sess = InferenceSession(model)
    for sizes, pos in (((1, 4), -1), ((2, 2, 5), 0), ((3,), 1)):
        feeds = seq_feeds(sizes, pos)
        got = sess.run(None, feeds)
        want = expected(model, feeds)
        for g, w in zip(got, want, strict=True):
            same(g, w)
        assert isinstance(got[0], list) and len(got[0]) == len(sizes) + 1
    theirs = ort.InferenceSession(model.SerializeToString(),
                                  providers=["CPUExecutionProvider"])
    assert [a.type for a in sess.get_inputs()] == [a.type for a in theirs.get_inputs()]
    assert [a.type for a in sess.get_outputs()] == [a.type for a in theirs.get_outputs()]
    assert sess.get_inputs()[0].type == "seq(tensor(float))"


def test_the_outputs_are_the_callers_own() -> None:
    """An output sequence is a new list of new arrays: changing it changes nothing fed."""
    model = _model([h.make_node("Identity", ["s"], ["y"])], [_seq("s", [2])], [_seq("y", [2])])
    feed = [np.ones(2, np.float32), np.zeros(2, np.float32)]
    (got,) = InferenceSession(model).run(None, {"s": feed})
    same(got, expected(model, {"s": feed})[0])
    got[0][...] = 7
    got.append(np.ones(2, np.float32))
    assert len(feed) == 2 and feed[0][0] == 1


def loop_model(declare_rank: bool = False) -> onnx.ModelProto:
    """SequenceEmpty, a Loop whose body inserts x * i into the carried sequence (which
    declares no element shape unless ``declare_rank``), then ConcatFromSequence."""
    shape = [None, 3] if declare_rank else None
    body = h.make_graph(
        [h.make_node("Identity", ["cond_in"], ["cond_out"]),
         h.make_node("Cast", ["i"], ["fi"], to=T.FLOAT),
         h.make_node("Mul", ["x", "fi"], ["xi"]),
         h.make_node("SequenceInsert", ["seq_in", "xi"], ["seq_out"])],
        "body",
        [h.make_tensor_value_info("i", T.INT64, []),
         h.make_tensor_value_info("cond_in", T.BOOL, []), _seq("seq_in", shape)],
        [h.make_tensor_value_info("cond_out", T.BOOL, []), _seq("seq_out", shape)])
    nodes = [h.make_node("SequenceEmpty", [], ["empty"], dtype=T.FLOAT),
             h.make_node("Constant", [], ["go"], value=h.make_tensor("go", T.BOOL, [], [True])),
             h.make_node("Loop", ["n", "go", "empty"], ["acc"], body=body),
             h.make_node("ConcatFromSequence", ["acc"], ["cat"], axis=0),
             h.make_node("ConcatFromSequence", ["acc"], ["stacked"], axis=1, new_axis=1),
             h.make_node("SequenceLength", ["acc"], ["count"])]
    return _model(nodes, [h.make_tensor_value_info("x", T.FLOAT, ["N", 3]),
                          h.make_tensor_value_info("n", T.INT64, [])],
                  [h.make_tensor_value_info("cat", T.FLOAT, [None, 3]),
                   h.make_tensor_value_info("stacked", T.FLOAT, ["N", None, 3]),
                   h.make_tensor_value_info("count", T.INT64, []), _seq("acc", shape)],
                  opset=17)


@pytest.mark.parametrize("declare_rank", [False, True])
def test_loop_accumulating_a_sequence_then_concatenated(declare_rank: bool) -> None:
    model = loop_model(declare_rank)
    sess = InferenceSession(model)
    rng = np.random.default_rng(1)
    for rows, n in ((2, 4), (5, 1), (3, 3)):
        feeds = {"x": rng.standard_normal((rows, 3)).astype(np.float32),
                 "n": np.array(n, np.int64)}
        got = sess.run(None, feeds)
        for g, w in zip(got, expected(model, feeds), strict=True):
            same(g, w)
    # the body was built at build time for what it is given: the concatenation has rank 2
    assert len(sess.get_outputs()[0].shape) == 2


def loop_scan_model() -> onnx.ModelProto:
    """A Loop carrying a sequence whose body also gives a scan output that declares no type
    or shape (inferred at build time by building the body for a carried sequence) and reads
    a constant from the enclosing graph (built into the body with its value)."""
    body = h.make_graph(
        [h.make_node("Identity", ["cond_in"], ["cond_out"]),
         h.make_node("Cast", ["i"], ["fi"], to=T.FLOAT),
         h.make_node("Mul", ["x", "fi"], ["xi"]),
         h.make_node("Add", ["xi", "k"], ["y"]),
         h.make_node("SequenceInsert", ["seq_in", "y"], ["seq_out"])],
        "body",
        [h.make_tensor_value_info("i", T.INT64, []),
         h.make_tensor_value_info("cond_in", T.BOOL, []), _seq("seq_in")],
        [h.make_tensor_value_info("cond_out", T.BOOL, []), _seq("seq_out"),
         onnx.ValueInfoProto(name="y")])
    nodes = [h.make_node("SequenceEmpty", [], ["empty"], dtype=T.FLOAT),
             h.make_node("Constant", [], ["k"],
                         value=h.make_tensor("k", T.FLOAT, [3], [0.5, -1.0, 2.0])),
             h.make_node("Constant", [], ["go"], value=h.make_tensor("go", T.BOOL, [], [True])),
             h.make_node("Loop", ["n", "go", "empty"], ["acc", "ys"], body=body)]
    return _model(nodes, [h.make_tensor_value_info("x", T.FLOAT, ["N", 3]),
                          h.make_tensor_value_info("n", T.INT64, [])],
                  [_seq("acc"), h.make_tensor_value_info("ys", T.FLOAT, None)],
                  opset=17, valid=False)


def test_loop_carrying_a_sequence_with_an_undeclared_scan_output() -> None:
    model = loop_scan_model()
    sess = InferenceSession(model)
    # the scan output's rank was worked out by building the body for a carried sequence
    assert len(sess.get_outputs()[1].shape) == 3
    rng = np.random.default_rng(2)
    for rows, n in ((2, 3), (4, 1)):
        feeds = {"x": rng.standard_normal((rows, 3)).astype(np.float32),
                 "n": np.array(n, np.int64)}
        # onnxruntime (onnx's reference stacks the scan output with vstack: rank 2 here)
        want = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, feeds)
        for g, w in zip(sess.run(None, feeds), want, strict=True):
            same(g, w)


@pytest.mark.parametrize(("split", "attrs"), [
    (None, {}), (None, {"keepdims": 0}), (None, {"axis": 1}),
    (np.array(2, np.int64), {"axis": 1}), (np.array(4, np.int64), {}),
    (np.array([1, 3, 1], np.int64), {}), (np.array([3, 2], np.int64), {"axis": -1}),
])
def test_split_to_sequence(split: np.ndarray | None, attrs: dict[str, int]) -> None:
    inputs = ["x"] + (["split"] if split is not None else [])
    vis = [h.make_tensor_value_info("x", T.FLOAT, [5, 5])]
    tail_rank = 1 + int(attrs.get("keepdims", 1)) if split is None else 2
    if split is not None:
        vis.append(h.make_tensor_value_info("split", T.INT64, list(split.shape)))
    model = _model([h.make_node("SplitToSequence", inputs, ["parts"], **attrs),
                    h.make_node("SequenceAt", ["parts", "last"], ["tail"]),
                    h.make_node("SequenceLength", ["parts"], ["count"])],
                   [*vis, h.make_tensor_value_info("last", T.INT64, [])],
                   [_seq("parts"), h.make_tensor_value_info("tail", T.FLOAT, [None] * tail_rank),
                    h.make_tensor_value_info("count", T.INT64, [])])
    feeds: dict[str, Any] = {"x": np.arange(25, dtype=np.float32).reshape(5, 5),
                             "last": np.array(-1, np.int64)}
    if split is not None:
        feeds["split"] = split
    got = InferenceSession(model).run(None, feeds)
    for g, w in zip(got, expected(model, feeds), strict=True):
        same(g, w)


def optional_model() -> onnx.ModelProto:
    """An optional tensor in: whether it holds one, an If that adds it to x when it does
    (its branch reads the optional from the outer scope), and x wrapped as an optional."""
    opt = h.make_optional_type_proto(h.make_tensor_type_proto(T.FLOAT, ["N"]))
    then_g = h.make_graph([h.make_node("OptionalGetElement", ["o"], ["v"]),
                           h.make_node("Add", ["v", "x"], ["r"])], "then", [],
                          [h.make_tensor_value_info("r", T.FLOAT, ["N"])])
    else_g = h.make_graph([h.make_node("Neg", ["x"], ["r2"])], "else", [],
                          [h.make_tensor_value_info("r2", T.FLOAT, ["N"])])
    return _model(
        [h.make_node("OptionalHasElement", ["o"], ["has"]),
         h.make_node("If", ["has"], ["y"], then_branch=then_g, else_branch=else_g),
         h.make_node("Optional", ["x"], ["wrapped"])],
        [h.make_value_info("o", opt), h.make_tensor_value_info("x", T.FLOAT, ["N"])],
        [h.make_tensor_value_info("y", T.FLOAT, ["N"]),
         h.make_tensor_value_info("has", T.BOOL, []), h.make_value_info("wrapped", opt)])


@pytest.mark.parametrize("present", [True, False])
def test_optional_input_present_and_absent(present: bool) -> None:
    model = optional_model()
    x = np.arange(4, dtype=np.float32)
    feeds = {"o": np.full(4, 10, np.float32) if present else None, "x": x}
    got = InferenceSession(model).run(None, feeds)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for g, w in zip(got, sess.run(None, feeds), strict=True):
        same(g, w)
    # onnx's reference evaluator returns an optional tensor inside a list; the rest agree
    ref = ReferenceEvaluator(model).run(None, feeds)
    same(got[:2], ref[:2])
    same(got[2], ref[2][0])
    assert got[1] == present


def test_optional_sequence_empty_and_present() -> None:
    opt_seq = h.make_optional_type_proto(h.make_sequence_type_proto(
        h.make_tensor_type_proto(T.INT64, [None])))
    model = _model([h.make_node("OptionalHasElement", ["o"], ["has"]),
                    h.make_node("Identity", ["o"], ["same"])],
                   [h.make_value_info("o", opt_seq)],
                   [h.make_tensor_value_info("has", T.BOOL, []),
                    h.make_value_info("same", opt_seq)])
    sess = InferenceSession(model)
    for value in (None, [], [np.arange(3), np.arange(2)]):
        got = sess.run(None, {"o": value})
        assert got[0] == (value is not None)
        same(got[1], value)
    assert sess.get_inputs()[0].type == "optional(seq(tensor(int64)))"


def test_engine_with_sequence_io_loaded_in_another_process(tmp_path: Path) -> None:
    model = seq_ops_model()
    engine = Builder().build_engine(parse_onnx(model), BuilderConfig())
    path = tmp_path / "seq.engine"
    engine.save(str(path))
    header = Runtime().load_engine(path).tensors
    assert header["s"].value_kind == ValueKind(("sequence",))
    assert header["n"].value_kind.is_tensor
    feeds = seq_feeds((2, 3, 1), 1)
    np.savez(tmp_path / "feeds.npz", *feeds["s"], t=feeds["t"], pos=feeds["pos"])
    script = """
import json, sys
import numpy as np
from mini_infer_core.session import InferenceSession
folder = sys.argv[1]
data = np.load(folder + "/feeds.npz")
s = [data[f"arr_{k}"] for k in range(len(data.files) - 2)]
sess = InferenceSession(folder + "/seq.engine")
out = sess.run(None, {"s": s, "t": data["t"], "pos": data["pos"]})
np.savez(folder + "/out.npz", *out[0], at=out[1], n=out[2], cat=out[3])
print(json.dumps({"types": [a.type for a in sess.get_outputs()],
                  "kinds": [type(o).__name__ for o in out], "erased": len(out[4])}))
"""
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["types"][0] == "seq(tensor(float))"
    assert report["kinds"] == ["list", "ndarray", "ndarray", "ndarray", "list"]
    want = expected(model, feeds)
    out = np.load(tmp_path / "out.npz")
    same([out[f"arr_{k}"] for k in range(len(want[0]))], want[0])
    same(out["at"], want[1])
    same(out["n"], want[2])
    same(out["cat"], want[3])
    assert report["erased"] == len(want[4])


def test_a_tensor_where_a_sequence_is_expected_is_an_input_error() -> None:
    sess = InferenceSession(seq_ops_model())
    feeds = seq_feeds()
    with pytest.raises(InputError, match=r"'s' is a seq\(tensor\(float\)\).*list of arrays"):
        sess.run(None, {**feeds, "s": np.zeros((2, 3), np.float32)})
    with pytest.raises(InputError, match=r"element 1.*dtype float32"):
        sess.run(None, {**feeds, "s": [np.zeros((1, 3), np.float32), np.zeros((1, 3))]})
    with pytest.raises(InputError, match=r"element 0.*axis 1 must be 3"):
        sess.run(None, {**feeds, "s": [np.zeros((1, 4), np.float32)]})
    with pytest.raises(InputError, match=r"'t' is a tensor\(float\).*pass an array.*list"):
        sess.run(None, {**feeds, "t": [feeds["t"]]})


def test_a_plugin_that_takes_tensors_only_names_the_sequence_it_refuses() -> None:
    model = _model([h.make_node("Relu", ["s"], ["y"], name="relu")], [_seq("s", [2])],
                   [h.make_tensor_value_info("y", T.FLOAT, [2])], valid=False)
    with pytest.raises(BuildError, match=r"'relu'.*input 0 is a seq\(tensor\).*takes tensor"):
        Builder().build_engine(parse_onnx(model), BuilderConfig())


def test_taking_an_element_of_unknown_rank_says_what_to_declare() -> None:
    model = _model([h.make_node("SequenceAt", ["s", "p"], ["y"], name="at")],
                   [_seq("s"), h.make_tensor_value_info("p", T.INT64, [])],
                   [h.make_tensor_value_info("y", T.FLOAT, [None])])
    with pytest.raises(BuildError, match=r"'at'.*rank of the elements.*declare the element"):
        Builder().build_engine(parse_onnx(model), BuilderConfig())


def test_sequence_nodes_of_a_cuda_engine_fall_back_to_cpu() -> None:
    """Cross-built (no GPU needed): the sequence nodes run on the cpu, a sequence input
    arrives on the engine's device and is copied over as a whole, and the engine file keeps
    the copy's kind."""
    builder = Builder()
    if builder.registry.get_device("cuda") is None:
        pytest.skip("mini-infer-cuda-plugins is not installed here")
    model = seq_ops_model()
    engine = builder.build_engine(parse_onnx(model), BuilderConfig(device="cuda"))
    seq_nodes = [nd for nd in engine.nodes if nd.op_type.startswith("Sequence")
                 or nd.op_type == "ConcatFromSequence"]
    assert seq_nodes and all(nd.device == "cpu" for nd in seq_nodes)
    copies = [nd for nd in engine.nodes if nd.op_type == "Copy" and nd.inputs == ("s",)]
    assert len(copies) == 1 and engine.tensors[copies[0].outputs[0]].value_kind.outer == \
        "sequence"
    again = Runtime().deserialize_engine(engine.serialize())
    (copy,) = [nd for nd in again.nodes if nd.op_type == "Copy" and nd.inputs == ("s",)]
    assert type(copy.plugin).__name__ == "ValueCopyPlugin"
    assert again.tensors["inserted"].type_string == "seq(tensor(float))"


def test_map_values_are_representable() -> None:
    """ZipMap's output type, seq(map(string, tensor(float))): its kind survives a type
    proto, the type text and the engine file, and such a value runs as a list of dicts."""
    tp = h.make_sequence_type_proto(h.make_map_type_proto(
        T.STRING, h.make_tensor_type_proto(T.FLOAT, [])))
    kind, dtype, dims = kind_from_proto(tp)
    assert kind == ValueKind(("sequence", "map"), key=DataType.STRING)
    assert (dtype, dims) == (DataType.FLOAT, [])
    assert kind.type_string(dtype) == "seq(map(string,tensor(float)))"
    assert parse_type_string(kind.type_string(dtype, dims))[:2] == (kind, dtype)
    assert kind_from_proto(type_proto(kind, dtype, dims)) == (kind, dtype, dims)
    assert ValueKind.from_json(json.loads(json.dumps(kind.to_json()))) == kind
    # onnx's Identity takes no maps (a ZipMap's result goes to the graph's output as it is);
    # mini-infer's cpu Identity passes any value through, which is what makes one here
    model = _model([h.make_node("Identity", ["probs"], ["same"])],
                   [h.make_value_info("probs", tp)], [h.make_value_info("same", tp)],
                   valid=False)
    engine = Runtime().deserialize_engine(
        Builder().build_engine(parse_onnx(model), BuilderConfig()).serialize())
    assert engine.tensors["same"].type_string == "seq(map(string,tensor(float)))"
    rows = [{"a": 0.25, "b": 0.75}, {"a": 1.0, "b": 0.0}]
    (got,) = InferenceSession(engine).run(None, {"probs": rows})
    assert got == rows and got is not rows
    with pytest.raises(InputError, match=r"seq\(map\(string,tensor\(float\)\)\).*a dict"):
        InferenceSession(engine).run(None, {"probs": [np.zeros(2, np.float32)]})
