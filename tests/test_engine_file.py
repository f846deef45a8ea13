"""The engine file: round trip, integrity, versioning, atomic writes, missing plugins."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest

import mini_infer_core as mi
from mini_infer_core.engine.format import ENGINE_MAGIC, read_engine_file
from mini_infer_core.errors import (
    EngineFormatError,
    EngineIntegrityError,
    MiniInferError,
    PluginInterfaceError,
    PluginNotFoundError,
)
from mini_infer_core.registry import PluginRegistry, discover


@pytest.fixture
def engine_path(small_cnn: onnx.ModelProto, tmp_path: Path) -> Path:
    path = tmp_path / "cnn.engine"
    mi.load(small_cnn).save(str(path))
    return path


def test_engine_file_runs_bit_identically_to_the_onnx_model(small_cnn: onnx.ModelProto,
                                                            engine_path: Path) -> None:
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    from_onnx = mi.InferenceSession(small_cnn).run(None, {"x": x})[0]
    from_file = mi.InferenceSession(str(engine_path)).run(None, {"x": x})[0]
    assert from_onnx.tobytes() == from_file.tobytes()


def test_layout_magic_alignment_and_memory_mapped_constants(engine_path: Path) -> None:
    raw = engine_path.read_bytes()
    assert raw[:8] == ENGINE_MAGIC
    ef = read_engine_file(engine_path)
    assert ef.header["format"] == "mini-infer-engine"
    for c in ef.header["constants"]:
        assert c["offset"] % 64 == 0
        arr = ef.array(c)
        assert not arr.flags.writeable
    plugins = [n["plugin"] for n in ef.header["nodes"]]
    # (the core's Reformat steps where the build timed a blocked format faster)
    assert {p["distribution"] for p in plugins} <= {"mini-infer-cpu-plugins",
                                                    "mini-infer-cpu-native", "mini-infer-core"}
    assert all(p["namespace"] in ("mini_infer.cpu", "mini_infer.cpu_native", "mini_infer.core")
               and p["version"] for p in plugins)
    assert all(p["distribution_version"] == "0.1.0" for p in plugins)


def test_no_pickle_in_the_file(engine_path: Path) -> None:
    raw = engine_path.read_bytes()
    assert b"pickle" not in raw and b"\x80\x04\x95" not in raw  # pickle protocol-4 frame


@pytest.mark.parametrize("where", [0, 3, 9, 20, 50, 130, 400, "middle", -1])
def test_one_flipped_byte_is_an_integrity_error(engine_path: Path, where: int | str,
                                                tmp_path: Path) -> None:
    raw = bytearray(engine_path.read_bytes())
    pos = len(raw) // 2 if where == "middle" else int(where) % len(raw)
    raw[pos] ^= 0x10
    bad = tmp_path / "bad.engine"
    bad.write_bytes(bytes(raw))
    with pytest.raises(EngineFormatError) as err:
        mi.InferenceSession(str(bad))
    assert isinstance(err.value, MiniInferError)
    msg = str(err.value)
    assert "corrupt" in msg or "version" in msg, msg


def test_truncated_and_empty_files(engine_path: Path, tmp_path: Path) -> None:
    raw = engine_path.read_bytes()
    for size in (0, 10, 200, len(raw) - 1):
        bad = tmp_path / f"t{size}.engine"
        bad.write_bytes(raw[:size])
        with pytest.raises(EngineIntegrityError):
            mi.Runtime().load_engine(bad)


def test_newer_format_version_is_refused_with_advice(engine_path: Path, tmp_path: Path) -> None:
    raw = bytearray(engine_path.read_bytes())
    raw[8] = 99
    bad = tmp_path / "v99.engine"
    bad.write_bytes(bytes(raw))
    with pytest.raises(EngineFormatError, match="version 99"):
        mi.Runtime().load_engine(bad)


def test_failed_write_leaves_nothing_behind(small_cnn: onnx.ModelProto, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    engine = mi.load(small_cnn)
    target = tmp_path / "out.engine"

    def boom(self: object) -> bytes:
        raise RuntimeError("disk full")

    node = engine.nodes[-1]
    monkeypatch.setattr(type(node.plugin), "serialize", boom)
    with pytest.raises(PluginInterfaceError, match="disk full"):  # names the node (issue 17)
        engine.save(str(target))
    assert os.listdir(tmp_path) == []


def test_missing_plugin_distribution_is_named(engine_path: Path) -> None:
    empty = PluginRegistry()
    full = discover()
    for rec in full.devices:
        empty.register_device(rec.device, distribution=rec.distribution)
    with pytest.raises(PluginNotFoundError) as err:
        mi.Runtime(empty).load_engine(engine_path)
    msg = str(err.value)
    install = msg[msg.index("pip install"):]  # one line naming every distribution needed
    assert "mini-infer-cpu-plugins==0.1.0" in install
    assert "mini-infer-cpu-native==0.1.0" in install
    assert "'Conv'" in msg and "mini_infer.cpu" in msg and "version '1'" in msg


def test_flip_in_a_later_checksum_chunk_is_caught(tmp_path: Path) -> None:
    from helpers import make_model
    from onnx import TensorProto, helper

    big = np.random.default_rng(0).standard_normal((3, 1_000_000)).astype(np.float32)  # 12 MB
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 1_000_000])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 1_000_000])
    model = make_model([helper.make_node("Add", ["x", "w"], ["y"])], [x], [y],
                       [onnx.numpy_helper.from_array(big, "w")])
    path = tmp_path / "big.engine"
    mi.load(model).save(str(path))
    assert path.stat().st_size > 9 * 2**20
    mi.Runtime().load_engine(path)  # intact: loads
    raw = bytearray(path.read_bytes())
    raw[10 * 2**20] ^= 1
    path.write_bytes(bytes(raw))
    with pytest.raises(EngineIntegrityError, match="checksum"):
        mi.Runtime().load_engine(path)
