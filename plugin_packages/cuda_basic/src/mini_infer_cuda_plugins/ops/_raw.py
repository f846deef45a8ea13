"""The CUDA C sources of ``kernels/`` as CuPy RawModules, and their launcher.

Sources are package data read with importlib.resources; ``#include "common.cuh"`` is inlined
here, so NVRTC needs no include path. A module is compiled once per (source, device) on first
use. Every RawKernel has a NumPy counterpart in the op module that calls it: the RawKernel path
runs only for CuPy arrays (see ``array_module``).
"""

from __future__ import annotations

import functools
import importlib.resources
import re
from typing import Any

import numpy as np

__all__ = ["ACT_NONE", "ACT_RELU", "SUFFIX", "elementwise", "kernel_names", "launch", "source"]

#: activation codes of the fused epilogues (kernels/common.cuh)
ACT_NONE = 0
ACT_RELU = 1

#: kernel name suffix per element type
SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16",
          np.dtype(np.float64): "f64"}

_THREADS = 256
_MAX_BLOCKS = 65536
_INCLUDE = re.compile(r'^#include "([A-Za-z0-9_.]+)"\s*$', re.MULTILINE)


def _read(name: str) -> str:
    return (importlib.resources.files("mini_infer_cuda_plugins") / "kernels" / name
            ).read_text(encoding="utf-8")


@functools.cache
def source(name: str) -> str:
    """The CUDA C of ``kernels/<name>.cu`` with its local includes inlined."""
    seen: set[str] = set()

    def inline(match: re.Match[str]) -> str:
        header = match.group(1)
        if header in seen:
            return ""
        seen.add(header)
        return _INCLUDE.sub(inline, _read(header))

    return _INCLUDE.sub(inline, _read(f"{name}.cu"))


def kernel_names(name: str) -> list[str]:
    """The ``extern "C"`` entry points a source defines (after macro expansion by name)."""
    text = source(name)
    names = re.findall(r'extern "C" __global__ void (\w+)##SUF', text)
    suffixes = re.findall(r"^MI_\w+_ENTR\w*\((\w+),", text, re.MULTILINE)
    return sorted(f"{n}{s}" for n in names for s in suffixes)


@functools.cache
def _module(name: str, device_id: int) -> Any:
    import cupy

    return cupy.RawModule(code=source(name), options=("--std=c++14",))


@functools.cache
def _function(name: str, device_id: int, function: str) -> Any:
    return _module(name, device_id).get_function(function)


def launch(source_name: str, function: str, dtype: Any, total: int, args: tuple[Any, ...]
           ) -> None:
    """Launch ``<function>_<suffix of dtype>`` of ``kernels/<source_name>.cu`` on CuPy's
    current stream with one thread per element (grid-stride, the grid capped)."""
    if total <= 0:
        return
    import cupy

    kernel = _function(source_name, cupy.cuda.Device().id,
                       f"{function}_{SUFFIX[np.dtype(dtype)]}")
    blocks = min((total + _THREADS - 1) // _THREADS, _MAX_BLOCKS)
    kernel((blocks,), (_THREADS,), args)


def elementwise(xp: Any, source_name: str, function: str, x: Any, out: Any, *params: Any
                ) -> None:
    """Launch an elementwise kernel ``function(x, y, *params, n)`` over every element
    (``x`` made contiguous; a non-contiguous ``out`` gets its result through a copy)."""
    x = xp.ascontiguousarray(x)
    dst = out if out.flags.c_contiguous else xp.empty(out.shape, out.dtype)
    launch(source_name, function, x.dtype, x.size, (x, dst, *params, np.int64(x.size)))
    if dst is not out:
        xp.copyto(out, dst)
