"""What the benchmarks share: the onnxruntime session they compare against, set up alike
everywhere (``threads`` intra-op threads, one inter-op thread, spinning off so that an idle
pool does not steal the other runtime's cores), and the least disturbed time of a call::

    sess = ort_session(model, threads=1)
    ms = best_ms(lambda: sess.run(None, feeds), repeat=20, warmup=1)

onnxruntime is imported on the first :func:`ort_session` (it is a development dependency).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import onnx

__all__ = ["best_ms", "ort_session"]


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
