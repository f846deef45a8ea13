"""Latency under a shared CPU: mini-infer against onnxruntime, quiet and beside busy neighbours.

Per model, both engines run in one process on the same inputs, interleaved (each iteration
runs one engine then the other, the order alternating), so that whatever the machine does
meanwhile hits both alike. The figure that matters is not a latency but the ratio
mini-infer / onnxruntime in each condition, against the same ratio on a quiet machine.

Conditions (``--conditions``, default all):

- ``quiet``: nothing started beside the benchmark;
- ``busy1``, ``busy2``: one or two Python busy loops (``while True: pass``), each a process
  of its own at the same priority;
- ``nice2``: one ``nice 19`` process running two threads that hash megabyte buffers
  (hashlib lets go of the GIL, so both threads run at once);
- ``taskset1``: the measurement in a child process pinned to one CPU (``sched_setaffinity``),
  both engines asked for ``--threads`` threads (default 2): a CPU budget below the thread
  count asked for, as a container's CPU quota gives.

The conditions run in rounds (``--rounds``, default 3): each round visits every condition, so
slow drifts of the machine (other users of a shared one) spread over all of them; the medians
are over every round's runs. The neighbours start before a condition's runs and are killed
after them; each says it is running before the runs begin (no sleeps).

Models (built here with ``onnx.helper``, random weights, seeded): ``convnet`` (a small
ResNet: 3x3 convolutions with residual Adds, 96x96 input), ``dwnet`` (MobileNetV2-like
blocks: 1x1 expand, 3x3 depthwise, 1x1 project, Clip), ``mlp`` (a transformer-like encoder
on 64 tokens of 256: LayerNormalization, the attention's MatMuls and Softmax, a 1024-wide MLP).
``--model PATH`` adds ONNX files (inputs filled at random from their declared types; symbolic
dimensions become 1).

onnxruntime runs with ``intra_op_num_threads`` = mini-infer's thread count and its idle
threads not spinning (as ``mini-infer bench`` and ``benchmarks/zoo.py`` do: spinning threads
would take the cores from the engine timed next); ``--ort-spinning`` keeps its default.
Two switches measure what this round changed: ``--uncapped`` gives the pools ``--threads``
through threadpoolctl, past the CPU budget (as before the budget; it matters in
``taskset1``), and ``--pool-backoff off`` turns off the compiled pool's contention watch
(``short``: a contended time throughout, its workers asleep between jobs; ``_pool.c``).

    python benchmarks/contention.py
    python benchmarks/contention.py --models convnet --conditions quiet busy2 --rounds 5
    python benchmarks/contention.py --model model.onnx --conditions quiet nice2

The output: per model and condition the median latency of each engine and the ratio, then the
ratio divided by the quiet one (the issue's goal: at most 1.2 for every model).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CONDITIONS = ("quiet", "busy1", "busy2", "nice2", "taskset1")

_BUSY = "import sys\nprint('ready', flush=True)\nwhile True:\n    pass\n"
_HASHERS = (
    "import hashlib, sys, threading\n"
    "buf = bytes(1 << 20)\n"
    "def spin():\n"
    "    while True:\n"
    "        hashlib.sha256(buf).digest()\n"
    "for _ in range(2):\n"
    "    threading.Thread(target=spin, daemon=True).start()\n"
    "print('ready', flush=True)\n"
    "threading.Event().wait()\n")


# ---------------------------------------------------------------- models


class _Net:
    """Collects nodes and initializers for a graph built with onnx.helper."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.n = 0

    def name(self, base: str) -> str:
        self.n += 1
        return f"{base}{self.n}"

    def const(self, arr: np.ndarray[Any, Any]) -> str:
        name = self.name("w")
        self.inits.append(numpy_helper.from_array(arr.astype(np.float32), name))
        return name

    def op(self, op_type: str, inputs: list[str], **attrs: Any) -> str:
        out = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def conv(self, x: str, cin: int, cout: int, k: int, stride: int = 1, group: int = 1) -> str:
        w = self.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / (cin // group
                                                                                 * k * k))
        b = self.rng.standard_normal(cout) * 0.01
        return self.op("Conv", [x, self.const(w), self.const(b)], kernel_shape=[k, k],
                       strides=[stride, stride], pads=[k // 2] * 4, group=group)

    def matmul(self, x: str, rows: int, cols: int, bias: bool = True) -> str:
        y = self.op("MatMul", [x, self.const(self.rng.standard_normal((rows, cols))
                                             / np.sqrt(rows))])
        return self.op("Add", [y, self.const(self.rng.standard_normal(cols) * 0.01)]) \
            if bias else y

    def model(self, x: str, x_shape: list[int], y: str) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, "g", [helper.make_tensor_value_info(x, TensorProto.FLOAT, x_shape)],
            [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)], self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        return m


def convnet(seed: int = 0) -> onnx.ModelProto:
    g = _Net(seed)
    h = g.op("Relu", [g.conv("x", 3, 32, 3, 2)])  # 48x48
    c = 32
    for stage in range(3):
        for _ in range(2):
            y = g.op("Relu", [g.conv(h, c, c, 3)])
            h = g.op("Relu", [g.op("Add", [g.conv(y, c, c, 3), h])])
        if stage < 2:
            h = g.op("Relu", [g.conv(h, c, 2 * c, 3, 2)])
            c *= 2
    p = g.op("Flatten", [g.op("GlobalAveragePool", [h])])
    return g.model("x", [1, 3, 96, 96], g.matmul(p, c, 10))


def dwnet(seed: int = 0) -> onnx.ModelProto:
    g = _Net(seed)
    lo, hi = g.const(np.array(0.0)), g.const(np.array(6.0))
    h = g.op("Clip", [g.conv("x", 3, 16, 3, 2), lo, hi])  # 56x56
    c = 16
    for cout, stride in ((24, 2), (24, 1), (40, 2), (40, 1), (80, 2), (80, 1), (96, 1)):
        e = g.op("Clip", [g.conv(h, c, 4 * c, 1), lo, hi])
        d = g.op("Clip", [g.conv(e, 4 * c, 4 * c, 3, stride, group=4 * c), lo, hi])
        p = g.conv(d, 4 * c, cout, 1)
        h = g.op("Add", [p, h]) if stride == 1 and cout == c else p
        c = cout
    f = g.op("Flatten", [g.op("GlobalAveragePool", [h])])
    return g.model("x", [1, 3, 112, 112], g.matmul(f, c, 10))


def mlp(seed: int = 0, tokens: int = 64, width: int = 256, layers: int = 4) -> onnx.ModelProto:
    g = _Net(seed)
    scale = g.const(np.array(1.0 / np.sqrt(width)))
    h = "x"
    for _ in range(layers):
        n = g.op("LayerNormalization", [h, g.const(np.ones(width)), g.const(np.zeros(width))],
                 axis=-1)
        q, k, v = (g.matmul(n, width, width) for _ in range(3))
        s = g.op("Softmax", [g.op("Mul", [g.op("MatMul", [q, g.op("Transpose", [k],
                                                                   perm=[0, 2, 1])]), scale])],
                 axis=-1)
        h = g.op("Add", [g.matmul(g.op("MatMul", [s, v]), width, width), h])
        n = g.op("LayerNormalization", [h, g.const(np.ones(width)), g.const(np.zeros(width))],
                 axis=-1)
        f = g.op("Relu", [g.matmul(n, width, 4 * width)])
        h = g.op("Add", [g.matmul(f, 4 * width, width), h])
    return g.model("x", [1, tokens, width], h)


BUILT: dict[str, Callable[[], onnx.ModelProto]] = {"convnet": convnet, "dwnet": dwnet,
                                                   "mlp": mlp}


def _feeds(model: onnx.ModelProto, seed: int) -> dict[str, np.ndarray[Any, Any]]:
    rng = np.random.default_rng(seed)
    inits = {i.name for i in model.graph.initializer}
    feeds: dict[str, np.ndarray[Any, Any]] = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else 1 for d in tt.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if np.issubdtype(dtype, np.integer):
            feeds[vi.name] = rng.integers(0, 100, shape).astype(dtype)
        else:
            feeds[vi.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


# ---------------------------------------------------------------- engines and timing


class Pair:
    """One model in both engines, with its inputs."""

    def __init__(self, name: str, model: onnx.ModelProto, threads: int | None,
                 ort_spinning: bool) -> None:
        import onnxruntime as ort

        import mini_infer_core as mi
        from mini_infer_core.threads import thread_choice

        self.name = name
        data = model.SerializeToString()
        self.feeds = _feeds(model, 1)
        self.mini = mi.InferenceSession(data, device="cpu")
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = threads or thread_choice()[0]
        options.inter_op_num_threads = 1
        if not ort_spinning:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.ort = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        a = self.mini.run(None, self.feeds)[0]
        b = self.ort.run(None, self.feeds)[0]
        err = float(np.linalg.norm(np.asarray(a, np.float64) - b)
                    / max(float(np.linalg.norm(np.asarray(b, np.float64))), 1e-30))
        if err > 1e-2:
            raise SystemExit(f"{name}: mini-infer and onnxruntime disagree (rel L2 {err:.2e})")

    def time(self, iterations: int, warmup: int) -> tuple[list[float], list[float]]:
        runs = {"mini": lambda: self.mini.run(None, self.feeds),
                "ort": lambda: self.ort.run(None, self.feeds)}
        for _ in range(warmup):
            for run in runs.values():
                run()
        times: dict[str, list[float]] = {"mini": [], "ort": []}
        for i in range(iterations):
            order = ("mini", "ort") if i % 2 == 0 else ("ort", "mini")
            for key in order:
                t0 = time.perf_counter()
                runs[key]()
                times[key].append(time.perf_counter() - t0)
        return times["mini"], times["ort"]


@contextmanager
def neighbours(condition: str) -> Iterator[None]:
    """Start the condition's busy processes, wait until each says it runs, kill them after."""
    specs: list[tuple[str, bool]] = {
        "busy1": [(_BUSY, False)], "busy2": [(_BUSY, False), (_BUSY, False)],
        "nice2": [(_HASHERS, True)]}.get(condition, [])
    procs = []
    try:
        for code, nice in specs:
            p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                 text=True, preexec_fn=(lambda: os.nice(19)) if nice else None)
            procs.append(p)
            assert p.stdout is not None
            if p.stdout.readline().strip() != "ready":
                raise SystemExit(f"the {condition} neighbour did not start")
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def load_pairs(args: argparse.Namespace) -> list[Pair]:
    pairs = [Pair(name, BUILT[name](), args.threads, args.ort_spinning)
             for name in args.models]
    pairs += [Pair(Path(p).stem, onnx.load(p), args.threads, args.ort_spinning)
              for p in args.model]
    return pairs


def measure(pairs: list[Pair], conditions: list[str], args: argparse.Namespace
            ) -> dict[str, dict[str, dict[str, list[float]]]]:
    """{model: {condition: {"mini": [...], "ort": [...]}}} over every round."""
    out: dict[str, dict[str, dict[str, list[float]]]] = {
        p.name: {c: {"mini": [], "ort": []} for c in conditions} for p in pairs}
    for r in range(args.rounds):
        for cond in conditions if r % 2 == 0 else list(reversed(conditions)):
            if cond == "taskset1":
                child = _taskset_child(args)
                for name, t in child.items():
                    if name in out:
                        out[name][cond]["mini"] += t["mini"]
                        out[name][cond]["ort"] += t["ort"]
                continue
            with neighbours(cond):
                for p in pairs:
                    mini, ort = p.time(args.iterations, args.warmup)
                    out[p.name][cond]["mini"] += mini
                    out[p.name][cond]["ort"] += ort
            print(f"  round {r + 1}/{args.rounds}: {cond} done", file=sys.stderr, flush=True)
    return out


def _taskset_child(args: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    """The models measured in a child process pinned to one CPU (its own engines: the
    affinity of threads that already exist does not change)."""
    cpu = min(os.sched_getaffinity(0))
    cmd = [sys.executable, __file__, "--child", "--threads", str(args.threads or 2),
           "--iterations", str(args.iterations), "--warmup", str(args.warmup),
           "--models", *args.models]
    if args.pool_backoff:
        cmd += ["--pool-backoff", args.pool_backoff]
    if args.uncapped:
        cmd.append("--uncapped")
    for m in args.model:
        cmd += ["--model", m]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False,
                         preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    if res.returncode != 0:
        raise SystemExit(f"the taskset1 child failed:\n{res.stderr[-3000:]}")
    print("  taskset1 done", file=sys.stderr, flush=True)
    result: dict[str, dict[str, list[float]]] = json.loads(res.stdout)
    return result


def summarize(data: dict[str, dict[str, dict[str, list[float]]]]) -> list[dict[str, Any]]:
    rows = []
    for model, conds in data.items():
        quiet = None
        for cond, t in conds.items():
            if not t["mini"]:
                continue
            mini, ort = statistics.median(t["mini"]) * 1e3, statistics.median(t["ort"]) * 1e3
            ratio = mini / ort
            if cond == "quiet":
                quiet = ratio
            rows.append({"model": model, "condition": cond, "mini_ms": mini, "ort_ms": ort,
                         "ratio": ratio, "vs_quiet": ratio / quiet if quiet else None,
                         "runs": len(t["mini"])})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=list(BUILT), choices=list(BUILT))
    ap.add_argument("--model", action="append", default=[], help="an extra ONNX file")
    ap.add_argument("--conditions", nargs="*", default=list(CONDITIONS), choices=CONDITIONS)
    ap.add_argument("--threads", type=int, default=None,
                    help="threads for both engines (default: mini-infer's CPU budget)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=15, help="runs per round and condition")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--ort-spinning", action="store_true")
    ap.add_argument("--uncapped", action="store_true",
                    help="give the pools --threads through threadpoolctl, past the CPU budget "
                         "(as before the budget existed): what the cap gives, in taskset1")
    ap.add_argument("--pool-backoff", choices=("on", "off", "short", "legacy"), default=None,
                    help="the compiled pool's contention watch (default: on): off to measure "
                         "what it gives, short for a contended time throughout")
    ap.add_argument("--json", default=None, help="write the rows as JSON to this file")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    import mini_infer_core as mi
    from mini_infer_core.threads import set_num_threads, thread_choice

    if args.threads and args.uncapped:
        from mini_infer_cpu_native import _native  # noqa: F401 - registers the pool
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.threads)
    elif args.threads:
        set_num_threads(args.threads)
    if args.pool_backoff:
        from mini_infer_cpu_native import _native

        _native.set_pool_adaptive(args.pool_backoff)
    pairs = load_pairs(args)
    if args.child:  # taskset1: one quiet pass, pinned by the parent
        json.dump({p.name: dict(zip(("mini", "ort"), p.time(args.iterations, args.warmup),
                                    strict=True)) for p in pairs}, sys.stdout)
        return 0
    conditions = ["quiet"] + [c for c in args.conditions if c != "quiet"]
    threads, why = thread_choice()
    print(f"mini-infer {mi.__version__}: threads: {threads} ({why}); {len(pairs)} model(s), "
          f"conditions {', '.join(conditions)}, {args.rounds} round(s) x {args.iterations} "
          "runs", flush=True)
    rows = summarize(measure(pairs, conditions, args))
    print(f"{'model':<26} {'condition':<9} {'mini ms':>9} {'ort ms':>9} {'mini/ort':>9} "
          f"{'/quiet':>7}")
    for r in rows:
        vs = f"{r['vs_quiet']:.2f}" if r["vs_quiet"] is not None else "-"
        print(f"{r['model']:<26} {r['condition']:<9} {r['mini_ms']:>9.2f} {r['ort_ms']:>9.2f} "
              f"{r['ratio']:>9.2f} {vs:>7}")
    worst = max((r["vs_quiet"] for r in rows if r["vs_quiet"] is not None), default=None)
    if worst is not None:
        print(f"worst contended ratio / quiet ratio: {worst:.2f} (goal: <= 1.2)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
