"""Real wheels in a fresh virtual environment: discovery, listing, a missing distribution."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest
from helpers import Venv

pytestmark = pytest.mark.slow


def test_fresh_venv_lists_cpu_plugins_with_distribution_and_version(fresh_venv: Venv) -> None:
    proc = fresh_venv.cli("plugins", "--json")
    data = json.loads(proc.stdout)
    creators = [c for c in data["creators"] if c["distribution"] == "mini-infer-cpu-plugins"]
    ops = {c["op_type"] for c in creators}
    assert {"Conv", "Gemm", "Relu", "MaxPool", "BatchNormalization", "LRN"} <= ops
    assert all(c["distribution_version"] == "0.1.0" for c in creators)
    dist = {d["name"]: d for d in data["distributions"]}["mini-infer-cpu-plugins"]
    assert (dist["version"], dist["status"]) == ("0.1.0", "loaded")


def test_engine_fails_to_load_once_its_plugin_distribution_is_uninstalled(
        fresh_venv: Venv, small_cnn: onnx.ModelProto, tmp_path: Path) -> None:
    model, engine = tmp_path / "m.onnx", tmp_path / "m.engine"
    onnx.save(small_cnn, str(model))
    fresh_venv.cli("build", str(model), "-o", str(engine))
    fresh_venv.cli("run", str(engine), "--shape", "x=1,3,8,8")
    fresh_venv.pip("uninstall", "-y", "mini-infer-cpu-plugins")
    proc = fresh_venv.cli("run", str(engine), check=False)
    assert proc.returncode == 2
    assert "pip install mini-infer-cpu-plugins==0.1.0" in proc.stderr
    assert "PluginNotFoundError" in proc.stderr
