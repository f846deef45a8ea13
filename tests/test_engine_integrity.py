"""Engines bound to what built them (issue 17, items 1, 2, 3 and 5): the plugin distribution
of each node, the producing core's version, the file's end, text fields of ONNX files, and
plugins whose fields or serialization are wrong."""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from helpers import ROOT, Venv, make_venv
from onnx import TensorProto, helper

import mini_infer_core as mi
from mini_infer_core.errors import (
    BuildError,
    EngineFormatError,
    EngineIntegrityError,
    ModelImportError,
    PluginInterfaceError,
    PluginSubstituteError,
    PluginSubstituteWarning,
)
from mini_infer_core.plugin import OnnxPlugin, OnnxPluginCreator, fields_from_values
from mini_infer_core.registry import PluginRegistry, discover

L2 = ("L2Norm", "1", "com.example")
ORIGINAL = "mini-infer-example-l2norm"


def _l2norm_model(epsilon: Any = 1e-6) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("L2Norm", ["r"], ["y"], domain="com.example", name="norm",
                              epsilon=epsilon, axis=-1)]
    model = helper.make_model(helper.make_graph(nodes, "l2", [x], [y]), opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    model.ir_version = 8
    return model


def _with_l2norm_from(distribution: str, version: str) -> PluginRegistry:
    """The installed plugins, with com.example::L2Norm provided by ``distribution``."""
    full = discover()
    reg = PluginRegistry()
    for dev in full.devices:
        reg.register_device(dev.device, distribution=dev.distribution)
    for rec in full.creators:
        if rec.key == L2:
            reg.register_creator(rec.creator, distribution=distribution,
                                 distribution_version=version)
        else:
            reg.register_creator(rec.creator, distribution=rec.distribution,
                                 distribution_version=rec.distribution_version)
    return reg


@pytest.fixture(scope="module")
def l2_engine() -> bytes:
    reg = discover()
    if reg.get_creator(*L2) is None:
        pytest.skip("the example plugin mini-infer-example-l2norm is not installed "
                    "(bash scripts/setup.sh installs it)")
    return bytes(mi.load(_l2norm_model(), registry=reg).serialize())


# -- 1: a plugin from another distribution than the one that built the engine ------------
def test_a_substitute_distribution_is_refused_naming_node_plugin_and_both_distributions(
        l2_engine: bytes) -> None:
    fork = _with_l2norm_from("l2norm-fork", "9.9")
    with pytest.raises(PluginSubstituteError) as err:
        mi.Runtime(fork).deserialize_engine(l2_engine)
    msg = str(err.value)
    assert isinstance(err.value, EngineFormatError)
    assert "'norm' (L2Norm)" in msg and "com.example::L2Norm v1" in msg
    assert f"distribution {ORIGINAL} 0.1.0" in msg and "distribution l2norm-fork 9.9" in msg
    assert f"pip install {ORIGINAL}==0.1.0" in msg
    assert "allow_substitutes=True" in msg and "--allow-plugin-substitutes" in msg
    assert "relu" not in msg  # the Relu's distribution did not change


def test_a_substitute_loads_when_allowed_and_a_warning_says_so(
        l2_engine: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    fork = _with_l2norm_from("l2norm-fork", "9.9")
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    with pytest.warns(PluginSubstituteWarning, match="l2norm-fork 9.9"):
        engine = mi.Runtime(fork, allow_substitutes=True).deserialize_engine(l2_engine)
    r = np.maximum(x, 0)
    expected = r / np.sqrt((r * r).sum(-1, keepdims=True) + 1e-6)
    with engine.create_execution_context() as ctx:
        np.testing.assert_allclose(ctx.execute({"x": x})["y"], expected, rtol=1e-5)
    monkeypatch.setenv("MINI_INFER_ALLOW_PLUGIN_SUBSTITUTES", "1")
    with pytest.warns(PluginSubstituteWarning):
        mi.Runtime(fork).deserialize_engine(l2_engine)


def test_another_version_of_the_same_distribution_is_no_substitute(l2_engine: bytes) -> None:
    """The plugin's own version is the serialization contract; upgrading the wheel is fine."""
    mi.Runtime(_with_l2norm_from(ORIGINAL, "0.2.0")).deserialize_engine(l2_engine)


_FORK_PLUGIN = '''
from mini_infer_l2norm_fork import _orig


class L2Norm(_orig.L2Norm):
    """The same plugin, computing twice the original's output."""

    def compute(self, x, *, out, epsilon, axis):
        super().compute(x, out=out, epsilon=epsilon, axis=axis)
        out *= 2


class L2NormCreatorType(_orig.L2NormCreatorType):
    def __init__(self, **kw):
        super().__init__(L2Norm, **kw)

    def deserialize_plugin(self, name, data):
        plugin = super().deserialize_plugin(name, data)
        twin = L2Norm(name, **plugin.attrs)
        twin.plugin_namespace = self.plugin_namespace
        return twin


L2NormCreator = L2NormCreatorType()
'''


def _fork_wheel(tmp: Path) -> Path:
    """A second distribution, ``mini-infer-l2norm-fork``, registering the same
    com.example::L2Norm v1 (with a kernel that computes something else)."""
    src = tmp / "fork"
    shutil.copytree(ROOT / "examples" / "plugins" / "l2norm", src,
                    ignore=shutil.ignore_patterns("tests", "__pycache__", "*.egg-info"))
    pkg = src / "src" / "mini_infer_l2norm"
    (pkg / "plugin.py").rename(pkg / "_orig.py")
    (pkg / "plugin.py").write_text(_FORK_PLUGIN)
    hooks = (pkg / "hooks.py").read_text().replace("mini_infer_l2norm.plugin",
                                                   "mini_infer_l2norm_fork.plugin")
    (pkg / "hooks.py").write_text(hooks)
    pkg.rename(src / "src" / "mini_infer_l2norm_fork")
    pyproject = (src / "pyproject.toml").read_text()
    pyproject = pyproject.replace('name = "mini-infer-example-l2norm"',
                                  'name = "mini-infer-l2norm-fork"')
    pyproject = pyproject.replace("mini_infer_l2norm", "mini_infer_l2norm_fork")
    (src / "pyproject.toml").write_text(pyproject)
    out = tmp / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(out), str(src)], check=True)
    (wheel,) = out.glob("*.whl")
    return wheel


