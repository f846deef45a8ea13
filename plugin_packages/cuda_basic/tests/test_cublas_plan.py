"""The cuBLAS call plans of ``ops/_cublas.py`` against ``np.matmul``, through a NumPy model of
``cublasGemmStridedBatchedEx`` (column-major, its documented argument rules checked), so
that a transposed operand or a wrong leading dimension fails here, without a GPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from cuda_support import cupy_or_skip
from mini_infer_cuda_plugins.ops._cublas import OP_N, GemmCall, plan_matmul


def _stored(buf: np.ndarray[Any, Any], off: int, rows: int, cols: int, ld: int
            ) -> np.ndarray[Any, Any]:
    """The column-major rows x cols matrix at ``buf[off]`` with leading dimension ``ld``."""
    i, j = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    return buf[off + i + j * ld]


def gemm_strided_batched(c: GemmCall, x: np.ndarray[Any, Any], y: np.ndarray[Any, Any],
                         out: np.ndarray[Any, Any]) -> None:
    """C = op(X) @ op(Y) for each batch, column-major, alpha 1 and beta 0, on flat buffers."""
    xr, xc = (c.m, c.k) if c.op_x == OP_N else (c.k, c.m)
    yr, yc = (c.k, c.n) if c.op_y == OP_N else (c.n, c.k)
    assert c.ldx >= max(1, xr) and c.ldy >= max(1, yr) and c.ldc >= max(1, c.m), c
    assert c.batch == 1 or c.stride_c != 0, c
    for i in range(c.batch):
        opx = _stored(x, c.x_off + i * c.stride_x, xr, xc, c.ldx)
        opy = _stored(y, c.y_off + i * c.stride_y, yr, yc, c.ldy)
        opx = opx if c.op_x == OP_N else opx.T
        opy = opy if c.op_y == OP_N else opy.T
        i_, j_ = np.meshgrid(np.arange(c.m), np.arange(c.n), indexing="ij")
        out[c.c_off + i * c.stride_c + i_ + j_ * c.ldc] = opx @ opy


def _elements(view: np.ndarray[Any, Any], base: np.ndarray[Any, Any]) -> tuple[int, list[int]]:
    item = view.itemsize
    return ((view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // item,
            [s // item for s in view.strides])


def _run(a: np.ndarray[Any, Any], abase: np.ndarray[Any, Any], b: np.ndarray[Any, Any],
         bbase: np.ndarray[Any, Any], out: np.ndarray[Any, Any], obase: np.ndarray[Any, Any]
         ) -> int:
    a_off, a_st = _elements(a, abase)
    b_off, b_st = _elements(b, bbase)
    o_off, o_st = _elements(out, obase)
    calls = plan_matmul(a.shape, a_st, b.shape, b_st, out.shape, o_st)
    assert calls is not None, (a.shape, a_st, b.shape, b_st, out.shape, o_st)
    flat = obase.reshape(-1)
    for c in calls:
        c = GemmCall(c.op_x, c.op_y, c.m, c.n, c.k, c.x_off + b_off, c.ldx, c.stride_x,
                     c.y_off + a_off, c.ldy, c.stride_y, c.c_off + o_off, c.ldc, c.stride_c,
                     c.batch)
        gemm_strided_batched(c, bbase.reshape(-1), abase.reshape(-1), flat)
    return len(calls)


def _host(seed: int = 0, dtype: Any = np.float64) -> Any:
    """``base(*shape)``: random host arrays, the same sequence for the same seed."""
    r = np.random.default_rng(seed)
    return lambda *shape: r.standard_normal(shape).astype(dtype)


CASES = {
    # name: (a as a view of a base made by ``base(*shape)``, likewise b)
    "2d": (lambda base: base(3, 4), lambda base: base(4, 5)),
    "a-transposed": (lambda base: base(4, 3).T, lambda base: base(4, 5)),
    "b-transposed": (lambda base: base(3, 4), lambda base: base(5, 4).T),
    "both-transposed": (lambda base: base(4, 3).T, lambda base: base(5, 4).T),
    "row-slices": (lambda base: base(3, 9)[:, 2:6], lambda base: base(4, 11)[:, 1:6]),
    "vector-rows": (lambda base: base(1, 4), lambda base: base(4, 1)),
    "column-of-a-wide-matrix": (lambda base: base(5, 7)[:, 2:3].T, lambda base: base(5, 6)),
    "strided-column": (lambda base: base(3, 5), lambda base: base(5, 7)[:, 3:4]),
    "batched": (lambda base: base(2, 3, 4), lambda base: base(2, 4, 5)),
    "a-broadcast": (lambda base: base(3, 4), lambda base: base(2, 3, 4, 5)),
    "b-broadcast-inner": (lambda base: base(2, 3, 3, 4), lambda base: base(3, 1, 4, 5)[:, 0]),
    "size-one-batch": (lambda base: base(2, 1, 3, 4), lambda base: base(1, 4, 5)),
    "grouped-conv": (lambda base: base(4, 8, 6), lambda base: base(2, 4, 6, 10)[1]),
    "cross-broadcast": (lambda base: base(2, 1, 3, 4), lambda base: base(1, 3, 4, 5)),
    "batch-transposed": (lambda base: base(2, 4, 3).transpose(0, 2, 1), lambda base: base(2, 4, 5)),
}


@pytest.mark.parametrize("name", CASES)
def test_plan_computes_np_matmul(name: str) -> None:
    make_a, make_b = CASES[name]
    base = _host()
    a, b = make_a(base), make_b(base)
    abase, bbase = a.base if a.base is not None else a, b.base if b.base is not None else b
    want = np.matmul(a, b)
    obase = np.full(want.shape, np.nan)
    calls = _run(a, abase, b, bbase, obase, obase)
    np.testing.assert_allclose(obase, want, rtol=1e-12, atol=1e-12)
    if name == "cross-broadcast":  # batch strides that do not nest: one call per outer index
        assert calls == 2
    elif name in ("batched", "a-broadcast", "grouped-conv"):
        assert calls == 1


def test_plan_writes_into_an_output_with_padded_rows() -> None:
    base = _host()
    a, b = base(3, 4), base(4, 5)
    obase = np.full((3, 8), np.nan)
    _run(a, a, b, b, obase[:, 1:6], obase)
    np.testing.assert_allclose(obase[:, 1:6], a @ b, rtol=1e-12)
    assert np.isnan(obase[:, [0, 6, 7]]).all()  # nothing written outside the view


@pytest.mark.parametrize("a_shape, a_strides, b_shape, b_strides, out_shape, out_strides", [
    ((4,), (1,), (4, 5), (5, 1), (5,), (1,)),  # 1-D operand: NumPy promotion, CuPy's job
    ((3, 4), (8, 2), (4, 5), (5, 1), (3, 5), (5, 1)),  # neither row- nor column-major
    ((3, 4), (4, 1), (4, 5), (5, 1), (3, 5), (1, 3)),  # column-major output
    ((3, 0), (0, 1), (0, 5), (5, 1), (3, 5), (5, 1)),  # empty inner dimension
    ((3, 4), (-4, 1), (4, 5), (5, 1), (3, 5), (5, 1)),  # negative stride
])
def test_plan_declines_what_cublas_cannot_express(
        a_shape: tuple[int, ...], a_strides: tuple[int, ...], b_shape: tuple[int, ...],
        b_strides: tuple[int, ...], out_shape: tuple[int, ...], out_strides: tuple[int, ...]
        ) -> None:
    assert plan_matmul(a_shape, a_strides, b_shape, b_strides, out_shape, out_strides) is None


def test_plan_of_an_empty_output_is_no_call() -> None:
    assert plan_matmul((0, 4), (4, 1), (4, 5), (5, 1), (0, 5), (5, 1)) == []


# -- on a GPU ------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("name", CASES)
def test_cublas_matmul_on_the_gpu_matches_numpy(name: str, dtype: Any) -> None:
    cupy = cupy_or_skip()
    from mini_infer_cuda_plugins.ops import _cublas

    make_a, make_b = CASES[name]
    host = _host(0, dtype)
    a, b = make_a(host), make_b(host)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    device = _host(0, dtype)  # the same views of device copies of the same data
    da, db = (make(lambda *shape: cupy.asarray(device(*shape))) for make in (make_a, make_b))
    assert da.strides == a.strides and db.strides == b.strides
    out = cupy.full(want.shape, np.nan, dtype)
    assert _cublas.matmul(da, db, out), "the plan must cover every case above"
    tol = 1e-2 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(cupy.asnumpy(out).astype(np.float64), want, rtol=tol, atol=tol)


@pytest.mark.gpu
def test_cublas_matmul_is_captured_in_a_cuda_graph() -> None:
    """CuPy's own matmul refuses stream capture; the direct call is captured and replays on
    new values of the same buffers."""
    cupy = cupy_or_skip()
    from mini_infer_cuda_plugins.device import CudaDevice
    from mini_infer_cuda_plugins.ops import _cublas

    rng2 = np.random.default_rng(1)
    a = cupy.asarray(rng2.standard_normal((2, 64, 32)).astype(np.float32))
    b = cupy.asarray(rng2.standard_normal((2, 32, 48)).astype(np.float32))
    out = cupy.empty((2, 64, 48), np.float32)
    dev = CudaDevice()
    stream = dev.create_stream()

    def run() -> None:
        with stream:
            assert _cublas.matmul(a, b, out)

    graph = dev.capture_graph(run, stream)
    a *= 3  # same buffer, new values
    out.fill(0)
    stream.synchronize()
    dev.launch_graph(graph, stream)
    stream.synchronize()
    want = np.matmul(cupy.asnumpy(a), cupy.asnumpy(b))
    np.testing.assert_allclose(cupy.asnumpy(out), want, rtol=1e-4, atol=1e-4)


# -- the ctypes calls, against a host library with cuBLAS's symbols ------------------------

FAKE_CUBLAS = r"""
#include <stddef.h>
typedef struct { void* stream; void* ws; size_t ws_size; int gemms; } handle_t;
static handle_t handles[64];
static int n_handles = 0;
int cublasCreate_v2(void** h) {
    if (n_handles == 64) return 1;
    handles[n_handles] = (handle_t){0, 0, 0, 0};
    *h = &handles[n_handles++];
    return 0;
}
/* as documented: setting the stream resets the workspace to cuBLAS's own pool */
int cublasSetStream_v2(void* h, void* s) {
    ((handle_t*)h)->stream = s; ((handle_t*)h)->ws = 0; return 0;
}
int cublasSetWorkspace_v2(void* h, void* w, size_t n) {
    ((handle_t*)h)->ws = w; ((handle_t*)h)->ws_size = n; return 0;
}
void* fake_stream(void* h) { return ((handle_t*)h)->stream; }
size_t fake_workspace(void* h) { return ((handle_t*)h)->ws ? ((handle_t*)h)->ws_size : 0; }
int fake_gemms(void* h) { return ((handle_t*)h)->gemms; }
static double get(const void* p, int t, long long i) {
    return t == 0 ? ((const float*)p)[i] : ((const double*)p)[i];
}
static void put(void* p, int t, long long i, double v) {
    if (t == 0) ((float*)p)[i] = (float)v; else ((double*)p)[i] = v;
}
int cublasGemmStridedBatchedEx(void* h, int ta, int tb, int m, int n, int k,
        const void* alpha, const void* A, int at, int lda, long long sa,
        const void* B, int bt, int ldb, long long sb, const void* beta,
        void* C, int ct, int ldc, long long sc, int batch, int compute, int algo) {
    handle_t* hh = (handle_t*)h;
    if (!hh->ws || at != bt || at != ct || (at != 0 && at != 1)) return 7;
    if ((at == 0) != (compute == 68) || algo != -1) return 7;
    if (lda < (ta ? k : m) || ldb < (tb ? n : k) || ldc < m || batch < 1) return 7;
    double al = compute == 70 ? *(const double*)alpha : *(const float*)alpha;
    double be = compute == 70 ? *(const double*)beta : *(const float*)beta;
    for (int b = 0; b < batch; b++)
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double acc = 0;
                for (int p = 0; p < k; p++)
                    acc += get(A, at, b * sa + (ta ? p + (long long)i * lda
                                                   : i + (long long)p * lda))
                         * get(B, bt, b * sb + (tb ? j + (long long)p * ldb
                                                   : p + (long long)j * ldb));
                long long o = b * sc + i + (long long)j * ldc;
                put(C, ct, o, al * acc + (be != 0 ? be * get(C, ct, o) : 0));
            }
    hh->gemms++;
    return 0;
}
"""


class _HostArray:
    """What ``matmul`` reads of a CuPy array, over a NumPy one (``data.ptr``: its address)."""

    def __init__(self, array: np.ndarray[Any, Any]) -> None:
        self.array = array
        self.dtype, self.shape, self.strides = array.dtype, array.shape, array.strides
        self.data = type("Memory", (), {"ptr": array.__array_interface__["data"][0]})()


class _HostCupy:
    """The parts of CuPy that ``_cublas`` touches: the device, the current stream, empty."""

    def __init__(self) -> None:
        self.stream_ptr = 0x1000
        outer = self

        class Cuda:
            @staticmethod
            def Device() -> Any:  # noqa: N802 - CuPy's name
                return type("Dev", (), {"id": 0})()

            @staticmethod
            def get_current_stream() -> Any:
                return type("S", (), {"ptr": outer.stream_ptr})()

        self.cuda = Cuda
        self.kept: list[_HostArray] = []

    def empty(self, n: int, dtype: Any) -> _HostArray:
        a = _HostArray(np.empty(n, dtype))
        self.kept.append(a)
        return a


@pytest.fixture
def host_cublas(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
                ) -> tuple[Any, _HostCupy]:
    """``_cublas`` bound to a host library with cuBLAS's symbols, and a stand-in CuPy."""
    import ctypes
    import shutil
    import subprocess
    import sys

    from mini_infer_cuda_plugins.ops import _cublas

    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler for the host stand-in of libcublas")
    out = tmp_path_factory.mktemp("fake_cublas")
    (out / "cublas.c").write_text(FAKE_CUBLAS)
    subprocess.run([cc, "-O1", "-shared", "-fPIC", str(out / "cublas.c"), "-o",
                    str(out / "libfake.so")], check=True)
    lib = _cublas.bind(ctypes.CDLL(str(out / "libfake.so")))
    lib.fake_stream.restype = ctypes.c_void_p
    lib.fake_workspace.restype = ctypes.c_size_t
    for name in ("fake_stream", "fake_workspace", "fake_gemms"):
        getattr(lib, name).argtypes = [ctypes.c_void_p]
    cupy = _HostCupy()
    monkeypatch.setattr(_cublas, "_library", lambda: lib)
    monkeypatch.setattr(_cublas, "_handles", {})
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    return lib, cupy


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", CASES)
def test_matmul_passes_cublas_what_the_plan_says(name: str, dtype: Any, host_cublas: Any
                                                 ) -> None:
    from mini_infer_cuda_plugins.ops import _cublas

    lib, _ = host_cublas
    make_a, make_b = CASES[name]
    base = _host(0, dtype)
    a, b = make_a(base), make_b(base)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    out = np.full(want.shape, np.nan, dtype)
    assert _cublas.matmul(_HostArray(a), _HostArray(b), _HostArray(out))
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)


def test_each_thread_has_a_handle_with_its_workspace_on_the_current_stream(
        host_cublas: Any) -> None:
    import threading

    from mini_infer_cuda_plugins.ops import _cublas

    lib, cupy = host_cublas
    a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)

    def product() -> None:
        out = np.empty((2, 4), np.float32)
        assert _cublas.matmul(_HostArray(a), _HostArray(b), _HostArray(out))
        np.testing.assert_array_equal(out, 3.0)

    product()
    cupy.stream_ptr = 0x2000  # another stream: set again, and the workspace after it
    product()
    worker = threading.Thread(target=product)
    worker.start()
    worker.join()
    handles = list(_cublas._handles.values())
    assert len(handles) == 2  # this thread's and the worker's
    mine = _cublas._handles[(threading.get_ident(), 0)]
    assert lib.fake_stream(mine.ptr) == 0x2000 and lib.fake_gemms(mine.ptr) == 2
    assert all(lib.fake_workspace(h.ptr) == _cublas.WORKSPACE_BYTES for h in handles)
