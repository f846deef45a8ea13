"""The one compiled part: ``mini_infer_cpu_native._kernels`` (plain C, loaded with ctypes), built
from ``_kernels.c`` and ``_winograd.c``."""

from setuptools import Extension, setup

setup(ext_modules=[Extension(
    "mini_infer_cpu_native._kernels",
    sources=["src/mini_infer_cpu_native/_kernels.c", "src/mini_infer_cpu_native/_winograd.c",
             "src/mini_infer_cpu_native/_gemm.c", "src/mini_infer_cpu_native/_pool.c"],
    depends=["src/mini_infer_cpu_native/_common.h", "src/mini_infer_cpu_native/_pool.h"],
    extra_compile_args=["-O3", "-fno-math-errno", "-std=c11"],
)])
