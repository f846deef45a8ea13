"""A model's weights are held once, not twice: the importer reads large initializers from the
file straight into their arrays (importer/_wire.py), and a build handed its network
(``release_network=True``, as ``mini_infer_core.load`` and ``mini-infer build`` do) frees each
imported weight as its packed form is made. Values are checked against onnx's own reader and
onnxruntime; memory by the process's peak RSS (Linux's VmHWM, reset between phases)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import make_model, ort_run
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi
from mini_infer_core.errors import ModelImportError
from mini_infer_core.importer._wire import MIN_BLOCK, split_weights


def _mixed_model() -> onnx.ModelProto:
    """Initializers of every plain type, large and small, one with typed (not raw) data,
    dims written packed: each graph output is one of them, through Identity."""
    rng = np.random.default_rng(5)
    big = MIN_BLOCK // 2 + 7  # elements: every type's block is at least MIN_BLOCK bytes
    arrays = {
        "f32": rng.standard_normal((big // 8, 8)).astype(np.float32),
        "f16": rng.standard_normal(big).astype(np.float16),
        "f64": rng.standard_normal((3, big // 3)),
        "i64": rng.integers(-2**40, 2**40, big, dtype=np.int64),
        "i32": rng.integers(-2**30, 2**30, big, dtype=np.int32),
        "i8": rng.integers(-128, 127, 2 * big, dtype=np.int8),
        "u8": rng.integers(0, 255, 2 * big, dtype=np.uint8),
        "u16": rng.integers(0, 2**16 - 1, big, dtype=np.uint16),
        "small": rng.standard_normal((4, 4)).astype(np.float32),
        "scalar": np.array(3.5, np.float32),
    }
    inits = [numpy_helper.from_array(a, n) for n, a in arrays.items()]
    typed = rng.standard_normal(big).astype(np.float32)  # float_data, not raw_data
    inits.append(helper.make_tensor("typed", TensorProto.FLOAT, [big], typed.tolist()))
    names = [*arrays, "typed"]
    nodes = [helper.make_node("Identity", [n], [f"out_{n}"]) for n in names]
    outputs = [helper.make_tensor_value_info(f"out_{n}", t.data_type, list(t.dims))
               for n, t in zip(names, inits, strict=True)]
    return make_model(nodes, [], outputs, inits)


def test_large_initializers_are_read_from_the_file_as_onnx_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "mixed.onnx"
    onnx.save(_mixed_model(), str(path))
    split = split_weights(path)
    assert split is not None
    model = onnx.load(str(path))
    # the large raw ones are read from the file; small, typed-data ones stay in the message
    large = {model.graph.initializer[i].name for i in split[1]}
    assert large == {"f32", "f16", "f64", "i64", "i32", "i8", "u8", "u16"}
    network = mi.parse_onnx(str(path))
    for t in model.graph.initializer:
        expected = numpy_helper.to_array(t)
        got = network.constants[t.name]
        assert got.dtype == expected.dtype and got.shape == expected.shape, t.name
        np.testing.assert_array_equal(got, expected, err_msg=t.name)


def test_a_model_built_from_a_split_file_computes_what_onnxruntime_does(tmp_path: Path) -> None:
    model = _matmul_chain(4, 256)
    path = tmp_path / "chain.onnx"
    onnx.save(model, str(path))
    assert split_weights(path) is not None
    x = np.random.default_rng(1).standard_normal((4, 256)).astype(np.float32)
    got = mi.InferenceSession(str(path)).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, ort_run(model, {"x": x})[0], rtol=1e-4, atol=1e-5)


def test_files_the_walk_does_not_expect_are_read_the_ordinary_way(tmp_path: Path) -> None:
    data = _mixed_model().SerializeToString()
    twice = tmp_path / "twice.onnx"  # protobuf merges the two graphs: the walk gives up
    twice.write_bytes(data + data)
    assert split_weights(twice) is None
    network = mi.parse_onnx(str(twice))
    merged = onnx.load(str(twice))
    assert len(network.constants) == len({t.name for t in merged.graph.initializer})
    cut = tmp_path / "cut.onnx"  # a truncated file: the ordinary reader names the problem
    cut.write_bytes(data[: len(data) - 1000])
    assert split_weights(cut) is None
    with pytest.raises(ModelImportError, match="cut.onnx"):
        mi.parse_onnx(str(cut))


def _matmul_chain(layers: int, width: int) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    for i in range(layers):
        w = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"h{i}"]))
        prev = f"h{i}"
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, width])
    y = helper.make_tensor_value_info(prev, TensorProto.FLOAT, [4, width])
    return make_model(nodes, [x], [y], inits)


_PEAKS = textwrap.dedent("""
    import json, sys
    import numpy as np, onnx
    import mini_infer_core as mi

    def peak():
        status = dict(line.split(":", 1) for line in open("/proc/self/status"))
        return int(status["VmHWM"].split()[0]) / 1024

    def reset():
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")

    reset(); before = peak()
    network = mi.parse_onnx(sys.argv[1])
    parsed = peak()
    reset(); start = peak()
    engine = mi.Builder().build_engine(network, mi.BuilderConfig(), release_network=True)
    built = peak()
    print(json.dumps({"parse": parsed - before, "build": built - start,
                      "left": len(network.constants),
                      "packed": engine.build_info["constants_packed"]}))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"),
                    reason="peak RSS is read from /proc/self/status (Linux)")
def test_weights_are_held_once_while_parsing_and_building(tmp_path: Path) -> None:
    layers, width = 16, 1024  # 64 MiB of weights, each packed for the GEMM by the build
    path = tmp_path / "chain.onnx"
    onnx.save(_matmul_chain(layers, width), str(path))
    weights = layers * width * width * 4 / 2**20
    try:
        Path("/proc/self/clear_refs").open("w").close()
    except OSError:
        pytest.skip("/proc/self/clear_refs is not writable here: the peak cannot be reset")
    proc = subprocess.run([sys.executable, "-c", _PEAKS, str(path)], capture_output=True,
                          text=True, timeout=300, check=True)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["packed"] == layers and got["left"] == 0
    # parsing holds the arrays and little more (the protobuf way: 4x the weights at its peak)
    assert got["parse"] < 1.3 * weights, got
    # building holds one imported weight beside its packed form at a time, not all of them
    assert got["build"] < 0.5 * weights, got