@pytest.fixture(scope="module")
def fork_venv(tmp_path_factory: pytest.TempPathFactory, wheels: dict[str, Path]) -> Venv:
    env = make_venv(tmp_path_factory, wheels, "core", "cpu", "l2norm")
    env.pip("install", "--no-deps", str(_fork_wheel(tmp_path_factory.mktemp("fork"))))
    return env


@pytest.mark.slow
def test_real_wheels_a_blocked_or_uninstalled_original_is_not_silently_replaced(
        fork_venv: Venv, tmp_path: Path) -> None:
    model, engine = tmp_path / "l2.onnx", tmp_path / "l2.engine"
    onnx.save(_l2norm_model(), str(model))
    x = np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    # -p after the command: this CLI takes it there (pytest's order is issue 17's item 10)
    no_fork, no_orig = ("-p", "no:mini-infer-l2norm-fork"), ("-p", f"no:{ORIGINAL}")
    fork_venv.cli("build", *no_fork, str(model), "-o", str(engine))
    header = json.loads(engine.read_bytes()[128:].split(b"\0", 1)[0])
    (norm,) = [n["plugin"] for n in header["nodes"] if n["name"] == "norm"]
    assert (norm["distribution"], norm["distribution_version"]) == (ORIGINAL, "0.1.0")
    ok = tmp_path / "ok"
    fork_venv.cli("run", *no_fork, str(engine), "--input", f"x={tmp_path / 'x.npy'}",
                  "--output-dir", str(ok))
    # the original blocked: the fork registers the same plugin; loading refuses it
    proc = fork_venv.cli("run", *no_orig, str(engine), check=False)
    assert proc.returncode == 2, proc.stderr
    assert "PluginSubstituteError" in proc.stderr
    assert "node 'norm' (L2Norm)" in proc.stderr
    assert f"built by distribution {ORIGINAL} 0.1.0" in proc.stderr
    assert "provided by distribution mini-infer-l2norm-fork 0.1.0" in proc.stderr
    # allowed: it runs, says so, and indeed computes something else
    sub = tmp_path / "sub"
    proc = fork_venv.cli("run", *no_orig, str(engine), "--allow-plugin-substitutes",
                         "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", str(sub))
    assert "PluginSubstituteWarning" in proc.stderr and "mini-infer-l2norm-fork" in proc.stderr
    np.testing.assert_allclose(np.load(sub / "y.npy"), 2 * np.load(ok / "y.npy"), rtol=1e-6)
    # the original uninstalled: the same refusal
    fork_venv.pip("uninstall", "-y", ORIGINAL)
    proc = fork_venv.cli("run", str(engine), check=False)
    assert proc.returncode == 2 and "PluginSubstituteError" in proc.stderr
    assert f"pip install {ORIGINAL}==0.1.0" in proc.stderr


