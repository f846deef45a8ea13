"""The importer's own reader of ONNX's wire format (importer/_proto.py, _tensors.py; issue 30):
it reads every model of onnx's backend test data and of tests/data/models as onnx's own
parser does (same graph, attributes, tensors), its schema is onnx.proto's, and the .onnx path
of ``InferenceSession`` and ``mini-infer run`` no longer imports onnx (nor ml_dtypes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from google.protobuf.descriptor import FieldDescriptor
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi
from mini_infer_core.importer import _proto
from mini_infer_core.importer._proto import MESSAGES, Span, Unreadable, read_model
from mini_infer_core.importer._tensors import Fallback, own_array

ROOT = Path(__file__).resolve().parents[1]
ONNX_DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
#: the model files of onnx's backend test data (simple, pytorch-converted, pytorch-operator,
#: real, light) and the exported ones that ship here
MODELS = sorted(ONNX_DATA.rglob("*.onnx")) + sorted((ROOT / "tests" / "data" / "models").glob(
    "*.onnx"))


@pytest.fixture(scope="module")
def node_cases() -> list[tuple[str, bytes]]:
    """The conformance models (onnx.backend.test.case.node, as tests/test_conformance.py
    collects them), serialized: onnx generates them rather than shipping files."""
    import warnings

    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = [c for c in collect_testcases(None) if c.kind == "node"]
    return [(c.name, c.model.SerializeToString()) for c in cases]

_KINDS = {FieldDescriptor.TYPE_INT64: "i64", FieldDescriptor.TYPE_INT32: "i32",
          FieldDescriptor.TYPE_ENUM: "i32", FieldDescriptor.TYPE_UINT64: "u64",
          FieldDescriptor.TYPE_FLOAT: "f32", FieldDescriptor.TYPE_DOUBLE: "f64",
          FieldDescriptor.TYPE_STRING: "str", FieldDescriptor.TYPE_BYTES: "bytes",
          FieldDescriptor.TYPE_MESSAGE: "msg"}


def test_the_schema_is_onnx_proto_s() -> None:
    """Every message reachable from ModelProto, every field: number, name, kind, repeated,
    message type, and the oneof groups, as onnx's own descriptors say."""
    seen: set[str] = set()
    todo = [onnx.ModelProto.DESCRIPTOR]
    while todo:
        d = todo.pop()
        name = d.full_name.removeprefix("onnx.")
        if name in seen:
            continue
        seen.add(name)
        assert name in MESSAGES, f"the reader has no schema for {name}"
        ours = MESSAGES[name].FIELDS
        theirs = {f.number: (f.name, _KINDS[f.type], f.is_repeated,
                             f.message_type.full_name.removeprefix("onnx.")
                             if f.message_type else "") for f in d.fields}
        assert ours == theirs, name
        oneofs = {f.name: o.name for o in d.oneofs for f in o.fields}
        assert MESSAGES[name].ONEOFS == oneofs, name
        todo += [f.message_type for f in d.fields if f.message_type]
    assert seen == set(MESSAGES)


def _tensors(obj: Any) -> list[Any]:
    """Every TensorProto inside a model (initializers, attributes, bodies, functions)."""
    out: list[Any] = []

    def walk(msg: Any) -> None:
        name = _proto._name_of(msg)
        if name == "TensorProto":
            out.append(msg)
            return
        for fname, kind, repeated, _ in MESSAGES[name].FIELDS.values():
            if kind != "msg":
                continue
            if repeated:
                for v in getattr(msg, fname):
                    walk(v)
            elif msg.HasField(fname):
                walk(getattr(msg, fname))

    walk(obj)
    return out


