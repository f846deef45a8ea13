"""The ONNX importer: Constant nodes, attributes, external data confined to the model folder."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import make_model, ort_run
from onnx import TensorProto, helper

import mini_infer_core as mi
from mini_infer_core.errors import ModelImportError, UnsafeModelPathError


def _external_model(tmp_path: Path, location: str) -> Path:
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    model = make_model([helper.make_node("Add", ["x", "w"], ["y"])], [x], [y],
                       [onnx.numpy_helper.from_array(w, "w")])
    folder = tmp_path / "model"
    folder.mkdir()
    onnx.save_model(model, str(folder / "m.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin",
                    size_threshold=0)
    if location != "weights.bin":
        m = onnx.load(str(folder / "m.onnx"), load_external_data=False)
        for e in m.graph.initializer[0].external_data:
            if e.key == "location":
                e.value = location
        onnx.save_model(m, str(folder / "m.onnx"))
    return folder / "m.onnx"


def test_external_data_inside_the_model_folder_is_read(tmp_path: Path) -> None:
    path = _external_model(tmp_path, "weights.bin")
    out = mi.InferenceSession(str(path)).run(None, {"x": np.ones((2, 3), np.float32)})[0]
    np.testing.assert_array_equal(out, np.arange(6, dtype=np.float32).reshape(2, 3) + 1)


@pytest.mark.parametrize("location", ["../weights.bin", "/etc/passwd", "sub/../../weights.bin"])
def test_external_data_escaping_the_folder_is_rejected(tmp_path: Path, location: str) -> None:
    path = _external_model(tmp_path, "weights.bin")
    (tmp_path / "weights.bin").write_bytes((path.parent / "weights.bin").read_bytes())
    m = onnx.load(str(path), load_external_data=False)
    for e in m.graph.initializer[0].external_data:
        if e.key == "location":
            e.value = location
    onnx.save_model(m, str(path))
    with pytest.raises(UnsafeModelPathError, match="outside"):
        mi.parse_onnx(str(path))


def test_symlink_out_of_the_folder_is_rejected(tmp_path: Path) -> None:
    path = _external_model(tmp_path, "weights.bin")
    outside = tmp_path / "secret.bin"
    outside.write_bytes((path.parent / "weights.bin").read_bytes())
    os.unlink(path.parent / "weights.bin")
    os.symlink(outside, path.parent / "weights.bin")
    with pytest.raises(UnsafeModelPathError):
        mi.parse_onnx(str(path))


def test_constant_nodes_and_attribute_types() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])
    nodes = [
        helper.make_node("Constant", [], ["c"], value_floats=[1.0, 2.0, 3.0]),
        helper.make_node("Add", ["x", "c"], ["a"]),
        helper.make_node("Transpose", ["a"], ["y"], perm=[1, 0]),
    ]
    model = make_model(nodes, [x], [y])
    net = mi.parse_onnx(model)
    assert "c" in net.constants and [n.op_type for n in net.nodes] == ["Add", "Transpose"]
    assert net.nodes[1].fields["perm"].to_value() == (1, 0)
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    ours = mi.InferenceSession(model).run(None, {"x": xv})[0]
    np.testing.assert_array_equal(ours, ort_run(model, {"x": xv})[0])


def test_garbage_and_missing_files_are_import_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage" * 10)
    with pytest.raises(ModelImportError, match="bad.onnx"):
        mi.parse_onnx(str(bad))
    with pytest.raises(ModelImportError, match="does not exist"):
        mi.parse_onnx(str(tmp_path / "nope.onnx"))


@pytest.mark.parametrize("content", [b"", b"\x08\x07"], ids=["empty", "two-bytes"])
def test_a_file_without_a_graph_is_a_model_import_error(tmp_path: Path, content: bytes) -> None:
    """An empty or truncated file parses as an empty ModelProto (protobuf accepts it): it
    must not build into an engine of no nodes (issue 29, item 3)."""
    path = tmp_path / "model.onnx"
    path.write_bytes(content)
    assert not onnx.load_from_string(content).HasField("graph")  # what onnx makes of it
    with pytest.raises(ModelImportError, match="no graph in the file"):
        mi.parse_onnx(str(path))
    with pytest.raises(ModelImportError, match="no graph in the file"):
        mi.InferenceSession(str(path))
    with pytest.raises(ModelImportError, match="no graph in the model given"):
        mi.InferenceSession(content)
