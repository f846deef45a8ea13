"""What the benchmarks share: the onnxruntime session they compare against, set up alike
everywhere (``threads`` intra-op threads, one inter-op thread, spinning off so that an idle
pool does not steal the other runtime's cores), and the least disturbed time of a call::

    sess = ort_session(model, threads=1)
    ms = best_ms(lambda: sess.run(None, feeds), repeat=20, warmup=1)

onnxruntime is imported on the first :func:`ort_session` (it is a development dependency).
OpenVINO is an optional anchor (``pip install openvino``), never a dependency:
:func:`openvino_runner` gives None where it is not installed.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import onnx

__all__ = ["best_ms", "interleaved", "openvino_runner", "ort_session", "session_with_env"]


def ort_session(model: onnx.ModelProto | bytes, threads: int) -> Any:
    """An ``onnxruntime.InferenceSession`` of ``model`` on the CPU with ``threads`` intra-op
    threads, one inter-op thread and spinning off."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    return ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])


def openvino_runner(model: str | os.PathLike[str] | onnx.ModelProto | bytes, threads: int,
                    precision: str | None = "f32"
                    ) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    """A function running ``model`` in OpenVINO on the CPU (``feeds`` -> outputs by name), or
    None where OpenVINO is not installed.

    ``INFERENCE_NUM_THREADS`` is ``threads`` and ``PERFORMANCE_HINT`` is ``LATENCY`` (one
    stream); ``precision`` is its ``INFERENCE_PRECISION_HINT``: ``"f32"`` holds it to float32,
    None leaves OpenVINO's default, which is bf16 on CPUs with AVX512_BF16 or AMX (and f16 on
    some ARM ones) and f32 elsewhere."""
    try:
        import openvino
    except ImportError:
        return None
    core = openvino.Core()
    if isinstance(model, onnx.ModelProto):
        model = model.SerializeToString()
    read = core.read_model(model if isinstance(model, bytes) else os.fspath(model))
    config: dict[str, Any] = {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"}
    if precision is not None:
        config["INFERENCE_PRECISION_HINT"] = precision
    compiled = core.compile_model(read, "CPU", config)
    request = compiled.create_infer_request()
    names = [out.get_any_name() for out in compiled.outputs]

    def run(feeds: dict[str, Any]) -> dict[str, Any]:
        result = request.infer(feeds)
        return {name: result[i] for i, name in enumerate(names)}

    return run


def best_ms(fn: Callable[[], Any], *, repeat: int, warmup: int = 0) -> float:
    """The shortest of ``repeat`` calls of ``fn`` in milliseconds, after ``warmup`` calls
    not timed (the machine is shared: the minimum is the least disturbed)."""
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def interleaved(calls: Sequence[Callable[[], Any]], repeat: int, *, sample_seconds: float = 1e-3,
                most: int = 200) -> list[float]:
    """The best seconds per call of each of ``calls``, timed in turn ``repeat`` times (so that
    a disturbance of the machine falls on every one alike), each sample as many calls (at
    most ``most``) as fill about ``sample_seconds``; each call is made once first (warm-up)."""
    numbers = []
    for call in calls:
        call()
        start = time.perf_counter()
        call()
        numbers.append(max(1, min(most, int(sample_seconds
                                            / max(time.perf_counter() - start, 1e-7)))))
    best = [math.inf] * len(calls)
    for _ in range(repeat):
        for i, (call, number) in enumerate(zip(calls, numbers, strict=True)):
            start = time.perf_counter()
            for _ in range(number):
                call()
            best[i] = min(best[i], (time.perf_counter() - start) / number)
    return best


def session_with_env(model: Any, feeds: dict[str, Any], env: dict[str, str]) -> Any:
    """A mini-infer session made and run once with ``env`` set (variables its execution
    context reads when made, at the first run: ``MINI_INFER_DIRECT_RUN``), the environment
    restored after."""
    from mini_infer_core import InferenceSession

    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        sess = InferenceSession(model)
        sess.run(None, feeds)
    finally:
        for k, v in before.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v
    return sess
