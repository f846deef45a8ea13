"""The one compiled part: ``mini_infer_cpu_native._kernels`` (plain C, loaded with ctypes), built
from the kernels (``_kernels.c``, ``_winograd.c``, ``_gemm.c``), their thread pool
(``_pool.c``), the layout of their argument structs (``_abi.c``) and the module itself
(``_module.c``).

The module's two array checks (``address``, ``rows``) use only CPython's stable ABI (the
limited API of 3.11), and the kernels no Python at all, so one wheel serves every CPython from
3.11 on: it is tagged ``cp311-abi3`` (``auditwheel repair`` then makes it ``manylinux``).
Building from source needs a C compiler; without one the build stops with a message that
says so, and that mini-infer-cpu-plugins' NumPy kernels run every model without it.
"""

import os
import shlex
import shutil
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, ExecError, PlatformError

SRC = "src/mini_infer_cpu_native/"

SOURCES = ["_module.c", "_abi.c", "_kernels.c", "_winograd.c", "_gemm.c", "_pool.c"]
DEPENDS = ["_args.h", "_common.h", "_pool.h"]
# activations, Softmax, LayerNormalization (_act.c) and the math they share (_act.h)
SOURCES += ["_act.c"]
# Resize of the last two axes (_resize.c)
SOURCES += ["_resize.c"]
# direct convolution of narrow groups (_dconv.c)
SOURCES += ["_dconv.c"]
# products of a few rows, squeeze-and-excitation's mean and channel scale (_vec.c)
SOURCES += ["_vec.c"]
# planes gathered and moved for 3-D convolutions over frames (_planes.c)
SOURCES += ["_planes.c"]
# short products over large maps: few-channel 1x1 convolutions, the stems (_pw.c)
SOURCES += ["_pw.c"]
# integer GEMM (MatMulInteger, QLinearMatMul) and DynamicQuantizeLinear (_qgemm.c)
SOURCES += ["_qgemm.c"]
DEPENDS += ["_qamx.h"]
# QLinearConv's requantization of the depthwise sums (_qconv.c)
SOURCES += ["_qconv.c"]
# depthwise QLinearConv on NHWC tensors, AVX-512/AVX2/plain kernels (_qdw.c), and the
# grouped one of 4, 8 or 16 channels a group (_qgconv.h)
SOURCES += ["_qdw.c"]
DEPENDS += ["_qgconv.h"]
# QLinearAdd and QLinearMul (_qelt.c)
SOURCES += ["_qelt.c"]
# QLinearGlobalAveragePool on NHWC tensors, AVX-512/AVX2/plain sums (_qgap.c)
SOURCES += ["_qgap.c"]
# QuantizeLinear per tensor, NCHW x into NCHW or NHWC 8-bit y (_qquant.c)
SOURCES += ["_qquant.c"]
# MatMulNBits' 4-bit block-quantized weight-only GEMM (_qnbits.c)
SOURCES += ["_qnbits.c"]
# channel-blocked (NCHWc) convolutions, pooling, elementwise and Concat (_blocked.c)
SOURCES += ["_blocked.c"]
# LINEAR <-> channel-blocked reformats, the builder's Reformat steps (_reformat.c)
SOURCES += ["_reformat.c"]
DEPENDS += ["_blocked.h", "_blocked_isa.h"]
DEPENDS += ["_act.h", "_act_simd.h", "_act_loops.h", "_act_isa_end.h", "_epi.h"]
# recurrent layers: LSTM, GRU, RNN with their gates fused (_rnn.c, _rnn_cell.h)
SOURCES += ["_rnn.c"]
DEPENDS += ["_rnn_cell.h"]
# the AVX2 depthwise kernels and copy (_dconv.c), MaxPool's AVX2 path (_kernels.c)
DEPENDS += ["_dw_avx2.h", "_pool_avx2.h"]

#: the oldest CPython whose stable ABI the module uses (3.11: the buffer protocol)
LIMITED_API = "0x030B0000"

_ADVICE = (
    "Install a C compiler (Debian/Ubuntu: apt-get install gcc; Fedora: dnf install gcc; "
    "macOS: xcode-select --install) and install mini-infer-cpu-native again, or install a "
    "prebuilt mini-infer-cpu-native wheel for this platform. mini-infer does not need this "
    "package: the NumPy kernels of mini-infer-cpu-plugins (pip install mini-infer-cpu-plugins) "
    "run every model without a compiler; these compiled ones only make some operators faster.")


class BuildExt(build_ext):
    """build_ext that says what to do when there is no C compiler, or it fails."""

    def _missing_compiler(self) -> str | None:
        """The compiler or linker program that is not on PATH (None: both are)."""
        for attr in ("compiler_so", "linker_so"):
            command = getattr(self.compiler, attr, None)
            if command and shutil.which(command[0]) is None:
                source = " (from $CC)" if os.environ.get("CC") and attr == "compiler_so" else ""
                return f"{shlex.quote(command[0])}{source}"
        return None

    def _remove_stale_libraries(self) -> None:
        """Delete a ``_kernels`` library an earlier build for another tag left where this one
        goes (``_kernels.cpython-311-….so`` from before the stable ABI): Python imports that
        name before ``_kernels.abi3.so``, and bdist_wheel would ship both."""
        for ext in self.extensions:
            target = Path(self.get_ext_fullpath(ext.name))
            stem = ext.name.rsplit(".", 1)[-1]
            for other in target.parent.glob(f"{stem}.*"):
                if other != target and other.name.endswith((".so", ".pyd")):
                    other.unlink()

    def build_extensions(self) -> None:
        self._remove_stale_libraries()
        try:
            super().build_extensions()
        except (CCompilerError, ExecError) as exc:
            missing = self._missing_compiler()
            if missing is not None:
                raise PlatformError(
                    "mini-infer-cpu-native compiles its C kernels when it is installed from "
                    f"source, and no C compiler was found: {missing} is not on PATH. "
                    f"{_ADVICE}") from exc
            raise PlatformError(f"mini-infer-cpu-native: compiling its C kernels failed "
                                f"({exc}). {_ADVICE}") from exc


setup(
    ext_modules=[Extension(
        "mini_infer_cpu_native._kernels",
        sources=[SRC + name for name in SOURCES],
        depends=[SRC + name for name in DEPENDS],
        # a call outside the limited API is an error, not a silent implicit declaration
        extra_compile_args=["-O3", "-fno-math-errno", "-std=c11",
                            "-Werror=implicit-function-declaration"],
        define_macros=[("Py_LIMITED_API", LIMITED_API)],
        py_limited_api=True,
    )],
    cmdclass={"build_ext": BuildExt},
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)