# -- 2: the core that made the engine, and the format version ----------------------------
def _crc_chunks(body: bytes) -> bytes:
    step = 8 * 2**20
    return b"".join(struct.pack("<I", zlib.crc32(body[i : i + step]))
                    for i in range(0, len(body), step))


def _relayout(raw: bytes, edit: Any = None, version: int | None = None) -> bytes:
    """The engine with its header edited (``edit(header)``) and/or another format version,
    laid out and checksummed anew as docs/engine-format.md describes it."""
    magic, ver, flags, h_off, h_len, d_off, d_len = struct.unpack("<8sIIQQQQ", raw[:48])
    header = json.loads(raw[h_off : h_off + h_len])
    if edit is not None:
        edit(header)
    head = json.dumps(header, separators=(",", ":")).encode()
    data_off = (128 + len(head) + 63) // 64 * 64
    body = head + b"\0" * (data_off - 128 - len(head)) + raw[d_off : d_off + d_len]
    pre = struct.pack("<8sIIQQQQ", magic, ver if version is None else version, flags, 128,
                      len(head), data_off, d_len)
    digest = hashlib.sha256(pre + _crc_chunks(body)).digest()
    return pre + digest + b"\0" * 48 + body


def _producer(version: str) -> Any:
    def edit(header: dict[str, Any]) -> None:
        header["producer"] = f"mini-infer-core {version}"
    return edit


def test_the_relayout_helper_itself_gives_a_loadable_engine(l2_engine: bytes) -> None:
    mi.Runtime().deserialize_engine(_relayout(l2_engine))


def test_an_engine_from_a_newer_core_is_refused_with_upgrade_advice(l2_engine: bytes) -> None:
    with pytest.raises(EngineFormatError) as err:
        mi.Runtime().deserialize_engine(_relayout(l2_engine, _producer("9.0.0")))
    msg = str(err.value)
    assert "made by mini-infer-core 9.0.0, newer than this one (0.1.0)" in msg
    assert "upgrade mini-infer-core" in msg and "'mini-infer-core>=9.0.0'" in msg
    assert "rebuild the engine" in msg


def test_an_engine_from_an_older_core_of_the_same_format_loads(l2_engine: bytes) -> None:
    mi.Runtime().deserialize_engine(_relayout(l2_engine, _producer("0.0.9")))


@pytest.mark.parametrize("producer", [None, "somebody else 1.0", "mini-infer-core banana"])
def test_an_engine_naming_no_readable_producer_is_refused(l2_engine: bytes,
                                                          producer: str | None) -> None:
    def edit(header: dict[str, Any]) -> None:
        if producer is None:
            del header["producer"]
        else:
            header["producer"] = producer
    with pytest.raises(EngineFormatError, match="rebuild"):
        mi.Runtime().deserialize_engine(_relayout(l2_engine, edit))


