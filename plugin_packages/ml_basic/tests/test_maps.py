"""ZipMap (scores -> a list of dicts) and DictVectorizer (a dict -> a row), one node at a time:
against onnxruntime where its Python API takes the types (ZipMap; DictVectorizer of
``map(string, float)`` and ``map(int64, float)``), else against the rows the ONNX text
defines, written out here; from engine files read back; and the errors of wrong models and
inputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from ml_support import ML, assert_same, ort_session
from onnx import TensorProto as T
from onnx import helper

import mini_infer_core as mi
from mini_infer_core.errors import (
    BuildError,
    ExecutionError,
    MiniInferError,
    PluginInterfaceError,
)

RNG = np.random.default_rng(15)


def _model(node: onnx.NodeProto, inputs: list[onnx.ValueInfoProto],
           outputs: list[onnx.ValueInfoProto]) -> onnx.ModelProto:
    graph = helper.make_graph([node], node.op_type, inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid(ML, 1)])
    model.ir_version = 8
    return model


def zipmap(labels: dict[str, Any], shape: list[Any]) -> onnx.ModelProto:
    key = T.STRING if "classlabels_strings" in labels else T.INT64
    out = helper.make_value_info("z", helper.make_sequence_type_proto(
        helper.make_map_type_proto(key, helper.make_tensor_type_proto(T.FLOAT, []))))
    node = helper.make_node("ZipMap", ["x"], ["z"], domain=ML, **labels)
    return _model(node, [helper.make_tensor_value_info("x", T.FLOAT, shape)], [out])


def vectorizer(key: int, value: int, vocabulary: dict[str, Any]) -> onnx.ModelProto:
    x = helper.make_value_info("x", helper.make_map_type_proto(
        key, helper.make_tensor_type_proto(value, [])))
    node = helper.make_node("DictVectorizer", ["x"], ["y"], domain=ML, **vocabulary)
    return _model(node, [x], [onnx.ValueInfoProto(name="y")])


def through_file(model: onnx.ModelProto, tmp_path: Path) -> mi.InferenceSession:
    path = tmp_path / "model.engine"
    mi.InferenceSession(model).save_engine(path)
    return mi.InferenceSession(str(path))


# -- ZipMap -------------------------------------------------------------------------------------
LABELS = [{"classlabels_strings": ["cat", "dog", "emu"]},
          {"classlabels_int64s": [7, -1, 300]},
          # labels that read as code where ZipMap makes its row function: data all the same
          {"classlabels_strings": ['"}; import os #', "k0", "{v1}", "é", ""]},
          # more labels than ZipMap makes a row function for: dict(zip(...)) instead
          {"classlabels_int64s": list(range(100, 0, -1))},
          {"classlabels_strings": ["only"]}]
_SHAPES = {3: [[5, 3], ["N", 3], [3], [0, 3]], 5: [[5, 5], [0, 5]], 100: [[4, 100]],
           1: [[3, 1], [1]]}


@pytest.mark.parametrize("labels, shape", [
    (labels, shape) for labels in LABELS
    for shape in _SHAPES[len(next(iter(labels.values())))]])
def test_zipmap_matches_onnxruntime(labels: dict[str, Any], shape: list[Any],
                                    tmp_path: Path) -> None:
    model = zipmap(labels, shape)
    concrete = [5 if d == "N" else d for d in shape]
    x = RNG.random(concrete).astype(np.float32)
    want = ort_session(model).run(None, {"x": x})
    for sess in (mi.InferenceSession(model), through_file(model, tmp_path)):
        got = sess.run(None, {"x": x})
        if concrete[0] == 0:  # _same_maps reads the key types off the first map
            assert got == want == [[]]
        else:
            assert_same(got, want, rtol=0, atol=0)  # the same floats exactly
        assert sess.get_outputs()[0].type == (
            "seq(map(string,tensor(float)))" if "classlabels_strings" in labels
            else "seq(map(int64,tensor(float)))")


def test_a_classifier_ending_in_zipmap_runs_as_one_plan() -> None:
    """Softmax -> ZipMap beside the scores' ArgMax (a converted classifier's tail): the engine
    is planned like a static one (ZipMap a step of the plan, not a run in segments), for
    every row count in turn, and each run's dicts are its own."""
    out = helper.make_value_info("z", helper.make_sequence_type_proto(
        helper.make_map_type_proto(T.INT64, helper.make_tensor_type_proto(T.FLOAT, []))))
    nodes = [helper.make_node("Softmax", ["x"], ["p"], axis=1),
             helper.make_node("ZipMap", ["p"], ["z"], domain=ML, classlabels_int64s=[4, 2, 9]),
             helper.make_node("ArgMax", ["p"], ["label"], axis=1, keepdims=0)]
    graph = helper.make_graph(nodes, "tail", [helper.make_tensor_value_info(
        "x", T.FLOAT, ["N", 3])], [helper.make_tensor_value_info("label", T.INT64, ["N"]),
                                   out, helper.make_tensor_value_info("p", T.FLOAT, ["N", 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid(ML, 1)])
    model.ir_version = 8
    ort, engine = ort_session(model), mi.load(model)
    with engine.create_execution_context() as ctx:
        earlier = None
        for rows in (1, 4, 0, 200, 1):
            x = RNG.standard_normal((rows, 3)).astype(np.float32)
            got = ctx.execute({"x": x})
            want = dict(zip(["label", "z", "p"], ort.run(None, {"x": x}), strict=True))
            assert got["label"].tolist() == want["label"].tolist()
            assert [list(r) for r in got["z"]] == [list(r) for r in want["z"]]  # key order
            np.testing.assert_allclose([list(r.values()) for r in got["z"]] or np.zeros(0),
                                       [list(r.values()) for r in want["z"]] or np.zeros(0),
                                       rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(got["p"], want["p"], rtol=1e-6, atol=1e-7)
            assert len(ctx.steps) == 3  # planned: a run in segments has no steps
            if earlier is not None:  # a later run leaves an earlier result alone
                assert earlier[1] == earlier[0]
            earlier = ([dict(r) for r in got["z"]], got["z"])
        assert len(ctx.time_nodes({"x": x})) == 3


@pytest.mark.parametrize("labels", LABELS)
def test_compiled_zipmap_builds_the_dicts_the_python_form_builds(
        labels: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """``_cml.zipmap`` against the Python form (a made row function, or dict(zip()) past 64
    labels): the same keys, order, floats and types, at 0, 1 and 50 rows, from a strided
    (non-contiguous: the Python form) and a float64 input."""
    from mini_infer_ml_plugins.ops import maps

    if maps._cml is None:
        pytest.skip("mini-infer-ml-plugins was installed without its compiled part")
    node = maps.ZipMap("z", **labels)
    k = len(next(iter(labels.values())))
    for rows in (0, 1, 50):
        x = RNG.standard_normal((rows, k)).astype(np.float32)
        got = node.compute(x)[0]
        with monkeypatch.context() as m:
            m.setattr(maps, "_cml", None)
            want = node.compute(x)[0]
            assert node.compute(np.asfortranarray(x))[0] == want
            assert node.compute(x.astype(np.float64))[0] == want
        assert got == want and [list(r) for r in got] == [list(r) for r in want]
        assert all(type(v) is float for r in got for v in r.values())


def test_zipmap_refuses_a_column_count_that_is_not_the_label_count() -> None:
    with pytest.raises(BuildError, match=r"ZipMap.*4 columns but there are 3 class labels"):
        mi.InferenceSession(zipmap(LABELS[0], [2, 4]))
    sess = mi.InferenceSession(zipmap(LABELS[0], [2, "C"]))
    with pytest.raises(ExecutionError, match=r"ZipMap.*shape \(2, 4\).*\[N, 3\]"):
        sess.run(None, {"x": np.zeros((2, 4), np.float32)})


def test_zipmap_needs_one_kind_of_labels() -> None:
    both = {"classlabels_strings": ["a"], "classlabels_int64s": [1]}
    with pytest.raises(MiniInferError, match="exactly one of classlabels_strings"):
        mi.InferenceSession(zipmap(both, [2, 1]))


# -- DictVectorizer -----------------------------------------------------------------------------
WORDS = {"string_vocabulary": ["apple", "kiwi", "fig", "lime"]}
CODES = {"int64_vocabulary": [40, 2, 17]}


@pytest.mark.parametrize("key, vocabulary, feed", [
    (T.STRING, WORDS, {"fig": 2.5, "apple": -1.0}),
    (T.STRING, WORDS, {"lime": 3.0, "plum": 9.0, "kiwi": 0.5, "fig": 1.0, "apple": 4.0}),
    (T.INT64, CODES, {17: 1.25, 40: -3.0, 99: 7.0}),
    (T.INT64, CODES, {2: 0.125}),
], ids=["strings", "strings-unknown-key", "int64s-unknown-key", "int64s-one-key"])
def test_dict_vectorizer_matches_onnxruntime(key: int, vocabulary: dict[str, Any],
                                             feed: dict[Any, float], tmp_path: Path) -> None:
    model = vectorizer(key, T.FLOAT, vocabulary)
    want = ort_session(model).run(None, {"x": feed})
    for sess in (mi.InferenceSession(model), through_file(model, tmp_path)):
        assert_same(sess.run(None, {"x": feed}), want, rtol=0, atol=0)


@pytest.mark.parametrize("key, value, vocabulary, feed, row", [
    # onnxruntime's Python API makes every dict it is given map(string|int64, float), so the
    # other value types are checked against the ONNX text: the vocabulary's values in order,
    # 0 (or "") where the dict lacks the key, in the map's value type
    (T.STRING, T.INT64, WORDS, {"kiwi": 5, "lime": -2, "plum": 3}, [[0, 5, 0, -2]]),
    (T.STRING, T.DOUBLE, WORDS, {"apple": 0.1, "fig": 1e300}, [[0.1, 0.0, 1e300, 0.0]]),
    (T.INT64, T.DOUBLE, CODES, {2: 2.0**-40, 40: 3.5}, [[3.5, 2.0**-40, 0.0]]),
    (T.INT64, T.STRING, CODES, {17: "seventeen", 40: "forty"}, [["forty", "", "seventeen"]]),
    (T.STRING, T.FLOAT, WORDS, {}, [[0.0, 0.0, 0.0, 0.0]]),
], ids=["string-int64", "string-double", "int64-double", "int64-string", "empty"])
def test_dict_vectorizer_value_types(key: int, value: int, vocabulary: dict[str, Any],
                                     feed: dict[Any, Any], row: list[list[Any]],
                                     tmp_path: Path) -> None:
    model = vectorizer(key, value, vocabulary)
    dtype = object if value == T.STRING else helper.tensor_dtype_to_np_dtype(value)
    for sess in (mi.InferenceSession(model), through_file(model, tmp_path)):
        (got,) = sess.run(None, {"x": feed})
        assert got.dtype == dtype and got.shape == (1, len(row[0]))
        assert got.tolist() == row


def test_dict_vectorizer_refuses_keys_of_the_other_type() -> None:
    with pytest.raises(BuildError, match=r"DictVectorizer.*keys are INT64 but the vocabulary "
                                         r"holds STRING keys"):
        mi.InferenceSession(vectorizer(T.INT64, T.FLOAT, WORDS))


def test_dict_vectorizer_wants_a_dict() -> None:
    sess = mi.InferenceSession(vectorizer(T.STRING, T.FLOAT, WORDS))
    with pytest.raises(MiniInferError, match=r"map\(string,tensor\(float\)\).*a dict"):
        sess.run(None, {"x": np.zeros(4, np.float32)})


_RUN = """
import sys
import mini_infer_core as mi
sess = mi.InferenceSession(sys.argv[1])
print(repr(sess.run(None, {"x": {"kiwi": 1.5, "lime": -2.0}})[0].tolist()))
"""


def test_an_engine_file_with_a_map_input_runs_in_another_process(tmp_path: Path) -> None:
    model = vectorizer(T.STRING, T.FLOAT, WORDS)
    path = tmp_path / "dv.engine"
    mi.InferenceSession(model).save_engine(path)
    done = subprocess.run([sys.executable, "-c", _RUN, str(path)], check=True,
                          capture_output=True, text=True, timeout=300)
    want = ort_session(model).run(None, {"x": {"kiwi": 1.5, "lime": -2.0}})[0]
    assert done.stdout.strip() == repr(want.tolist())


def test_mini_infer_plugins_lists_them() -> None:
    """``mini-infer plugins --json`` (the installed distribution's entry point, its catalog
    read without importing a kernel) names both, on the cpu device."""
    cli = Path(sys.executable).with_name("mini-infer")
    if not cli.exists():
        pytest.skip(f"no mini-infer command next to {sys.executable} (install the core)")
    done = subprocess.run([str(cli), "plugins", "--json"], check=True, capture_output=True,
                          text=True, timeout=300)
    creators = {c["op_type"]: c for c in json.loads(done.stdout)["creators"]
                if c["distribution"] == "mini-infer-ml-plugins"}
    for op in ("ZipMap", "DictVectorizer"):
        assert (creators[op]["domain"], creators[op]["device"]) == (ML, "cpu"), creators[op]


@pytest.mark.parametrize("attrs", [{}, {**WORDS, **CODES}], ids=["neither", "both"])
def test_dictvectorizer_needs_one_kind_of_vocabulary(attrs: dict[str, Any]) -> None:
    from mini_infer_core.ops.ml import DictVectorizer

    with pytest.raises(PluginInterfaceError, match="DictVectorizer 'dv': exactly one of "
                       "string_vocabulary and int64_vocabulary must be given"):
        DictVectorizer("dv", **attrs).vocabulary()
