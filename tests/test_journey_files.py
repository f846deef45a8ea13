"""Issue 29, items 11 and 16: the files mini-infer writes. Engines and timing caches get the
permissions ``open()`` would give them (the umask, not ``mkstemp``'s 0600); ``--timing-cache
FILE`` is created even when no node has tactics. (Item 18, the demo's temporary folder, is
tested in test_demo.py.)"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from helpers import make_model, run_cli
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parents[1]

#: build a small engine and save it and a timing cache under the umask given as argv[1]
_WRITE = """
import os, sys
import mini_infer_core as mi
from mini_infer_core.builder.timing_cache import TimingCache
os.umask(int(sys.argv[1], 8))
folder = sys.argv[2]
engine = mi.build_engine(mi.parse_onnx(sys.argv[3]), mi.BuilderConfig(device="cpu"))
engine.save(os.path.join(folder, "m.engine"))
cache = TimingCache()
cache.put("key", {"tactic": 1.0})
cache.save(os.path.join(folder, "cache.json"))
"""


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_engines_and_timing_caches_are_written_under_the_umask(
        cnn_file: Path, tmp_path: Path, umask: int, mode: int) -> None:
    out = tmp_path / f"out{umask:o}"
    out.mkdir()
    subprocess.run([sys.executable, "-c", _WRITE, f"{umask:o}", str(out), str(cnn_file)],
                   check=True, capture_output=True, text=True, timeout=300)
    assert _mode(out / "m.engine") == mode  # open() would give 0666 & ~umask
    assert _mode(out / "cache.json") == mode
    assert sorted(p.name for p in out.iterdir()) == ["cache.json", "m.engine"]  # no .partial


def test_rewriting_an_engine_keeps_its_mode(cnn_file: Path, tmp_path: Path) -> None:
    import mini_infer_core as mi

    target = tmp_path / "m.engine"
    engine = mi.build_engine(mi.parse_onnx(str(cnn_file)),
                             mi.BuilderConfig(device="cpu", time_tactics=False))
    engine.save(str(target))
    os.chmod(target, 0o640)
    engine.save(str(target))
    assert _mode(target) == 0o640


def test_a_missing_timing_cache_is_created_when_no_node_has_tactics(tmp_path: Path) -> None:
    model = make_model([helper.make_node("Relu", ["x"], ["y"])],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    path = tmp_path / "relu.onnx"
    onnx.save(model, str(path))
    cache = tmp_path / "cache.json"
    run_cli("build", str(path), "-o", str(tmp_path / "relu.engine"), "--timing-cache",
            str(cache))
    assert cache.is_file()  # docs/cli.md: "created if missing"
    data = json.loads(cache.read_text())
    assert data["format"] == "mini-infer-timing-cache" and data["entries"] == {}
