"""Tensor formats (issue 26 item 2): the converters against NumPy's own reshapes, the
builder's negotiation with a third-party plugin that computes in NCHW16c beside LINEAR-only
ones (against onnxruntime), the Reformat steps it inserts or leaves out, and formats kept in
the engine file, read back in another process and shown by ``inspect``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from helpers import install_plugin_module, make_model, run_cli
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi
from mini_infer_core.builder import BuilderConfig
from mini_infer_core.builder.format_timing import group_ms
from mini_infer_core.builder.timing_cache import TimingCache
from mini_infer_core.engine.format import read_engine_file
from mini_infer_core.engine.report._data import engine_data
from mini_infer_core.engine.schedule import Schedule
from mini_infer_core.ops import activation
from mini_infer_core.plugin import (
    OnnxPluginCreator,
    TensorFormat,
    from_format,
    physical_shape,
    reformat,
    to_format,
)
from mini_infer_core.plugin import _adapter as adapter
from mini_infer_core.registry import PluginRegistry, _discovery
from mini_infer_core.registry._discovery import discover
from mini_infer_core.testing import plugin_kit

F = TensorFormat


# -- converters --------------------------------------------------------------------------
def _numpy_blocked(x: np.ndarray[Any, Any], k: int) -> np.ndarray[Any, Any]:
    """NCHW... -> N, ceil(C/k), ..., k with NumPy's pad, reshape and moveaxis."""
    c = x.shape[1]
    pad = [(0, 0)] * x.ndim
    pad[1] = (0, -c % k)
    padded = np.pad(x, pad)
    blocks = padded.reshape(x.shape[0], padded.shape[1] // k, k, *x.shape[2:])
    return np.moveaxis(blocks, 2, -1)


@pytest.mark.parametrize("shape", [(2, 20, 3, 5), (1, 16, 4, 4), (3, 7, 6), (1, 33, 2, 3, 2),
                                   (2, 8, 1, 1), (1, 1, 5, 5),
                                   # over CHUNK_BYTES: back to LINEAR in parts of some rows
                                   (1, 21, 67, 600), (2, 19, 13, 40, 50)])
@pytest.mark.parametrize("fmt", [F.CHW4, F.CHW8, F.CHW16, F.HWC])
def test_converters_match_numpy_and_round_trip(shape: tuple[int, ...], fmt: TensorFormat
                                               ) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(np.float32) + 3.0  # no zeros of its own
    expected = np.moveaxis(x, 1, -1) if fmt is F.HWC else _numpy_blocked(x, fmt.block)
    got = to_format(x, fmt)
    assert got.shape == physical_shape(shape, fmt) == expected.shape
    np.testing.assert_array_equal(got, expected)
    if fmt.block and shape[1] % fmt.block:  # the tail of the last block is zeros
        assert not got[:, -1, ..., shape[1] % fmt.block:].any()
    np.testing.assert_array_equal(from_format(got, fmt, shape), x)
    out = np.full(physical_shape(shape, fmt), np.nan, np.float32)  # into a given array
    to_format(x, fmt, out)
    np.testing.assert_array_equal(out, expected)
    # between two formats other than LINEAR
    other = F.HWC if fmt is not F.HWC else F.CHW8
    np.testing.assert_array_equal(reformat(got, fmt, other, shape), to_format(x, other))


def test_physical_shapes_and_what_may_be_blocked() -> None:
    assert physical_shape((1, 20, 7, 7), F.CHW16) == (1, 2, 7, 7, 16)
    assert physical_shape((1, 20, 7, 7), F.CHW8) == (1, 3, 7, 7, 8)
    assert physical_shape((1, 20, 7, 7), F.HWC) == (1, 7, 7, 20)
    assert physical_shape((4, 5), F.LINEAR) == (4, 5)
    with pytest.raises(ValueError, match="rank 3"):
        physical_shape((4, 5), F.CHW16)
    assert [f.block for f in F] == [0, 4, 8, 16, 0]


# -- negotiation -------------------------------------------------------------------------
BLOCKED = '''
import numpy as np
from mini_infer_core.ops import activation, elementwise
from mini_infer_core.plugin import OnnxPluginCreator, TensorFormat, physical_shape, to_format
from mini_infer_core.registry import hookimpl

B = TensorFormat.CHW16
LINEAR = TensorFormat.LINEAR


def _check(x, desc):
    """What the builder promised: an array of the format's physical shape."""
    assert x.shape == physical_shape(desc.shape, desc.format), (x.shape, desc)


class Relu(activation.Relu):
    """Relu in NCHW16c (or LINEAR): output in its input's format."""

    def supports_format_combination(self, pos, in_out, num_inputs):
        return in_out[pos].format in (B, LINEAR) and in_out[pos].format is in_out[0].format

    def compute(self, x, *, out, **_):
        _check(x, self.input_descs[0])
        _check(out, self.output_descs[0])
        np.maximum(x, 0, out=out)


class Add(elementwise.Add):
    """Add in NCHW16c: both activations blocked, or a LINEAR per-channel constant (C, 1, 1)
    laid out in blocks here; output in input 0's format."""

    def supports_format_combination(self, pos, in_out, num_inputs):
        first, desc = in_out[0], in_out[pos]
        if pos == 0:
            return desc.format in (B, LINEAR)
        if first.format is LINEAR:
            return desc.format is LINEAR
        if pos == 1:
            return desc.format is B or (desc.format is LINEAR and len(desc.shape) < 4)
        return desc.format is B

    def compute(self, a, b, *, out, **_):
        da, db, do = self.input_descs[0], self.input_descs[1], self.output_descs[0]
        _check(a, da)
        _check(out, do)
        if da.format is B and db.format is LINEAR:  # per channel, in blocks of 16
            b = to_format(np.ascontiguousarray(np.broadcast_to(b, (1, *do.shape[1:]))), B)
        np.add(a, b, out=out)


@hookimpl
def mini_infer_creators():
    return [OnnxPluginCreator(c, namespace="com.test.blocked", devices=("cpu",),
                              priority=100) for c in (Relu, Add)]
'''

LINEAR_ONLY = '''
import numpy as np
from mini_infer_core.ops import activation
from mini_infer_core.plugin import OnnxPluginCreator
from mini_infer_core.registry import hookimpl


class Sigmoid(activation.Sigmoid):
    """A third-party plugin that says nothing of formats: LINEAR only."""

    def compute(self, x, *, out, **_):
        assert x.shape == tuple(self.input_descs[0].shape)
        out[...] = 1.0 / (1.0 + np.exp(-x))


@hookimpl
def mini_infer_creators():
    return [OnnxPluginCreator(Sigmoid, namespace="com.test.linear", devices=("cpu",),
                              priority=100)]
'''


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two third-party distributions: ``mi-test-blocked`` (Relu and Add in NCHW16c) and
    ``mi-test-linear`` (a LINEAR-only Sigmoid), importable here and on PYTHONPATH (use
    :func:`_env`). The process-wide registry, should this test make it, is dropped after."""
    folder = tmp_path / "site"
    install_plugin_module(folder, "mi-test-blocked", "0.0.1", "blocked", BLOCKED)
    install_plugin_module(folder, "mi-test-linear", "0.0.1", "linearonly", LINEAR_ONLY)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setattr(_discovery, "_default", None)
    return folder


def _env(site: Path) -> dict[str, str]:
    """A child process's environment that finds the test distributions, without writing a
    discovery cache others would read (the distributions are not on their path)."""
    return {**os.environ, "MINI_INFER_DISCOVERY_CACHE": "0",
            "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}


@pytest.fixture
def registry(site: Path) -> PluginRegistry:
    reg = discover(PluginRegistry())
    status = {d.name: d.status for d in reg.distributions}
    assert status["mi-test-blocked"] == status["mi-test-linear"] == "loaded"
    return reg


C = 20  # not a multiple of 16: the last block is padded


def _model() -> onnx.ModelProto:
    """x -> Relu -> Add(bias) -> Relu -> Sigmoid (LINEAR only) -> Relu -> Add(r1) -> Relu."""
    bias = numpy_helper.from_array(
        np.linspace(-1, 1, C, dtype=np.float32).reshape(C, 1, 1), "bias")
    nodes = [helper.make_node("Relu", ["x"], ["r1"], name="relu1"),
             helper.make_node("Add", ["r1", "bias"], ["a1"], name="add1"),
             helper.make_node("Relu", ["a1"], ["r2"], name="relu2"),
             helper.make_node("Sigmoid", ["r2"], ["s"], name="sigmoid"),
             helper.make_node("Relu", ["s"], ["r3"], name="relu3"),
             helper.make_node("Add", ["r3", "r1"], ["a2"], name="add2"),
             helper.make_node("Relu", ["a2"], ["y"], name="relu4")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, C, 5, 6])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, C, 5, 6])
    return make_model(nodes, [x], [y], initializers=[bias])


def _feeds() -> dict[str, np.ndarray[Any, Any]]:
    return {"x": np.random.default_rng(0).standard_normal((2, C, 5, 6)).astype(np.float32)}


def _ort(model: onnx.ModelProto) -> np.ndarray[Any, Any]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, _feeds())[0])


def _run(engine: Any) -> np.ndarray[Any, Any]:
    with engine.create_execution_context() as ctx:
        return np.asarray(ctx.execute(_feeds())["y"])


def _reformats(engine: Any) -> list[str]:
    return [nd.name for nd in engine.nodes if nd.op_type == "Reformat"]


def test_blocked_plugin_between_linear_only_ones_matches_onnxruntime(
        registry: PluginRegistry) -> None:
    model = _model()
    engine = mi.load(model, registry=registry, config=BuilderConfig(time_tactics=False))
    np.testing.assert_allclose(_run(engine), _ort(model), rtol=1e-5, atol=1e-6)
    by_name = {nd.name: nd for nd in engine.nodes}
    # the blocked plugin's nodes run in NCHW16c, the LINEAR-only Sigmoid in LINEAR
    for name in ("relu1", "add1", "relu2", "relu3", "add2", "relu4"):
        assert by_name[name].distribution == "mi-test-blocked"
        assert all(engine.tensors[o].format is F.CHW16 for o in by_name[name].outputs), name
    assert by_name["sigmoid"].distribution == "mi-test-linear"
    assert engine.tensors["s"].format is F.LINEAR
    # reformats only at the edges of the blocked runs: graph input, around the Sigmoid, and
    # the graph output (produced as y@chw16, reformatted into y)
    assert _reformats(engine) == ["reformat x linear->chw16", "reformat r2 chw16->linear",
                                  "reformat s linear->chw16", "reformat y@chw16 chw16->linear"]
    assert by_name["sigmoid"].inputs == ("r2@linear",)
    assert engine.tensors["y"].format is F.LINEAR and engine.tensors["x"].format is F.LINEAR
    assert engine.build_info["formats"] == {"reformats": 4, "tensors": {"chw16": 8}}
    assert engine.build_info["memory_plan"] is not None
    # the arena holds a blocked tensor at its padded size: 2 blocks of 16 channels, not 20
    sched = Schedule(engine, {})
    assert sched.shapes["r1"] == (2, 2, 5, 6, 16) and sched.logical["r1"] == (2, C, 5, 6)
    assert sched.nbytes("r1", engine.tensors["r1"].dtype) == 2 * 32 * 5 * 6 * 4
    # the engine report's node details name the format beside the precision
    shown = {n["name"]: n for n in engine_data(engine)["nodes"]}
    assert shown["add1"]["format"] == ["chw16"] and shown["sigmoid"]["format"] == ["linear"]


def test_negotiation_off_or_short_runs_keep_everything_linear(registry: PluginRegistry) -> None:
    model = _model()
    engine = mi.load(model, registry=registry,
                     config=BuilderConfig(time_tactics=False, negotiate_formats=False))
    assert not _reformats(engine) and "formats" not in engine.build_info
    assert all(t.format is F.LINEAR for t in engine.tensors.values())
    np.testing.assert_allclose(_run(engine), _ort(model), rtol=1e-5, atol=1e-6)
    # a single blocked-capable node between LINEAR ones: two reformats would cost more than
    # it saves, so none is inserted (the cost model of builder/formats.py)
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"], name="sigmoid"),
             helper.make_node("Relu", ["s"], ["r"], name="relu"),
             helper.make_node("Sigmoid", ["r"], ["y"], name="sigmoid2")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, C, 5, 6])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, C, 5, 6])
    short = make_model(nodes, [x], [y])
    engine = mi.load(short, registry=registry, config=BuilderConfig(time_tactics=False))
    assert not _reformats(engine)
    assert all(t.format is F.LINEAR for t in engine.tensors.values())
    np.testing.assert_allclose(_run(engine), _ort(short), rtol=1e-5, atol=1e-6)


def test_the_adapter_asks_position_by_position(registry: PluginRegistry) -> None:
    """The Add of the blocked plugin: blocked where offered, a per-channel constant (not
    offered a format) LINEAR; a plugin that says nothing takes no other format."""
    rec = registry.get_creator("Add", "1", "com.test.blocked")
    assert rec is not None
    plugin = adapter.create(rec.creator, "add", mi.plugin.PluginFieldCollection([]))
    assert adapter.offers_formats(plugin)
    shape, bias = (2, C, 5, 6), (C, 1, 1)
    descs = [(shape, mi.plugin.DataType.FLOAT), (bias, mi.plugin.DataType.FLOAT),
             (shape, mi.plugin.DataType.FLOAT)]
    assert adapter.format_combination(plugin, descs, 2, [True, False, True], F.CHW16) == [
        F.CHW16, F.LINEAR, F.CHW16]
    assert adapter.format_combination(plugin, descs, 2, [True, True, True], F.CHW16) == [
        F.CHW16, F.CHW16, F.CHW16]
    assert adapter.format_combination(plugin, descs, 2, [True, True, True], F.HWC) is None
    rec = registry.get_creator("Sigmoid", "1", "com.test.linear")
    assert rec is not None
    plugin = adapter.create(rec.creator, "sigmoid", mi.plugin.PluginFieldCollection([]))
    assert not adapter.offers_formats(plugin)  # the builder asks it nothing
    assert adapter.format_combination(plugin, [descs[0], descs[0]], 1, [True, True],
                                      F.CHW16) is None


_CHILD = """
import json, sys
import numpy as np
import mini_infer_core as mi
engine = mi.load_engine(sys.argv[1])
x = np.random.default_rng(0).standard_normal((2, 20, 5, 6)).astype(np.float32)
with engine.create_execution_context() as ctx:
    np.save(sys.argv[2], ctx.execute({"x": x})["y"])
print(json.dumps({n: t.format.value for n, t in engine.tensors.items()}))
"""


def test_formats_survive_the_engine_file_in_another_process(
        registry: PluginRegistry, site: Path, tmp_path: Path) -> None:
    model = _model()
    engine = mi.load(model, registry=registry, config=BuilderConfig(time_tactics=False))
    path = tmp_path / "blocked.engine"
    engine.save(str(path))
    header = read_engine_file(path).header
    assert header["tensors"]["r1"]["format"] == "chw16"
    assert "format" not in header["tensors"]["s"]  # LINEAR: absent, as before formats
    env = _env(site)
    out = tmp_path / "y.npy"
    done = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(out)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    formats = json.loads(done.stdout.strip().splitlines()[-1])
    assert formats == {n: t.format.value for n, t in engine.tensors.items()}
    assert formats["a2"] == "chw16" and formats["y"] == "linear"
    np.testing.assert_allclose(np.load(out), _ort(model), rtol=1e-5, atol=1e-6)
    # inspect shows them
    shown = json.loads(run_cli("inspect", str(path), "--json", env=env).stdout)
    by_name = {n["name"]: n for n in shown["nodes"]}
    assert by_name["add1"]["outputs"][0] == {"name": "a1", "shape": [2, C, 5, 6],
                                             "dtype": "FLOAT", "format": "chw16"}
    assert by_name["sigmoid"]["inputs"][0]["format"] == "linear"
    text = run_cli("inspect", str(path), env=env).stdout
    assert "[2, 20, 5, 6] chw16" in text
    assert "formats: chw16 8 tensor(s); 4 reformat step(s)\n" in text
    # `build --linear-only`: no negotiation
    onnx.save(model, str(tmp_path / "m.onnx"))
    run_cli("build", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "l.engine"),
            "--linear-only", "--no-tactic-timing", env=env)
    shown = json.loads(run_cli("inspect", str(tmp_path / "l.engine"), "--json", env=env).stdout)
    assert {t["format"] for n in shown["nodes"] for t in n["outputs"]} == {"linear"}
    assert not [n for n in shown["nodes"] if n["op_type"] == "mini_infer.core::Reformat"]
    assert [n["op_type"] for n in shown["nodes"]].count("Relu") == 4


def test_timing_chooses_per_group_counting_the_reformats() -> None:
    """What format_timing.py compares, on given step times (no clock here): a group's nodes
    in LINEAR against the same nodes in its format plus the Reformat steps serving them."""
    groups = [("chw16", ["a", "b"]), ("hwc", ["c"])]
    linear = {"a": 3.0, "b": 3.0, "c": 1.0}
    blocked = {"a": 1.0, "b": 1.0, "c": 0.5, "ra": 1.0, "rb": 1.0, "rc1": 0.5, "rc2": 0.5}
    served = {"a": ["ra"], "b": ["rb"], "c": ["rc1", "rc2"]}
    assert group_ms(groups, linear, blocked, served) == [
        {"linear": 6000.0, "chw16": 4000.0},  # kept: 4 < 6
        {"linear": 1000.0, "hwc": 1500.0}]  # not: the reformats make c slower


def test_a_timed_build_records_its_times_and_matches_onnxruntime(
        registry: PluginRegistry) -> None:
    model = _model()
    engine = mi.load(model, registry=registry, config=BuilderConfig(time_tactics=True))
    (group,) = engine.build_info["formats"]["timed"]
    assert group["format"] == "chw16" and sorted(group["nodes"]) == sorted(
        ["relu1", "add1", "relu2", "relu3", "add2", "relu4"])
    assert group["linear_ms"] > 0 and group["format_ms"] > 0
    # whichever the machine chose, the engine is consistent with it and right
    blocked = group["chosen"] == "chw16"
    assert len(_reformats(engine)) == (4 if blocked else 0)
    assert (engine.tensors["a1"].format is F.CHW16) == blocked
    np.testing.assert_allclose(_run(engine), _ort(model), rtol=1e-5, atol=1e-6)


def test_per_node_compare_reads_blocked_tensors_in_their_logical_layout(
        site: Path, tmp_path: Path) -> None:
    """``compare --per-node`` against onnxruntime: every intermediate tensor of a blocked
    engine (held in NCHW16c) is compared in NCHW, and all match."""
    path = tmp_path / "m.onnx"
    onnx.save(_model(), str(path))
    env = _env(site)
    data = json.loads(run_cli("compare", str(path), "--b", "onnxruntime", "--per-node",
                              "--json", "--no-tactic-timing", env=env).stdout)
    assert data["match"] is True
    assert data["per_node"]["first_divergence"] is None
    assert data["per_node"]["compared_tensors"] == 7


def test_dynamic_batch_in_a_blocked_engine(registry: PluginRegistry) -> None:
    """The physical shapes follow the batch given at run time."""
    model = _model()
    for t in (*model.graph.input, *model.graph.output):
        t.type.tensor_type.shape.dim[0].dim_param = "N"
    engine = mi.load(model, registry=registry, config=BuilderConfig(time_tactics=False))
    assert engine.tensors["r1"].format is F.CHW16
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(3)
    with engine.create_execution_context() as ctx:
        for n in (1, 3):
            x = rng.standard_normal((n, C, 5, 6)).astype(np.float32)
            np.testing.assert_allclose(ctx.execute({"x": x})["y"], sess.run(None, {"x": x})[0],
                                       rtol=1e-5, atol=1e-6)


def test_format_timings_go_to_the_timing_cache(registry: PluginRegistry) -> None:
    """A build with a timing cache records each group's times there; a build from that cache
    times nothing and makes the same engine, byte for byte."""
    model = _model()
    cache = TimingCache()
    first = mi.load(model, registry=registry, config=BuilderConfig(timing_cache=cache))
    (key,) = [k for k in cache.entries if k.startswith("formats chw16 x6 ")]
    assert set(cache.entries[key]) == {"linear", "chw16"}
    (timed,) = first.build_info["formats"]["timed"]
    assert cache.entries[key] == {"linear": timed["linear_ms"], "chw16": timed["format_ms"]}
    # the cache now says blocked is faster: the next build follows it without timing
    cache.entries[key] = {"linear": 9.0, "chw16": 1.0}
    added = cache.added
    again = mi.load(model, registry=registry, config=BuilderConfig(timing_cache=cache))
    twice = mi.load(model, registry=registry, config=BuilderConfig(timing_cache=cache))
    assert cache.added == added
    assert again.build_info["formats"]["timed"][0]["chosen"] == "chw16"
    assert len(_reformats(again)) == 4
    assert again.serialize() == twice.serialize()
    np.testing.assert_allclose(_run(again), _ort(model), rtol=1e-5, atol=1e-6)


def test_a_blocked_tensor_that_is_also_a_graph_output(registry: PluginRegistry) -> None:
    """``a1`` feeds blocked nodes and is a graph output: its producer writes ``a1@chw16``,
    its blocked readers read that, and one Reformat step makes the LINEAR output."""
    model = _model()
    model.graph.output.append(
        helper.make_tensor_value_info("a1", TensorProto.FLOAT, [2, C, 5, 6]))
    engine = mi.load(model, registry=registry, config=BuilderConfig(time_tactics=False))
    by_name = {nd.name: nd for nd in engine.nodes}
    assert by_name["add1"].outputs == ("a1@chw16",) and by_name["relu2"].inputs == ("a1@chw16",)
    assert "reformat a1@chw16 chw16->linear" in _reformats(engine)
    assert engine.tensors["a1"].format is F.LINEAR and engine.tensors["a1"].kind == "output"
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = dict(zip(["y", "a1"], sess.run(["y", "a1"], _feeds()), strict=True))
    with engine.create_execution_context() as ctx:
        got = ctx.execute(_feeds())
    for name in ("y", "a1"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6)


class _BlockedSigmoid(activation.Sigmoid):
    """Sigmoid that takes NCHW16c and computes on every lane, padding included: its
    padding channels come out 0.5, which the kit reports."""

    def supports_format_combination(self, pos: int, in_out: Any, num_inputs: int) -> bool:
        return in_out[pos].format in (F.LINEAR, F.CHW16)

    def compute(self, x: Any, *, out: Any, **_: Any) -> None:
        out[...] = 1.0 / (1.0 + np.exp(-x))


def test_the_plugin_kit_runs_a_plugin_in_a_format(registry: PluginRegistry) -> None:
    """``run_plugin(..., formats=...)``: inputs given LINEAR are handed over blocked, the
    outputs come back LINEAR; a refused combination and non-zero padding are reported."""
    rec = registry.get_creator("Add", "1", "com.test.blocked")
    assert rec is not None
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, C, 3, 4)).astype(np.float32)
    bias = rng.standard_normal((C, 1, 1)).astype(np.float32)
    add = adapter.create(rec.creator, "add", mi.plugin.PluginFieldCollection([]))
    (out,) = plugin_kit.run_plugin(add, [x, bias], formats=[F.CHW16, F.LINEAR, F.CHW16])
    np.testing.assert_allclose(out, x + bias, rtol=1e-6)
    with pytest.raises(plugin_kit.PluginCheckError, match="refuses HWC at position 0"):
        plugin_kit.run_plugin(add, [x, bias], formats=[F.HWC, F.LINEAR, F.HWC])
    sigmoid = OnnxPluginCreator(_BlockedSigmoid, namespace="t").create_plugin(
        "s", mi.plugin.PluginFieldCollection([]))
    (ok,) = plugin_kit.run_plugin(sigmoid, [x[:, :16]], formats=[F.CHW16, F.CHW16])
    np.testing.assert_allclose(ok, 1 / (1 + np.exp(-x[:, :16])), rtol=1e-6)
    with pytest.raises(plugin_kit.PluginCheckError, match="non-zero padding channels"):
        plugin_kit.run_plugin(sigmoid, [x], formats=[F.CHW16, F.CHW16])


# -- Reformat steps from plugins ---------------------------------------------------------
class _CountingReformat(mi.plugin.IPluginV2DynamicExt):
    """A third-party Reformat (fields ``src``, ``dst``): the core's converters, counted; it
    takes LINEAR <-> CHW16 only."""

    plugin_type, plugin_version, plugin_namespace = "Reformat", "1", "com.test.reformat"
    runs = 0

    def __init__(self, src: TensorFormat, dst: TensorFormat) -> None:
        self.src, self.dst, self.shape = src, dst, ()

    num_outputs = 1

    def get_output_dimensions(self, index: int, inputs: Any, expr_builder: Any) -> Any:
        return inputs[0]

    def supports_format_combination(self, pos: int, in_out: Any, num_inputs: int) -> bool:
        return (in_out[pos].format is (self.src if pos < num_inputs else self.dst)
                and {self.src, self.dst} == {F.LINEAR, F.CHW16})

    def configure_plugin(self, inputs: Any, outputs: Any) -> None:
        self.shape = tuple(inputs[0].desc.shape)

    def enqueue(self, inputs: Any, outputs: Any, workspace: Any, stream: Any) -> None:
        type(self).runs += 1
        reformat(inputs[0], self.src, self.dst, self.shape, outputs[0])

    def serialize(self) -> bytes:
        return mi.plugin.encode_fields(mi.plugin.fields_from_values(
            {"src": self.src.value, "dst": self.dst.value}))

    def clone(self) -> Any:
        return _CountingReformat(self.src, self.dst)


class _ReformatCreator(mi.plugin.IPluginCreator):
    name, plugin_version, domain, op_type = "Reformat", "1", "mini_infer.core", "Reformat"
    devices, priority = ("cpu",), 1000

    def __init__(self, namespace: str, fail: bool = False) -> None:
        self.plugin_namespace, self.fail = namespace, fail

    @property
    def field_names(self) -> tuple[str, ...]:
        return ("src", "dst")

    def create_plugin(self, name: str, fields: Any) -> Any:
        if self.fail:
            raise RuntimeError("no reformat here")
        v = fields.values_dict()
        return _CountingReformat(F(str(v["src"])), F(str(v["dst"])))

    def deserialize_plugin(self, name: str, data: bytes) -> Any:
        v = mi.plugin.decode_fields(data).values_dict()
        return _CountingReformat(F(str(v["src"])), F(str(v["dst"])))


def test_reformat_steps_come_from_the_best_plugin_that_takes_them(
        registry: PluginRegistry) -> None:
    """The builder asks the creators registered for the core's Reformat, best first: one
    whose creator fails is passed over (its reason kept in build_info), one that takes the
    combination serves every step, and the engine's outputs match onnxruntime."""
    registry.register_creator(_ReformatCreator("com.test.reformat"), distribution="mi-t-rf")
    broken = _ReformatCreator("com.test.broken", fail=True)
    broken.priority = 2000
    registry.register_creator(broken, distribution="mi-t-broken")
    model = _model()
    _CountingReformat.runs = 0
    engine = mi.load(model, registry=registry, config=BuilderConfig(time_tactics=False))
    steps = [nd for nd in engine.nodes if nd.op_type == "Reformat"]
    assert steps and {nd.plugin_namespace for nd in steps} == {"com.test.reformat"}
    assert {nd.distribution for nd in steps} == {"mi-t-rf"}
    assert "no reformat here" in engine.build_info["reformat_refusals"]["mi-t-broken"]
    np.testing.assert_allclose(_run(engine), _ort(model), rtol=1e-5, atol=1e-6)
    assert _CountingReformat.runs == len(steps)