def _compare(label: str, ours: Any, theirs: Any, data: bytes, fh: Any) -> tuple[int, int]:
    """Same fields, and every tensor's array; (arrays compared, narrow tensors left)."""

    def read(span: Span) -> bytes:
        return data[span.start:span.stop]

    assert _proto.walk(ours, read) == _proto.walk(theirs), label
    arrays = narrow = 0
    for mine, t in zip(_tensors(ours), _tensors(theirs), strict=True):
        if t.data_location == TensorProto.EXTERNAL:
            continue
        try:
            got = own_array(mine, fh)
        except Fallback:
            assert t.data_type not in range(1, 16) or t.HasField("segment"), (
                label, t.name, t.data_type)
            narrow += 1
            continue
        want = numpy_helper.to_array(t)
        assert got.dtype == want.dtype and got.shape == want.shape, (label, t.name)
        assert got.flags.writeable, (label, t.name)
        if want.dtype == object:
            assert got.tolist() == want.tolist(), (label, t.name)
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{label} {t.name}")
        arrays += 1
    return arrays, narrow


def test_every_model_reads_as_onnx_reads_it(node_cases: list[tuple[str, bytes]]) -> None:
    """Same fields everywhere (the graph, attributes, types, tensors' bytes), and every
    tensor's array as numpy_helper gives it (or, for a narrow type, a Fallback to onnx)."""
    assert len(MODELS) > 100 and len(node_cases) > 1000, "onnx's backend test data not found"
    arrays = narrow = 0
    for path in MODELS:
        with open(path, "rb") as fh:
            a, n = _compare(str(path), read_model(path),
                            onnx.load(str(path), load_external_data=False),
                            path.read_bytes(), fh)
        arrays, narrow = arrays + a, narrow + n
    for name, data in node_cases:
        a, n = _compare(name, _proto.read_model_bytes(data), onnx.load_from_string(data),
                        data, None)
        arrays, narrow = arrays + a, narrow + n
    assert arrays > 1000, arrays


def _network(path: Path | bytes, reader: str) -> Any:
    os.environ["MINI_INFER_ONNX_READER"] = reader
    try:
        return mi.parse_onnx(path)
    except mi.MiniInferError as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        del os.environ["MINI_INFER_ONNX_READER"]


def _describe(net: Any) -> Any:
    if isinstance(net, str):
        return net

    def value(a: Any) -> Any:
        if not isinstance(a, np.ndarray):
            return a
        return (a.dtype.str, a.shape, a.tolist() if a.dtype == object else a.tobytes())

    return (net.name, net.opsets,
            [(t.name, t.dtype, t.shape, t.value_kind) for t in net.inputs],
            [(t.name, t.dtype, t.shape, t.value_kind) for t in net.outputs],
            [(n.name, n.op_type, n.domain, n.inputs, n.outputs, n.opset,
              [(f.name, f.type, f.is_tensor, value(f.data)) for f in n.fields.fields])
             for n in net.nodes],
            {k: value(v) for k, v in net.constants.items()})


def test_the_importer_makes_the_same_network_either_way(
        node_cases: list[tuple[str, bytes]]) -> None:
    """parse_onnx on every model, from its file and from its bytes: the own reader's network
    (or error) is the one onnx's parser gives (MINI_INFER_ONNX_READER=onnx reads with
    onnx)."""
    differ = []
    sources: list[tuple[str, Path | bytes]] = [(str(p), p) for p in MODELS]
    for label, source in [*sources, *node_cases]:
        ours, theirs = _network(source, "own"), _network(source, "onnx")
        if _describe(ours) != _describe(theirs):
            differ.append(label)
    assert not differ, f"{len(differ)} models import differently: {differ[:20]}"


