"""The boundary between Python and the compiled kernels: the argument structs and their ctypes
mirrors (layout, ABI version, a mismatch failing the distribution so that cpu_basic serves),
the wrappers' refusal of arrays a kernel would read or write past (too small, wrong dtype,
not contiguous, read-only), the kernels' own refusal of impossible sizes, recorded calls
keeping their arrays alive, and the thread pool running with the workers it could start."""

from __future__ import annotations

import ctypes
import gc
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mini_infer_cpu_native import _abi, _native

RNG = np.random.default_rng(17)
ARGS_H = Path(_abi.__file__).with_name("_args.h")
F32 = np.float32
#: what the guard region around a too-small buffer holds
SENTINEL = 12345.0


def _f(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(F32)


# ---- the argument structs -----------------------------------------------------------------

def _header_structs() -> dict[str, list[str]]:
    """Every ``typedef struct NAME {...} NAME;`` of _args.h and its fields, in order."""
    text = re.sub(r"/\*.*?\*/", "", ARGS_H.read_text(), flags=re.S)
    structs: dict[str, list[str]] = {}
    for name, body in re.findall(r"typedef struct (\w+) \{(.*?)\} \1;", text, flags=re.S):
        fields: list[str] = []
        for decl in body.split(";"):
            decl = decl.strip()
            if not decl:
                continue
            # "const float *x", "long n, c, h", "float *y, *work": the type is the first
            # words, every name after it (pointer stars dropped)
            first, *rest = decl.split(",")
            fields.append(first.replace("*", " ").split()[-1])
            fields += [r.replace("*", " ").strip() for r in rest]
        structs[name] = fields
    return structs


def test_the_header_the_layout_table_and_the_mirrors_list_the_same_fields_in_order() -> None:
    """A field added to _args.h but forgotten in _abi.c's table or _abi.py's mirror (or the
    other way round) fails here, even where it would hide in padding."""
    header = _header_structs()
    # 23 + the integer GEMM's 5 + _qconv.c's 2 + _qelt.c's 4 + _rnn.c's 1 + _qnbits.c's 2
    # + _qgap.c's 1 + _planes.c's 1
    assert len(header) == len(_abi.STRUCTS) == 41
    table = _abi._layout(_native._lib)
    for name, fields in header.items():
        mirror = _abi.STRUCTS[name]
        assert [f[0] for f in mirror._fields_] == fields, name
        by_offset = sorted((v[0], k) for k, v in table[name].items() if k is not None)
        assert [k for _, k in by_offset] == fields, name


def test_the_library_matches_its_mirrors_and_abi_version() -> None:
    assert _abi.layout_mismatches(_native._lib) == []
    assert _native._lib.mi_abi_version() == _abi.ABI_VERSION
    assert _abi.problem() is None


def test_a_mirror_that_differs_is_reported_field_by_field() -> None:
    class Wrong(ctypes.Structure):  # GemmArgs with lo/hi as doubles, no ldr, and an extra
        _fields_ = ([(n, ctypes.c_void_p) for n in "a b c bias res".split()]
                    + [(n, ctypes.c_long) for n in "m n k ldb ldc".split()]
                    + [("lo", ctypes.c_double), ("hi", ctypes.c_double),
                       ("extra", ctypes.c_int)])

    found = _abi.layout_mismatches(_native._lib, {**_abi.STRUCTS, "mi_gemm_args": Wrong})
    text = "\n".join(found)
    assert "mi_gemm_args.ldr: in the library, not in _abi.py" in text
    assert "mi_gemm_args.extra: in _abi.py, not in the library" in text
    assert re.search(r"mi_gemm_args\.lo: offset 88 size 4 in the library, offset \d+ size 8",
                     text)
    assert re.search(r"mi_gemm_args: \d+ bytes in the library, \d+ in _abi.py", text)
    missing = _abi.layout_mismatches(_native._lib, {
        k: v for k, v in _abi.STRUCTS.items() if k != "mi_lrn_args"})
    assert missing == ["mi_lrn_args: in the library, not mirrored in _abi.py"]


def test_the_layouts_computed_from_the_declarations_are_those_ctypes_gives() -> None:
    """The load check compares the library with layouts computed from each mirror's
    declaration, without making the Structures (issue 30): they must be ctypes' own, and a
    process that makes none of the mirrors it does not call."""
    for name, (c_name, _) in _abi._SPECS.items():
        assert _abi._spec_layout(name)[0] == _abi._class_layout(_abi.STRUCTS[c_name]), name
    script = textwrap.dedent("""
        from mini_infer_cpu_native import _abi
        _abi.load()
        made = [n for n in _abi._SPECS if n in vars(_abi)]
        from mini_infer_cpu_native._abi import QGemmArgs
        print(made, "STRUCTS" in vars(_abi), sorted(n for n in _abi._SPECS if n in vars(_abi)))
    """)
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                         text=True, timeout=120).stdout.strip()
    assert out == "[] False ['QGemmArgs']"


