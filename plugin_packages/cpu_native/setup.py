"""The one compiled part: ``mini_infer_cpu_native._kernels`` (plain C, loaded with ctypes)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension(
    "mini_infer_cpu_native._kernels",
    sources=["src/mini_infer_cpu_native/_kernels.c"],
    extra_compile_args=["-O3", "-fno-math-errno", "-std=c11"],
)])
