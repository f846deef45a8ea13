"""The one compiled part: ``mini_infer_cpu_native._kernels`` (plain C, loaded with ctypes), built
from the kernels (``_kernels.c``, ``_winograd.c``, ``_gemm.c``), their thread pool
(``_pool.c``), the layout of their argument structs (``_abi.c``) and the module itself
(``_module.c``)."""

from setuptools import Extension, setup

SRC = "src/mini_infer_cpu_native/"

SOURCES = ["_module.c", "_abi.c", "_kernels.c", "_winograd.c", "_gemm.c", "_pool.c"]
DEPENDS = ["_args.h", "_common.h", "_pool.h"]
# activations, Softmax, LayerNormalization (_act.c) and the math they share (_act.h)
SOURCES += ["_act.c"]
DEPENDS += ["_act.h", "_act_simd.h", "_act_loops.h", "_act_isa_end.h"]

setup(ext_modules=[Extension(
    "mini_infer_cpu_native._kernels",
    sources=[SRC + name for name in SOURCES],
    depends=[SRC + name for name in DEPENDS],
    extra_compile_args=["-O3", "-fno-math-errno", "-std=c11"],
)])