def test_a_passed_layout_check_is_recorded_and_skipped_while_the_files_stay(
        tmp_path: Path) -> None:
    """A process records that this library passed against these mirrors; the next one skips
    the ~0.9 ms check (issue 30), unless the record is gone or the cache is off."""
    script = textwrap.dedent("""
        import sys
        from mini_infer_cpu_native import _abi
        if sys.argv[1] == "refuse":  # a check that runs fails
            _abi.layout_mismatches = lambda lib: ["checked"]
        try:
            _abi.load()
        except _abi.AbiError as exc:
            print("checked" in str(exc))
        else:
            print("loaded")
    """)

    def child(mode: str, **env: str) -> str:
        return subprocess.run(
            [sys.executable, "-c", script, mode], check=True, capture_output=True, text=True,
            timeout=120, env={**os.environ, "MINI_INFER_CACHE_DIR": str(tmp_path), **env},
        ).stdout.strip()

    assert child("refuse") == "True"  # nothing recorded yet: checked, and refused
    assert not list(tmp_path.glob("abi-checked-*"))
    assert child("pass") == "loaded"
    (record,) = tmp_path.glob("abi-checked-*")
    assert child("refuse") == "loaded"  # recorded: not checked again
    assert child("refuse", MINI_INFER_DISCOVERY_CACHE="0") == "True"
    record.unlink()
    assert child("refuse") == "True"


@pytest.mark.parametrize("patch, message", [
    ("_abi.ABI_VERSION = 2", "has ABI version 1, this package's Python side expects 2"),
    ("_abi.STRUCTS['mi_pool2d_args'] = _abi.GemmArgs",
     "the argument structs differ from their mirrors"),
])
def test_importing_the_kernels_against_another_layout_fails_clearly(patch: str,
                                                                    message: str) -> None:
    """In a process of its own (the module loads once): the import fails, naming the
    library and what to do, before any kernel is called."""
    script = textwrap.dedent(f"""
        from mini_infer_cpu_native import _abi
        {patch}
        try:
            from mini_infer_cpu_native import _native
        except _abi.AbiError as exc:
            print(exc)
        else:
            raise SystemExit("imported")
    """)
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                         text=True, timeout=120).stdout
    assert message in out and "reinstall mini-infer-cpu-native" in out and "_kernels" in out