def _refusal(l2_engine: bytes, producer: str, version: int) -> str:
    """The message an engine relaid with this producer and format version is refused with."""
    raw = _relayout(l2_engine, _producer(producer), version=version)
    with pytest.raises(EngineFormatError) as err:
        mi.Runtime().deserialize_engine(raw)
    return str(err.value)


def test_a_newer_format_version_says_upgrade_naming_the_core_that_made_it(
        l2_engine: bytes) -> None:
    msg = _refusal(l2_engine, "0.4.0", 3)
    assert "format version 3 (made by mini-infer-core 0.4.0) is newer" in msg
    assert "upgrade mini-infer-core (pip install 'mini-infer-core>=0.4.0')" in msg
    assert "or rebuild the engine" in msg


def test_an_older_format_version_says_rebuild_or_install_the_core_that_reads_it(
        l2_engine: bytes) -> None:
    msg = _refusal(l2_engine, "0.0.7", 1)
    assert "rebuild the engine" in msg
    assert "install mini-infer-core 0.0.7 that reads format 1" in msg


# -- 3: bytes after the end; text fields of an ONNX file that are not text -----------------
@pytest.mark.parametrize("extra", [b"\0", b"appended by a careless copy", b"MINIENG\0" * 40])
def test_bytes_appended_to_an_engine_are_rejected_as_trailing_bytes(
        l2_engine: bytes, extra: bytes, tmp_path: Path) -> None:
    raw = l2_engine + extra
    with pytest.raises(EngineIntegrityError, match=f"{len(extra)} trailing bytes after the end"):
        mi.Runtime().deserialize_engine(raw)
    path = tmp_path / "appended.engine"
    path.write_bytes(raw)
    with pytest.raises(EngineIntegrityError, match=f"ends at byte {len(l2_engine)}"):
        mi.Runtime().load_engine(path)


def _with_bytes(model: onnx.ModelProto, text: bytes, replacement: bytes) -> bytes:
    raw: bytes = model.SerializeToString()
    assert raw.count(text) == 1
    return raw.replace(text, replacement)


