"""pytest configuration of mini-infer-cuda-plugins: the ``gpu`` marker.

Tests marked ``gpu`` run kernels with CuPy on a GPU and skip (saying why) where
``probe_cuda()`` reports the device unavailable; ``pytest plugin_packages/cuda_basic -m gpu``
runs only them.
"""

from __future__ import annotations

from typing import Any

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "gpu: needs an NVIDIA GPU with CuPy (skipped with the reason otherwise)")


# -- the CUDA sources compiled as host C++ ---------------------------------------------------

#: defines what the CUDA sources use from the CUDA language, for a host compiler: a launch is
#: one "thread" (block 0 of 1, thread 0 of 1) whose grid-stride loop visits every element
HOST_SHIM = r"""
#include <cmath>
#include <cstring>
#define __device__
#define __global__
#define __forceinline__ inline
struct mi_host_dim3 { unsigned x, y, z; };
static const mi_host_dim3 blockIdx = {0, 0, 0}, threadIdx = {0, 0, 0};
static const mi_host_dim3 blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
static inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
static inline double __longlong_as_double(long long i) {
    double d; std::memcpy(&d, &i, 8); return d;
}
static inline float mi_host_half_to_float(unsigned short h) {
    _Float16 v; std::memcpy(&v, &h, 2); return (float)v;
}
static inline unsigned short mi_host_float_to_half(float f) {
    _Float16 v = (_Float16)f; unsigned short h; std::memcpy(&h, &v, 2); return h;
}
"""


@pytest.fixture(scope="session")
def host_kernels(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``{source name: ctypes.CDLL}`` of every ``kernels/*.cu`` compiled for the host with
    ``-DMI_HOST_EMULATION`` (skips without g++ or its _Float16)."""
    import ctypes
    import importlib.resources
    import shutil
    import subprocess

    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no host C++ compiler (g++/clang++) to emulate the CUDA kernels")
    out = tmp_path_factory.mktemp("host_kernels")
    (out / "shim.h").write_text(HOST_SHIM)
    kernels = importlib.resources.files("mini_infer_cuda_plugins") / "kernels"
    libs: dict[str, Any] = {}
    for entry in sorted(kernels.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".cu"):
            continue
        with importlib.resources.as_file(entry) as path:
            lib = out / f"{entry.name[:-3]}.so"
            proc = subprocess.run(
                [cxx, "-std=c++17", "-O1", "-shared", "-fPIC", "-DMI_HOST_EMULATION",
                 "-include", str(out / "shim.h"), "-x", "c++", str(path), "-o", str(lib)],
                capture_output=True, text=True)
        if proc.returncode != 0:
            if "_Float16" in proc.stderr:
                pytest.skip(f"{cxx} lacks _Float16: {proc.stderr.splitlines()[0]}")
            raise AssertionError(f"{entry.name} does not compile as host C++:\n{proc.stderr}")
        libs[entry.name[:-3]] = ctypes.CDLL(str(lib))
    return libs


def host_launch(libs: Any) -> Any:
    """A stand-in for ``_raw.launch`` that runs the host-compiled kernel."""
    import ctypes

    import numpy as np
    from mini_infer_cuda_plugins.ops import _raw

    def launch(source_name: str, function: str, dtype: Any, total: int,
               args: tuple[Any, ...]) -> None:
        if total <= 0:
            return
        fn = getattr(libs[source_name], f"{function}_{_raw.SUFFIX[np.dtype(dtype)]}")
        cargs: list[Any] = []
        for a in args:
            if isinstance(a, np.ndarray):
                assert a.flags.c_contiguous, f"{function}: a non-contiguous array argument"
                cargs.append(ctypes.c_void_p(a.ctypes.data))
            elif isinstance(a, np.int32):
                cargs.append(ctypes.c_int(int(a)))
            elif isinstance(a, np.int64):
                cargs.append(ctypes.c_longlong(int(a)))
            elif isinstance(a, np.float32):
                cargs.append(ctypes.c_float(float(a)))
            elif isinstance(a, np.float64):
                cargs.append(ctypes.c_double(float(a)))
            else:
                raise AssertionError(f"{function}: argument {a!r} of type {type(a)} is not a "
                                     "sized NumPy scalar or array (CuPy needs exact types)")
        fn(*cargs)

    return launch


@pytest.fixture
def emulated_gpu(host_kernels: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Make every kernel take its GPU branch (an array module that is not NumPy) with the
    RawKernels run by their host-compiled twins: the Python side of each launch (argument
    order and types, geometry) meets the CUDA code without a GPU."""
    import importlib
    import pkgutil
    import types

    import numpy as np
    from mini_infer_cuda_plugins import ops
    from mini_infer_cuda_plugins.ops import _raw

    class EmulatedCupy(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            return getattr(np, name)

    emu = EmulatedCupy("emulated_cupy")
    # import every module before patching any (a module imported later would copy a patch)
    modules = [importlib.import_module(f"{ops.__name__}.{info.name}")
               for info in pkgutil.iter_modules(ops.__path__)]
    for mod in modules:
        if hasattr(mod, "array_module"):
            monkeypatch.setattr(mod, "array_module", lambda *arrays: emu)
    monkeypatch.setattr(_raw, "launch", host_launch(host_kernels))
    return emu
