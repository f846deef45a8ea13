"""The CUDA C sources: package data, standalone (no headers beyond their own), compiled by
nvcc for sm_90 as files and as the inlined text CuPy's NVRTC receives, entry points named as
the launcher expects, and the loader imports no CuPy."""

from __future__ import annotations

import importlib.resources
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from mini_infer_cuda_plugins.ops import _raw

KERNELS = importlib.resources.files("mini_infer_cuda_plugins") / "kernels"
SOURCES = sorted(p.name[:-3] for p in KERNELS.iterdir() if p.name.endswith(".cu"))


def _nvcc() -> str:
    found = shutil.which("nvcc")
    if found is None:
        for cand in sorted(Path("/usr/local").glob("cuda*/bin/nvcc"), reverse=True):
            return str(cand)
        pytest.skip("nvcc is not on PATH (nor under /usr/local/cuda*/bin): the CUDA sources "
                    "cannot be compiled here")
    return found


def test_the_sources_are_package_data() -> None:
    assert SOURCES == ["activation", "conv", "epilogue", "lrn", "pool"]
    assert (KERNELS / "common.cuh").is_file()


@pytest.mark.parametrize("name", SOURCES)
def test_sources_include_only_their_own_header(name: str) -> None:
    text = (KERNELS / f"{name}.cu").read_text()
    assert re.findall(r"#include\s*[<\"]([^>\"]+)", text) == ["common.cuh"]
    inlined = _raw.source(name)
    assert "#include" not in inlined and "MI_COMMON_CUH" in inlined
    assert 'extern "C" __global__' in inlined


@pytest.mark.parametrize("name", SOURCES)
def test_nvcc_compiles_each_source_for_sm90(name: str, tmp_path: Path) -> None:
    nvcc = _nvcc()
    with importlib.resources.as_file(KERNELS / f"{name}.cu") as path:
        proc = subprocess.run([nvcc, "-arch=sm_90", "-c", str(path), "-o",
                               str(tmp_path / f"{name}.o")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    # the text CuPy hands to NVRTC (header inlined), to PTX; its entry points are exported
    src = tmp_path / f"{name}_inlined.cu"
    src.write_text(_raw.source(name))
    ptx = tmp_path / f"{name}.ptx"
    proc = subprocess.run([nvcc, "-arch=sm_90", "--ptx", "-Werror", "all-warnings", str(src),
                           "-o", str(ptx)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    entries = set(re.findall(r"\.visible \.entry (\w+)\(", ptx.read_text()))
    assert entries == set(_raw.kernel_names(name)), (entries, _raw.kernel_names(name))


def test_every_kernel_has_three_element_types() -> None:
    for name in SOURCES:
        names = _raw.kernel_names(name)
        stems = {n.rsplit("_", 1)[0] for n in names}
        assert names and len(names) == 3 * len(stems), names
        assert {n.rsplit("_", 1)[1] for n in names} == set(_raw.SUFFIX.values())


def test_reading_the_sources_imports_no_cupy() -> None:
    import subprocess
    import sys

    # in a fresh interpreter: an earlier test of this process may have imported CuPy
    code = ("import sys\nfrom mini_infer_cuda_plugins.ops import _raw\n"
            f"for name in {list(SOURCES)!r}:\n"
            "    _raw.source(name)\n    _raw.kernel_names(name)\n"
            "assert 'cupy' not in sys.modules, 'reading the sources imported CuPy'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