def test_what_the_reader_does_not_expect_is_left_to_onnx(tmp_path: Path) -> None:
    """A singular message given twice (protobuf merges), a wire type the schema does not
    have, text that is not UTF-8: Unreadable, and the importer reads the file with onnx."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                                                [x], [helper.make_tensor_value_info(
                                                    "y", TensorProto.FLOAT, [2])]))
    data = model.SerializeToString()
    graph = model.graph.SerializeToString()
    twice = data + bytes([7 << 3 | 2]) + _varint(len(graph)) + graph
    with pytest.raises(Unreadable):
        _proto.read_model_bytes(twice)
    wrong_wire = bytes([1 << 3 | 2, 1, 0]) + data  # ir_version as bytes
    with pytest.raises(Unreadable):
        _proto.read_model_bytes(wrong_wire)
    path = tmp_path / "twice.onnx"
    path.write_bytes(twice)
    net = mi.parse_onnx(path)  # onnx merges the two graphs: the network is still Relu's
    assert [n.op_type for n in net.nodes] == ["Relu", "Relu"]


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        if n < 0x80:
            return bytes(out + bytes([n]))
        out.append(n & 0x7F | 0x80)
        n >>= 7


def test_a_narrow_type_falls_back_to_onnx(tmp_path: Path) -> None:
    """A bfloat16 initializer: read by onnx (with ml_dtypes), built and run as before."""
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    init = helper.make_tensor("w", TensorProto.BFLOAT16, [2, 3], w.flatten().tolist())
    g = helper.make_graph(
        [helper.make_node("Cast", ["w"], ["wf"], to=TensorProto.FLOAT),
         helper.make_node("Add", ["x", "wf"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [init])
    path = tmp_path / "bf16.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    with pytest.raises(Fallback):
        own_array(read_model(path).graph.initializer[0], None)
    x = np.ones((2, 3), np.float32)
    (y,) = mi.InferenceSession(str(path)).run(None, {"x": x})
    np.testing.assert_array_equal(y, x + w)


_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import mini_infer_core as mi
    from mini_infer_core.cli.main import main
    name, x = sys.argv[4], np.load(sys.argv[2])
    (y,) = mi.InferenceSession(sys.argv[1]).run(None, {name: x})[:1]
    np.save(sys.argv[3], y)
    seen = {"session": sorted(m for m in ("onnx", "ml_dtypes") if m in sys.modules)}
    try:
        main(["run", sys.argv[1], "--input", f"{name}={sys.argv[2]}"])
    except SystemExit as exit:
        assert not exit.code, exit.code
    seen["run"] = sorted(m for m in ("onnx", "ml_dtypes") if m in sys.modules)
    print(json.dumps(seen))
""")

_RNG = np.random.default_rng(0)
#: the exported models that ship here, each with an input
_EXPORTED = {
    "torch_smallcnn": ("x", _RNG.standard_normal((1, 3, 32, 32)).astype(np.float32)),
    "torch_encoder": ("ids", _RNG.integers(0, 100, (2, 16)).astype(np.int64)),
    "torch_recurrent": ("x", _RNG.standard_normal((2, 9, 8)).astype(np.float32)),
    "torch_logmel": ("audio", np.sin(2 * np.pi * 440 * np.arange(16000) / 16000)[None].astype(
        np.float32)),
}
#: onnxruntime's STFT is float32: the log of weak mel bins amplifies its rounding (as in
#: tests/test_exported_models.py)
_TOLERANCE = {"torch_logmel": {"rtol": 1e-3, "atol": 2e-3}}


@pytest.mark.parametrize("model", sorted(_EXPORTED))
def test_an_onnx_file_is_run_without_importing_onnx(model: str, tmp_path: Path) -> None:
    """``InferenceSession("model.onnx")`` and ``mini-infer run model.onnx`` in a fresh
    process: onnx and ml_dtypes are never imported; the result is onnxruntime's."""
    path = ROOT / "tests" / "data" / "models" / f"{model}.onnx"
    name, x = _EXPORTED[model]
    np.save(tmp_path / "x.npy", x)
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(tmp_path / "x.npy"),
                           str(tmp_path / "y.npy"), name], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen == {"session": [], "run": []}, seen
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, {name: x})[0]
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), want,
                               **_TOLERANCE.get(model, {"rtol": 1e-3, "atol": 1e-4}))