def test_a_library_of_another_abi_fails_the_distribution_and_cpu_basic_serves(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from mini_infer_core.registry import discover

    def forget() -> None:  # the checks are made once per process
        _abi.load.cache_clear()
        _abi.problem.cache_clear()

    monkeypatch.setattr(_abi, "ABI_VERSION", _abi.ABI_VERSION + 1)
    forget()
    try:
        registry = discover()
    finally:
        monkeypatch.undo()
        forget()
    record = {d.name: d for d in registry.distributions}["mini-infer-cpu-native"]
    assert record.status == "failed"
    assert "cannot be used" in str(record.error) and "ABI version" in str(record.error)
    (conv, *_) = registry.candidates("", "Conv", "cpu", 17)
    assert conv.distribution == "mini-infer-cpu-plugins"


# ---- the wrappers' checks -----------------------------------------------------------------

def _too_small(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A buffer one element short of ``a`` (flat, C-contiguous) and the array it is the
    start of: past its end lie sentinels, so that a kernel reading or writing beyond it
    would not crash this process but show there."""
    whole = np.full(a.size + 64, SENTINEL, F32)
    return whole[: a.size - 1], whole


def _too_few_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a`` (2-D) with its last row missing, inside a larger array of sentinels."""
    whole = np.full((a.shape[0] + 4, a.shape[1]), SENTINEL, F32)
    return whole[: a.shape[0] - 1], whole


def _strided(a: np.ndarray) -> np.ndarray:
    """``a``'s values in an array of the same shape whose last axis is strided."""
    wide = np.zeros((*a.shape[:-1], 2 * a.shape[-1]), F32)
    wide[..., ::2] = a
    return wide[..., ::2]


def _dwconv() -> tuple[Callable[..., Any], dict[str, Any]]:
    x, w, b = _f(1, 3, 6, 6), _f(3, 1, 3, 3), _f(3)
    return _native.dwconv2d, dict(
        x=x, w=w, bias=b, res=_f(1, 3, 6, 6), y=np.zeros((1, 3, 6, 6), F32),
        work=np.zeros(_native.dwconv2d_work((8, 8), 6), F32), kernel=(3, 3), strides=(1, 1),
        dilations=(1, 1), begin=(1, 1), ext=(8, 8), lo=-np.inf, hi=np.inf)


def _pool() -> tuple[Callable[..., Any], dict[str, Any]]:
    return _native.pool2d, dict(
        x=_f(1, 2, 7, 7), y=np.zeros((1, 2, 3, 3), F32),
        work=np.zeros(_native.pool2d_work(7, 7, 3, 3), F32), kernel=(3, 3), strides=(2, 2),
        dilations=(1, 1), begin=(0, 0), end=(0, 0), average=True, include_pad=False)


def _bias_act() -> tuple[Callable[..., Any], dict[str, Any]]:
    return _native.bias_act, dict(y=_f(2, 3, 4, 5), bias=_f(3), res=_f(2, 3, 4, 5), lo=0.0,
                                  hi=6.0)


def _wino_in() -> tuple[Callable[..., Any], dict[str, Any]]:
    return _native.wino_in, dict(x=_f(4, 8, 8), v=np.zeros((16, 4, 16), F32),
                                 rows=np.zeros(2 * 4 * (2 * 4 + 2), F32), begin=(1, 1), tw=4,
                                 ty0=0, ty1=4)


def _wino_out() -> tuple[Callable[..., Any], dict[str, Any]]:
    return _native.wino_out, dict(mm=_f(16, 5, 16), y=np.zeros((5, 8, 7), F32), bias=_f(5),
                                  res=_f(5, 8, 7), rows=np.zeros(4 * 4, F32), tw=4, ty0=0,
                                  ty1=4, lo=-np.inf, hi=np.inf)


def _im2col() -> tuple[Callable[..., Any], dict[str, Any]]:
    return _native.im2col, dict(x=_f(1, 2, 6, 6), cols=np.zeros((2 * 9, 2 * 6), F32),
                                kernel=(3, 3), strides=(1, 1), dilations=(1, 1),
                                begin=(1, 1), rows=(1, 3), ow=6)


def _lrn() -> tuple[Callable[..., Any], dict[str, Any]]:
    return _native.lrn, dict(x=_f(1, 6, 4, 4), y=np.zeros((1, 6, 4, 4), F32),
                             acc=np.zeros(16, F32), size=3, alpha=1e-4, beta=0.75, bias=1.0)


def _scale_shift() -> tuple[Callable[..., Any], dict[str, Any]]:
    return _native.scale_shift, dict(x=_f(2, 3, 5), y=np.zeros((2, 3, 5), F32), a=_f(3),
                                     b=_f(3), lo=-np.inf, hi=np.inf)


def _gemm() -> tuple[Callable[..., Any], dict[str, Any]]:
    a = _f(9, 7)
    return _native.gemm, dict(ap=_native.pack_a(a), m=9, k=7, b=_f(7, 20),
                              c=np.zeros((9, 20), F32), bias=_f(9), res=_f(9, 20))


def _gemm_batch() -> tuple[Callable[..., Any], dict[str, Any]]:
    packed = np.concatenate([_native.pack_a(_f(6, 5)) for _ in range(3)])
    return _native.gemm_batch, dict(ap=packed, m=6, k=5, b=_f(3, 5, 11),
                                    c=np.zeros((3, 6, 11), F32))


def _matmul() -> tuple[Callable[..., Any], dict[str, Any]]:
    return _native.matmul, dict(a=_f(2, 3, 9, 7), b=_f(2, 3, 7, 20),
                                c=np.zeros((2, 3, 9, 20), F32), k=7, cbias=_f(20),
                                res=_f(2, 3, 9, 20))


def _matmul_packed() -> tuple[Callable[..., Any], dict[str, Any]]:
    return _native.matmul, dict(a=_native.pack_a(_f(9, 7)), b=_native.pack_b(_f(7, 20)),
                                c=np.zeros((1, 1, 9, 20), F32), k=7, a_packed=True,
                                b_packed=True, bias=_f(9))


#: each wrapper, its valid arguments, and which of them may be one element too short (the
#: others' sizes are their shapes', which fix the geometry), and which the kernel writes
WRAPPERS: dict[str, tuple[Callable[[], tuple[Callable[..., Any], dict[str, Any]]],
                          tuple[str, ...], tuple[str, ...]]] = {
    "dwconv2d": (_dwconv, ("w", "bias", "res", "work"), ("y", "work")),
    "pool2d": (_pool, ("work",), ("y", "work")),
    "bias_act": (_bias_act, ("bias", "res"), ("y",)),
    "wino_in": (_wino_in, ("v", "rows"), ("v", "rows")),
    "wino_out": (_wino_out, ("mm", "bias", "res", "rows"), ("y", "rows")),
    "im2col": (_im2col, ("cols",), ("cols",)),
    "lrn": (_lrn, ("y", "acc"), ("y", "acc")),
    "scale_shift": (_scale_shift, ("y", "a", "b"), ("y",)),
    "gemm": (_gemm, ("ap", "bias", "b", "res"), ("c",)),
    "gemm_batch": (_gemm_batch, ("ap",), ("c",)),
    # MatMul and Gemm: operands of any shape (a too-small one has the wrong shape) and A of
    # any strides, or packed (contiguous)
    "matmul": (_matmul, ("a", "b", "res", "cbias"), ("c",)),
    "matmul_packed": (_matmul_packed, ("a", "b", "bias"), ("c",)),
}
#: arguments whose kernel reads them through any strides
ANY_STRIDES = {("matmul", "a")}

CASES = [(w, arg, fault) for w, (make, small, written) in WRAPPERS.items()
         for arg, value in make()[1].items() if isinstance(value, np.ndarray)
         for fault in ("too small", "float64", "strided", "read-only")
         if (fault != "too small" or arg in small) and (fault != "read-only" or arg in written)
         and (fault != "strided" or (w, arg) not in ANY_STRIDES)]


@pytest.mark.parametrize("wrapper", WRAPPERS)
def test_each_wrapper_takes_its_valid_arguments(wrapper: str) -> None:
    """The checks refuse nothing a kernel can take (the cases below start from these)."""
    fn, kwargs = WRAPPERS[wrapper][0]()
    fn(**kwargs)


@pytest.mark.parametrize("wrapper, arg, fault", CASES)
def test_each_wrapper_refuses_what_its_kernel_would_overrun(wrapper: str, arg: str,
                                                          fault: str) -> None:
    """One argument made too small (by one element: the kernel's last index), float64, strided
    (the kernel would read it as one block) or read-only (the kernel writes it): a
    TypeError or ValueError naming the kernel and the argument, and nothing read or written
    (the sentinels past a too-small buffer stay, the output stays)."""
    fn, kwargs = WRAPPERS[wrapper][0]()
    good = kwargs[arg]
    whole = None
    if fault == "too small":
        bad, whole = (_too_few_rows(good) if wrapper == "gemm" and arg in ("b", "res")
                      else _too_small(good))
        bad[...] = good.reshape(-1)[: bad.size].reshape(bad.shape)
    elif fault == "float64":
        bad = good.astype(np.float64)
    elif fault == "strided":
        bad = _strided(good)
    else:
        bad = good.copy()
        bad.setflags(write=False)
    kwargs[arg] = bad
    outputs = {k: v.copy() for k, v in kwargs.items()
               if k in WRAPPERS[wrapper][2] and k != arg}
    error = TypeError if fault == "float64" else ValueError
    with pytest.raises(error, match=rf"mi_\w+_f32: {arg}\b"):
        fn(**kwargs)
    if whole is not None:
        assert (whole.reshape(-1)[bad.size:] == SENTINEL).all()
    for k, before in outputs.items():
        np.testing.assert_array_equal(kwargs[k], before, err_msg=f"{k} was written")


@pytest.mark.parametrize("wrapper, change, message", [
    ("pool2d", {"strides": (0, 1)}, "mi_pool2d_f32 refused its arguments"),
    ("dwconv2d", {"dilations": (1, 0)}, "mi_dwconv2d_f32 refused"),
    ("im2col", {"strides": (1, 0)}, "mi_im2col_f32 refused"),
    ("dwconv2d", {"ext": (7, 8)}, "must cover the"),
    ("wino_out", {"tw": 3}, "must cover the width"),
    ("wino_out", {"ty1": 5}, "lie in the height"),
    ("wino_in", {"ty0": 3, "ty1": 2}, "not a range"),
    ("im2col", {"rows": (2, 1)}, "not a range"),
])
def test_impossible_geometry_is_refused_before_it_reaches_memory(
        wrapper: str, change: dict[str, Any], message: str) -> None:
    """Strides or dilations of 0 (a division by zero in the kernel), a padded extent smaller
    than the windows reach, tiles outside the output: refused, by the wrapper or by the
    kernel (MI_EARGS), without a crash or a write."""
    fn, kwargs = WRAPPERS[wrapper][0]()
    with pytest.raises(ValueError, match=message):
        fn(**{**kwargs, **change})


def test_gemm_operands_of_the_wrong_shape_or_overlapping_rows_are_refused() -> None:
    fn, kwargs = _gemm()
    with pytest.raises(ValueError, match=r"mi_gemm_f32: b has shape \(7, 19\)"):
        fn(**{**kwargs, "b": kwargs["b"][:, :19]})
    with pytest.raises(ValueError, match="c's rows overlap"):
        fn(**{**kwargs, "c": np.lib.stride_tricks.as_strided(
            np.zeros(40, F32), (9, 20), (8, 4))})
    # a residual of one row for all (row stride 0) is read, so it is fine
    fn(**{**kwargs, "res": np.broadcast_to(_f(1, 20), (9, 20))})


def test_matmul_operands_of_the_wrong_shape_or_overlapping_rows_are_refused() -> None:
    fn, kwargs = _matmul()
    with pytest.raises(ValueError, match=r"mi_matmul_f32: b has shape \(2, 3, 7, 19\)"):
        fn(**{**kwargs, "b": kwargs["b"][..., :19]})
    with pytest.raises(ValueError, match="c's strides .* share memory"):
        fn(**{**kwargs, "c": np.lib.stride_tricks.as_strided(
            np.zeros(400, F32), (2, 3, 9, 20), (0, 80, 80, 4))})
    with pytest.raises(ValueError, match="b's rows are not contiguous"):
        fn(**{**kwargs, "b": np.swapaxes(_f(2, 3, 20, 7), 2, 3)})
    # read through any strides: a transposed, broadcast A; a residual of one row for all
    fn(**{**kwargs, "a": np.broadcast_to(_f(7, 9).T, (2, 3, 9, 7)),
          "res": np.broadcast_to(_f(1, 20), (2, 3, 9, 20))})


def test_the_matmul_kernel_refuses_negative_sizes_itself() -> None:
    """What the wrappers never pass, the kernel refuses (MI_EARGS) without touching memory."""
    a, b, c = _f(4, 4), _f(4, 4), np.zeros((4, 4), F32)
    base = dict(a=a.ctypes.data, b=b.ctypes.data, c=c.ctypes.data, m=4, n=4, k=4, a_rs=4,
                a_ks=1, ldb=4, ldc=4, batch0=1, batch1=1, alpha=1.0, lo=-np.inf, hi=np.inf)
    for change in ({"m": -1}, {"ldc": -4}, {"batch1": -1}, {"c_s0": -16}, {"c": 0}):
        args = _abi.MatMulArgs(**{**base, **change})
        assert _native._k.matmul(ctypes.byref(args)) == 1, change
    assert (c == 0).all()
    assert _native._k.matmul(ctypes.byref(_abi.MatMulArgs(**base))) == 0
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_misaligned_arrays_are_refused() -> None:
    raw = np.zeros(4 * 30 + 1, np.uint8)[1:]
    x = raw.view(F32).reshape(1, 2, 3, 5)
    assert not x.flags.aligned and not _native.usable(x)
    with pytest.raises(ValueError, match="mi_lrn_f32: x is not aligned"):
        _native.lrn(x, np.empty_like(x), np.zeros(15, F32), 3, 1e-4, 0.75, 1.0)


def test_a_recorded_call_keeps_its_arrays_alive() -> None:
    """The caller may drop its arrays: the call holds them, so its addresses stay valid."""
    a, b = _f(16, 40), _f(40, 24)
    c = np.zeros((16, 24), F32)
    calls = [_native.gemm_call(_native.pack_a(a), 16, 40, b.copy(), c, None,
                               np.ones((16, 24), F32))]
    gc.collect()
    np.full(10_000, np.nan, F32)  # memory a freed operand would have gone to
    _native.run_calls(calls)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b + 1, rtol=1e-5, atol=1e-5)


# ---- the pool with fewer workers than asked for -------------------------------------------

def test_workers_that_cannot_start_leave_the_pool_running_with_the_others() -> None:
    """In a fresh process: of 4 threads asked for, one worker starts and the next fails (as
    pthread_create does without resources): every kernel still computes its whole job with
    the 2 threads there are, the pool says so (and the error), and asking again starts the
    rest. With no worker at all, the caller computes alone. (A pool that waited for workers
    it does not have would hang here: the subprocess's timeout.)"""
    script = textwrap.dedent("""
        import errno
        import numpy as np
        from mini_infer_cpu_native import _native as n

        rng = np.random.default_rng(3)
        a = rng.standard_normal((64, 128)).astype(np.float32)
        ap = n.pack_a(a)
        x = rng.standard_normal((2, 16, 40, 40)).astype(np.float32)

        def check():
            b = rng.standard_normal((128, 300)).astype(np.float32)
            c = np.zeros((64, 300), np.float32)
            n.gemm(ap, 64, 128, b, c)  # split in parts, each thread its own
            np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
            y = np.zeros((2, 16, 20, 20), np.float32)  # the pool, with scratch per worker
            n.pool2d(x, y, np.zeros(n.pool2d_work(40, 40, 20, 20), np.float32), (2, 2),
                     (2, 2), (1, 1), (0, 0), (0, 0), False, False)
            np.testing.assert_array_equal(y, x.reshape(2, 16, 20, 2, 20, 2).max(axis=(3, 5)))

        n.fail_pool_start(1)
        n.set_pool_threads(4)
        check()
        assert n.pool_started() == 2, n.pool_started()
        assert n.pool_threads() == 2, n.pool_threads()
        assert n.pool_start_error() == errno.EAGAIN
        check()
        assert n.pool_started() == 2  # not tried again at every job

        n.fail_pool_start(None)
        n.set_pool_threads(4)  # asked again: the missing ones start
        check()
        assert n.pool_started() == 4 and n.pool_threads() == 4
        print("ok")
    """)
    alone = textwrap.dedent("""
        import numpy as np
        from mini_infer_cpu_native import _native as n

        n.fail_pool_start(0)
        n.set_pool_threads(3)
        a = np.ones((32, 64), np.float32)
        c = np.zeros((32, 500), np.float32)
        n.gemm(n.pack_a(a), 32, 64, np.ones((64, 500), np.float32), c)
        assert (c == 64).all()
        assert n.pool_started() == 1 and n.pool_threads() == 1
        print("ok")
    """)
    for code in (script, alone):
        out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                             text=True, timeout=120)
        assert out.stdout.strip() == "ok", out.stderr