def test_an_operator_type_that_is_not_text_is_a_model_import_error() -> None:
    """Two unknown operators, one of them not UTF-8: the unsupported-operator report sorted
    str with bytes (TypeError) before the importer checked text fields."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Frobnicate", ["x"], ["t"], name="a"),
         helper.make_node("QQQQ", ["t"], ["y"], name="b")], "g", [x], [y]),
        opset_imports=[helper.make_opsetid("", 17)])
    raw = _with_bytes(model, b"QQQQ", b"\xff\xfeQQ")
    with pytest.raises(ModelImportError, match="node 1: an operator type is not valid UTF-8"):
        mi.Builder().build_engine(mi.parse_onnx(raw))


@pytest.mark.parametrize("field", [b"NODENAME", b"INPUTNAME", b"com.weird"])
def test_other_text_fields_that_are_not_text_are_model_import_errors(field: bytes) -> None:
    x = helper.make_tensor_value_info("INPUTNAME", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["INPUTNAME"], ["t"], name="NODENAME"),
         helper.make_node("Op", ["t"], ["y"], name="n2", domain="com.weird")], "g", [x], [y]),
        opset_imports=[helper.make_opsetid("", 17)])
    raw = model.SerializeToString().replace(field, b"\xc3(" + field[2:])
    with pytest.raises(ModelImportError, match="not valid UTF-8"):
        mi.Builder().build_engine(mi.parse_onnx(raw))


# -- 5: a plugin whose serialize() fails; fields of the wrong type -------------------------
class Fragile(OnnxPlugin):
    """A plugin whose serialization is broken (as a string given for a float would break
    one that packs its fields with struct)."""

    domain = "com.test"
    attributes = {"scale": 1.0}
    result: Any = None

    def compute(self, x: Any, *, out: Any, scale: float) -> None:
        np.multiply(x, scale, out=out)

    def serialize(self) -> bytes:
        if Fragile.result is not None:
            return Fragile.result  # type: ignore[no-any-return,unused-ignore]
        return struct.pack("<f", "not a float")


def _fragile_engine() -> mi.Engine:
    reg = discover()
    reg.register_creator(OnnxPluginCreator(Fragile, namespace="com.test"),
                         distribution="fragile-plugins", distribution_version="0.3.0")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Fragile", ["x"], ["y"], domain="com.test", name="weak")], "g",
        [x], [y]), opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.test", 1)])
    return mi.load(model, registry=reg)


def test_a_failing_serialize_names_the_node_plugin_and_distribution(tmp_path: Path) -> None:
    engine = _fragile_engine()
    with pytest.raises(PluginInterfaceError) as err:
        engine.save(str(tmp_path / "f.engine"))
    msg = str(err.value)
    assert "node 'weak' (com.test::Fragile, plugin com.test::Fragile v1" in msg
    assert "from fragile-plugins 0.3.0" in msg
    assert "serialize() failed" in msg and "required argument is not a float" in msg
    assert list(tmp_path.iterdir()) == []


def test_a_serialize_returning_no_bytes_names_the_node(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = _fragile_engine()
    monkeypatch.setattr(Fragile, "result", "text")
    with pytest.raises(PluginInterfaceError, match="'weak'.*returned str, not bytes"):
        engine.serialize()


def test_a_string_for_a_float_attribute_is_refused_when_the_plugin_is_created(
        l2_engine: bytes) -> None:
    """Before: the build succeeded and writing the engine failed in format.py (ValueError from
    float('abc')), naming no node."""
    with pytest.raises(BuildError) as err:
        mi.load(_l2norm_model(epsilon="abc"))
    msg = str(err.value)
    assert "node 'norm'" in msg and "mini-infer-example-l2norm" in msg
    assert "attribute 'epsilon' must be a float" in msg and "str 'abc'" in msg


@pytest.mark.parametrize(("values", "expected"), [
    ({"epsilon": "abc"}, "'epsilon' must be a float"),
    ({"axis": "last"}, "'axis' must be an int"),
    ({"axis": (1, 2)}, "'axis' must be an int"),
    ({"epsilon": b"\x00"}, "'epsilon' must be a float"),
])
def test_field_types_are_checked_by_create_plugin(values: dict[str, Any], expected: str,
                                                  l2_engine: bytes) -> None:
    rec = discover().get_creator(*L2)
    assert rec is not None
    with pytest.raises(PluginInterfaceError, match=expected):
        rec.creator.create_plugin("n", fields_from_values(values))
    plugin = rec.creator.create_plugin("n", fields_from_values({"epsilon": 1, "axis": 0}))
    assert plugin.attrs == {"epsilon": 1.0, "axis": 0}  # type: ignore[attr-defined]


@pytest.mark.parametrize("cuts", [(), (7,), (3, 4_000_000, 9_000_000), (8 * 2**20,),
                                  (1, 8 * 2**20 - 1, 8 * 2**20 + 5, 16 * 2**20)])
def test_chunk_digests_are_those_of_the_concatenated_body_however_it_is_split(
        cuts: tuple[int, ...]) -> None:
    """The checksum's CRC-32 per 8 MiB chunk of the body, made from views of the parts
    without copying them (issue 30), whatever parts the body comes in (a written engine's
    header, padding and blobs; a loaded one's single mapped body); the oracle is zlib's
    CRC-32 of each chunk sliced from the whole."""
    from mini_infer_core.engine import format as fmt

    body = np.random.default_rng(3).integers(0, 256, 17 * 2**20 + 123, np.uint8).tobytes()
    bounds = [0, *cuts, len(body)]
    parts = [memoryview(body)[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    want = b"".join(struct.pack("<I", zlib.crc32(body[i:i + fmt.CHUNK]))
                    for i in range(0, len(body), fmt.CHUNK))
    assert fmt._chunk_digests(parts) == want
