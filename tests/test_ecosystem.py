"""The plugin ecosystem with real wheels in fresh virtual environments.

- core alone: no creators, and a hint what to install;
- core + cpu + cuda + the l2norm example + three deliberately bad distributions (one failing at
  import, one targeting another plugin API, one with a misspelt hook) + one with an import-time
  side effect: each bad one is listed with its status, the rest work; strict mode fails;
  blocking never imports; autoload off loads nothing but explicit names; listing imports
  neither kernels nor CuPy; the example's custom op builds into an engine that another process
  loads and runs.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from helpers import Venv, make_venv
from onnx import TensorProto, helper

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory: pytest.TempPathFactory, wheels: dict[str, Path]) -> Venv:
    return make_venv(tmp_path_factory, wheels, "core")


@pytest.fixture(scope="module")
def full_venv(tmp_path_factory: pytest.TempPathFactory, wheels: dict[str, Path]
              ) -> Iterator[Venv]:
    yield make_venv(tmp_path_factory, wheels, "core", "cpu", "cuda", "l2norm", "broken",
                    "oldapi", "marker", "badhook")


def _listing(env: Venv, *args: str, environ: dict[str, str] | None = None) -> dict[str, Any]:
    proc = env.cli("plugins", "--json", *args, env=environ)
    return json.loads(proc.stdout)


def _dists(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {d["name"]: d for d in data["distributions"]}


def test_core_alone_has_no_creators_and_says_what_to_install(bare_venv: Venv,
                                                             tmp_path: Path) -> None:
    data = _listing(bare_venv)
    assert data["creators"] == [] and data["devices"] == [] and data["distributions"] == []
    text = bare_venv.cli("plugins").stdout
    assert "pip install mini-infer-cpu-plugins" in text
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                                                [x], [helper.make_tensor_value_info(
                                                    "y", TensorProto.FLOAT, [2])]))
    onnx.save(model, str(tmp_path / "m.onnx"))
    proc = bare_venv.cli("run", str(tmp_path / "m.onnx"), check=False)
    assert proc.returncode == 2 and "pip install mini-infer-cpu-plugins" in proc.stderr


def test_every_distribution_is_listed_with_its_status(full_venv: Venv) -> None:
    dists = _dists(_listing(full_venv))
    assert dists["mini-infer-cpu-plugins"]["status"] == "loaded"
    assert dists["mini-infer-cuda-plugins"]["status"] == "loaded"
    assert dists["mini-infer-example-l2norm"]["status"] == "loaded"
    broken = dists["mi-test-broken"]
    assert broken["status"] == "failed" and "this_module_does_not_exist" in broken["error"]
    old = dists["mi-test-oldapi"]
    assert old["status"] == "incompatible" and "API 0" in old["error"] and "1" in old["error"]
    bad = dists["mi-test-badhook"]
    assert bad["status"] == "failed" and "mini_infer_creator" in bad["error"]


def test_devices_creators_and_header(full_venv: Venv) -> None:
    data = _listing(full_venv)
    devices = {d["name"]: d for d in data["devices"]}
    assert devices["cpu"]["available"] is True
    assert devices["cuda"]["available"] is False and "CuPy" in devices["cuda"]["reason"]
    l2 = [c for c in data["creators"] if c["op_type"] == "L2Norm"]
    assert l2 == [{"name": "L2Norm", "version": "1", "namespace": "com.example",
                   "domain": "com.example", "op_type": "L2Norm", "device": "cpu",
                   "priority": 0, "min_opset": 1, "max_opset": None,
                   "distribution": "mini-infer-example-l2norm",
                   "distribution_version": "0.1.0"}]

def test_every_command_prints_a_pytest_style_header(full_venv: Venv, tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                                                [x], [y]))
    onnx.save(model, str(tmp_path / "m.onnx"))
    header = full_venv.cli("inspect", str(tmp_path / "m.onnx")).stdout.splitlines()[0]
    assert header.startswith("plugins: ")
    assert "mini-infer-cpu-plugins-0.1.0" in header
    assert "mi-test-broken-0.0.1 (failed)" in header
    assert "mi-test-oldapi-0.0.1 (incompatible)" in header
    assert "cuda unavailable: CuPy is not installed" in header


def test_listing_imports_no_kernels_and_no_cupy(full_venv: Venv, tmp_path: Path) -> None:
    script = tmp_path / "probe.py"
    script.write_text(textwrap.dedent("""
        import json, sys, io, contextlib
        from mini_infer_core.cli.main import main
        with contextlib.redirect_stdout(io.StringIO()):
            main(["plugins"])
        heavy = [m for m in sys.modules if m.startswith(("cupy", "mini_infer_cpu_plugins.ops",
                                                        "mini_infer_l2norm.plugin"))]
        print(json.dumps(heavy))
    """))
    import subprocess

    out = subprocess.run([full_venv.python, str(script)], capture_output=True, text=True,
                         check=True).stdout
    assert json.loads(out) == []


def test_strict_mode_turns_a_failure_into_an_error(full_venv: Venv) -> None:
    proc = full_venv.cli("plugins", env={"MINI_INFER_STRICT_PLUGINS": "1"}, check=False)
    assert proc.returncode == 2
    assert "mi-test-broken" in proc.stderr or "mi-test-badhook" in proc.stderr
    assert "MINI_INFER_STRICT_PLUGINS" in proc.stderr


def test_a_blocked_plugin_is_never_imported(full_venv: Venv, tmp_path: Path) -> None:
    marker = tmp_path / "imported.txt"
    env = {"MI_TEST_MARKER_FILE": str(marker)}
    # the marker works: a discovery that reads the distributions afresh imports the module
    # (a start from the discovery cache imports no plugin module at all)
    dists = _dists(_listing(full_venv, environ={**env, "MINI_INFER_DISCOVERY_CACHE": "0"}))
    assert dists["mi-test-marker"]["status"] == "loaded" and marker.exists()
    marker.unlink()
    dists = _dists(_listing(full_venv, environ={**env, "MINI_INFER_BLOCK_PLUGINS":
                                                "mi-test-marker"}))
    assert dists["mi-test-marker"]["status"] == "blocked" and not marker.exists()
    dists = _dists(_listing(full_venv, "-p", "no:marker", environ=env))
    assert dists["mi-test-marker"]["status"] == "blocked" and not marker.exists()


def test_autoload_off_loads_only_what_is_named(full_venv: Venv, tmp_path: Path) -> None:
    marker = tmp_path / "imported.txt"
    env = {"MINI_INFER_DISABLE_PLUGIN_AUTOLOAD": "1", "MI_TEST_MARKER_FILE": str(marker)}
    data = _listing(full_venv, environ=env)
    assert {d["status"] for d in data["distributions"]} == {"disabled"}
    assert data["creators"] == [] and not marker.exists()
    data = _listing(full_venv, "-p", "mini-infer-cpu-plugins", environ=env)
    dists = _dists(data)
    assert dists["mini-infer-cpu-plugins"]["status"] == "loaded"
    assert dists["mini-infer-example-l2norm"]["status"] == "disabled"
    assert {c["distribution"] for c in data["creators"]} == {"mini-infer-cpu-plugins"}


def test_third_party_op_builds_and_runs_from_an_engine_in_another_process(
        full_venv: Venv, tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("L2Norm", ["r"], ["y"], domain="com.example", epsilon=1e-4,
                              axis=1, name="l2")]
    graph = helper.make_graph(nodes, "l2net", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.example", 1)])
    onnx.save(model, str(tmp_path / "l2.onnx"))
    engine = tmp_path / "l2.engine"
    full_venv.cli("build", str(tmp_path / "l2.onnx"), "-o", str(engine))
    xv = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", xv)
    full_venv.cli("run", str(engine), "--input", f"x={tmp_path / 'x.npy'}",
                  "--output-dir", str(tmp_path / "out"))
    got = np.load(tmp_path / "out" / "y.npy")
    r = np.maximum(xv, 0)
    want = r / np.sqrt((r * r).sum(axis=1, keepdims=True) + 1e-4)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    info = json.loads(full_venv.cli("inspect", str(engine), "--json").stdout)
    l2 = next(n for n in info["nodes"] if n["name"] == "l2")
    assert l2["distribution"] == "mini-infer-example-l2norm"
    assert l2["plugin"] == "com.example::L2Norm"


def test_scaffolded_plugin_passes_its_own_tests(tmp_path_factory: pytest.TempPathFactory,
                                                wheels: dict[str, Path]) -> None:
    import subprocess

    env = make_venv(tmp_path_factory, wheels, "core", "cpu")
    where = tmp_path_factory.mktemp("scaffold")
    env.cli("plugins", "new", "acme-scale", "--dir", str(where))
    pkg = where / "acme-scale"
    env.pip("install", f"{pkg}[test]")
    listing = json.loads(env.cli("plugins", "--json").stdout)
    assert [c["op_type"] for c in listing["creators"]
            if c["distribution"] == "acme-scale"] == ["Scale"]
    proc = subprocess.run([env.python, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(pkg / "tests")], capture_output=True, text=True, cwd=pkg)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout
