"""The compiled kernels' pool beside busy processes: the same results on one thread and on
several, whichever way the pool runs a job (in parallel, or on its caller alone as after a
stall), and onnxruntime's results within float32 rounding. Correctness only: no timing."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

_native = pytest.importorskip("mini_infer_cpu_native._native",
                              reason="the compiled kernels are not built here")

RNG = np.random.default_rng(26)
BUSY = "print('ready', flush=True)\nwhile True:\n    pass\n"


@pytest.fixture
def busy_neighbours() -> Iterator[None]:
    """Two busy-loop processes for the test's duration, each running before it starts."""
    procs = [subprocess.Popen([sys.executable, "-c", BUSY], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


@pytest.fixture
def pool_restored() -> Iterator[None]:
    try:
        yield
    finally:
        _native.set_pool_threads(0)
        _native.set_pool_adaptive("on")


def _model() -> onnx.ModelProto:
    """3x3 convolutions (GEMM or Winograd), a depthwise one, a 1x1 one, pooling and a
    fully connected layer: kernels that split their work over the pool in different ways."""
    inits, nodes = [], []

    def const(name: str, shape: tuple[int, ...]) -> str:
        inits.append(numpy_helper.from_array(
            (RNG.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32), name))
        return name

    def conv(x: str, y: str, cin: int, cout: int, k: int, group: int = 1) -> None:
        nodes.append(helper.make_node(
            "Conv", [x, const(f"{y}_w", (cout, cin // group, k, k)), const(f"{y}_b", (cout,))],
            [y], kernel_shape=[k, k], pads=[k // 2] * 4, group=group))

    conv("x", "c1", 3, 32, 3)
    nodes.append(helper.make_node("Relu", ["c1"], ["r1"]))
    conv("r1", "c2", 32, 64, 3)
    conv("c2", "d1", 64, 64, 3, group=64)
    conv("d1", "p1", 64, 48, 1)
    nodes.append(helper.make_node("MaxPool", ["p1"], ["m1"], kernel_shape=[2, 2],
                                  strides=[2, 2]))
    nodes.append(helper.make_node("Flatten", ["m1"], ["f1"]))
    nodes.append(helper.make_node("MatMul", ["f1", const("fc", (48 * 20 * 20, 100))], ["y"]))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 40, 40])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 100])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_one_thread_and_the_pool_agree_beside_busy_processes(busy_neighbours: None,
                                                             pool_restored: None) -> None:
    ort = pytest.importorskip("onnxruntime")
    import mini_infer_core as mi

    model = _model().SerializeToString()
    x = RNG.standard_normal((1, 3, 40, 40)).astype(np.float32)
    sess = mi.InferenceSession(model, device="cpu")  # built once: one set of tactics
    runs: dict[str, list[Any]] = {}
    for threads, mode in ((1, "on"), (3, "off"), (3, "solo"), (3, "on"), (2, "off"),
                          (2, "short")):
        _native.set_pool_threads(threads)
        _native.set_pool_adaptive(mode)
        runs[f"{threads}/{mode}"] = [sess.run(None, {"x": x})[0] for _ in range(5)]
    alone = runs["1/on"][0]
    for key, outs in runs.items():
        for out in outs:
            np.testing.assert_array_equal(out, alone, err_msg=key)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None,
                                                                              {"x": x})[0]
    np.testing.assert_allclose(alone, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def test_products_agree_on_every_path_beside_busy_processes(busy_neighbours: None,
                                                            pool_restored: None) -> None:
    """Many GEMMs in a row (the jobs the stall backoff watches): each output one thread's sum
    in k order, whichever threads ran its chunks."""
    m, n, k = 192, 300, 256
    a = RNG.standard_normal((m, k)).astype(np.float32)
    ap = _native.pack_a(a)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    _native.set_pool_threads(1)
    alone = np.empty((m, n), np.float32)
    _native.gemm(ap, m, k, b, alone)
    np.testing.assert_allclose(alone, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
    for mode in ("off", "solo", "on", "short"):
        _native.set_pool_threads(3)
        _native.set_pool_adaptive(mode)
        for _ in range(50):
            c = np.empty((m, n), np.float32)
            _native.gemm(ap, m, k, b, c)
            np.testing.assert_array_equal(c, alone, err_msg=mode)


def test_pool_stats_count_every_job_and_who_ran_its_chunks(pool_restored: None) -> None:
    """The counters the contention benchmark reads: every GEMM is one job, parallel on 2
    threads (its chunks split between the caller and the worker, in any proportion) or on
    the caller alone in the solo mode; the results are the one-thread results whichever
    way (and in the mode of a contended machine, its workers asleep between jobs)."""
    m, n, k = 96, 200, 128
    a = RNG.standard_normal((m, k)).astype(np.float32)
    ap = _native.pack_a(a)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    _native.set_pool_threads(1)
    alone = np.empty((m, n), np.float32)
    _native.gemm(ap, m, k, b, alone)
    np.testing.assert_allclose(alone, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
    _native.set_pool_threads(2)
    for mode, parallel in (("off", True), ("short", True), ("solo", False)):
        _native.set_pool_adaptive(mode)
        _native.pool_stats(reset=True)
        for _ in range(10):
            c = np.empty((m, n), np.float32)
            _native.gemm(ap, m, k, b, c)
            np.testing.assert_array_equal(c, alone, err_msg=mode)
        st = _native.pool_stats()
        assert set(st) == set(_native.POOL_STATS)
        if parallel:
            assert st["parallel"] == 10 and st["solo"] == 0, (mode, st)
            assert st["chunks"] > 10 and 0 <= st["caller_chunks"] <= st["chunks"], (mode, st)
            assert st["own_ns"] > 0, (mode, st)
        else:
            assert st["parallel"] == 0 and st["solo"] == 10, (mode, st)
    assert _native.pool_stats(reset=True)["solo"] == 10
    assert _native.pool_stats()["solo"] == 0  # reset


_PINNED_CHILD = """
import os, sys
import numpy as np
from mini_infer_cpu_native import _native
a = np.load(sys.argv[1]); b = np.load(sys.argv[2])
ap = _native.pack_a(a)
m, k = a.shape
n = b.shape[1]
_native.set_pool_threads(1)
alone = np.empty((m, n), np.float32)
_native.gemm(ap, m, k, b, alone)
_native.set_pool_threads(4)  # past the one CPU: the workers queue behind the caller
_native.set_pool_adaptive("short")  # a contended time: workers sleep after every job
_native.pool_stats(reset=True)
for _ in range(200):
    c = np.empty((m, n), np.float32)
    _native.gemm(ap, m, k, b, c)
    assert np.array_equal(c, alone)
st = _native.pool_stats()
assert st["parallel"] == 200 and st["chunks"] == 200 * 16, st
assert 0 <= st["caller_chunks"] <= st["chunks"], st
np.save(sys.argv[3], alone)
"""


def test_sleeping_workers_on_one_cpu_with_more_threads_than_cpus(tmp_path: Any) -> None:
    """A contended time (the workers sleep after each job and every job wakes them) in a
    process pinned to one CPU with 4 threads: the workers are woken but wait behind the
    caller, which claims whatever chunks they do not reach; every job completes, every
    product is the one-thread product (each output one thread's sum in k order, whoever ran
    its chunk), and that product is the float64 one within float32 rounding."""
    m, n, k = 128, 160, 96
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    cpu = min(os.sched_getaffinity(0))
    res = subprocess.run(
        [sys.executable, "-c", _PINNED_CHILD, str(tmp_path / "a.npy"), str(tmp_path / "b.npy"),
         str(tmp_path / "c.npy")], capture_output=True, text=True, check=False, timeout=120,
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    assert res.returncode == 0, res.stderr[-3000:]
    np.testing.assert_allclose(np.load(tmp_path / "c.npy"), a.astype(np.float64) @ b,
                               rtol=1e-4, atol=1e-3)


def test_contended_pool_with_more_threads_than_cores_matches_onnxruntime(
        busy_neighbours: None, pool_restored: None) -> None:
    """Beside busy processes, the pool at twice the cores plus one, in a contended time (its
    workers woken for every job, asleep between jobs) and with the contention watch on: the
    model's output is the one-thread output, and onnxruntime's within float32 rounding."""
    ort = pytest.importorskip("onnxruntime")
    import mini_infer_core as mi

    model = _model().SerializeToString()
    x = RNG.standard_normal((1, 3, 40, 40)).astype(np.float32)
    sess = mi.InferenceSession(model, device="cpu")
    _native.set_pool_threads(1)
    alone = sess.run(None, {"x": x})[0]
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None,
                                                                              {"x": x})[0]
    np.testing.assert_allclose(alone, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
    _native.set_pool_threads(2 * (os.cpu_count() or 1) + 1)
    for mode in ("short", "on"):
        _native.set_pool_adaptive(mode)
        _native.pool_stats(reset=True)
        for _ in range(10):
            np.testing.assert_array_equal(sess.run(None, {"x": x})[0], alone, err_msg=mode)
        assert _native.pool_stats()["parallel"] > 0, mode