def test_a_refusal_inside_a_plugin_fails_the_run_naming_the_node(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Should a plugin hand a wrapper a buffer too small (a bug), the run stops with a
    MiniInferError that names the node and the kernel's complaint, and nothing is overrun."""
    import onnx
    from mini_infer_cpu_native import normalization
    from onnx import TensorProto, helper

    import mini_infer_core
    from mini_infer_core.errors import ExecutionError

    graph = helper.make_graph(
        [helper.make_node("LRN", ["x"], ["y"], size=3, name="norm1")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 4, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    onnx.checker.check_model(model)
    session = mini_infer_core.InferenceSession(model, device="cpu")
    real = normalization.lrn
    monkeypatch.setattr(normalization, "lrn", lambda x, y, acc, *rest: real(x, y, acc[:1], *rest))
    with pytest.raises(ExecutionError, match=r"norm1.*mi_lrn_f32: acc holds 1 floats"):
        session.run(None, {"x": _f(1, 6, 4, 4)})


def test_pack_a_into_part_of_a_larger_vector_packs_what_a_fresh_one_holds() -> None:
    # the GEMM panels of several matrices packed one after the other without a copy (Winograd's
    # 36 U_k, each group of a grouped convolution's weights): each part as unpack_a reads it
    a, b = _f(11, 7), _f(16, 7)
    whole = np.full(a.size + b.size + 1, np.nan, F32)
    got = _native.pack_a(a, whole[:a.size])
    _native.pack_a(b, whole[a.size:a.size + b.size])
    assert np.shares_memory(got, whole)
    np.testing.assert_array_equal(_native.unpack_a(whole[:a.size], 11, 7), a)
    np.testing.assert_array_equal(_native.unpack_a(whole[a.size:-1], 16, 7), b)
    assert np.isnan(whole[-1])  # nothing written past the parts
    with pytest.raises(ValueError, match="out must be a float32 vector of 77 elements"):
        _native.pack_a(a, whole[:76])
