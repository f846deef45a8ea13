"""Latency of mini-infer on onnx's nine "light" CNNs, against onnxruntime and onnx's
ReferenceEvaluator, all in one process on the same inputs.

Models: ``light_<name>.onnx`` from onnx's backend test data (AlexNet, DenseNet-121,
Inception v1/v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512; batch 1, 3x224x224).
Their constant weights are replaced by random, well-scaled ones
(``mini_infer_core.testing.light_models.randomize_weights``) and the final softmax is
removed (``logits_model``), so that the outputs compared are informative logits. The input
is the one onnx's backend runner uses (``default_inputs``: ``arange(n) / n``).

Method, per model:

1. build the three sessions from the same ``onnx.ModelProto``: mini-infer
   (``mini_infer_core.InferenceSession(model, device="cpu")``), onnxruntime
   (``CPUExecutionProvider``, default thread pool and graph optimizations, but idle
   threads do not spin, see ``--ort-spinning``) and
   ``onnx.reference.ReferenceEvaluator`` (whose NumPy BLAS does not spin either:
   ``OPENBLAS_THREAD_TIMEOUT=4``, see ``--blas-spinning``); mini-infer's build time is
   reported too;
2. warm up mini-infer and onnxruntime (``--warmup`` runs each, default 2);
3. time ``--repeat`` rounds (default 20) with ``time.perf_counter`` around ``run``; each
   round runs every engine once, the order rotating from round to round, so that slow
   drifts of the machine (frequency, other processes) hit the engines alike. An engine
   whose timed runs add up to more than ``--max-seconds`` (default 30) stops repeating
   (after at least 3 runs). ReferenceEvaluator, very slow, runs only ``--ref-repeat``
   times (default 3, spread over the rounds, no warm-up: it has nothing to warm up) and
   within ``--ref-budget`` seconds per model (default 20): a run that would go past the
   budget is not started, and one interrupted by it (where ``signal.setitimer`` exists)
   leaves the model's reference column as "skipped (budget)";
4. report the median latency of each engine, mini/ort and ref/mini, and the relative L2
   error ``||mini - ort|| / ||ort||`` of the logits (the JSON adds each run's time, the
   minimum, and ref vs ort).

The table ends with the geometric mean of mini/ort over the models both engines ran.
ReferenceEvaluator is there for timing only: its BatchNormalization-9 fills in the default
``momentum`` and then mixes the batch statistics into the running ones, so on the models
with BatchNormalization its logits differ from onnxruntime's (rel L2 ~0.5; ~1e-4 elsewhere).
The latencies are only as steady as the machine: on a shared one, compare the minima (in
the JSON) too.

Options: ``--models NAME ...`` (default: all nine), ``--repeat N``, ``--warmup N``,
``--max-seconds S``, ``--ref-repeat N``, ``--ref-budget S``, ``--skip-reference``,
``--ort-spinning``, ``--blas-spinning``, ``--seed N`` (weights), ``--json FILE`` (write the
results as JSON; ``-`` for stdout, instead of the table).

    python benchmarks/light_models.py
    python benchmarks/light_models.py --models resnet50 squeezenet --repeat 50 --skip-reference
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import signal
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, cast

# Idle OpenBLAS workers spin for ~0.1 s after each call (ReferenceEvaluator's products, the
# GEMM-rate probe): the engine timed next would share the cores with them (SqueezeNet 6.3 ->
# 7.7 ms right after a BLAS call; 9.7 instead of 6.8 ms over a whole run). As onnxruntime's
# spinning is turned off, so is OpenBLAS's, which reads this when NumPy loads it.
if "--blas-spinning" not in sys.argv:
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import numpy as np  # noqa: E402 - after the OpenBLAS setting

Runner = Callable[[], list[Any]]


class _BudgetExceeded(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Interrupt the enclosed code with _BudgetExceeded after ``seconds`` (Unix only)."""
    if seconds <= 0 or not hasattr(signal, "setitimer"):
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise _BudgetExceeded

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:
            signal.signal(signal.SIGALRM, previous)


def _timed(run: Runner) -> tuple[float, list[Any]]:
    start = time.perf_counter()
    outputs = run()
    return time.perf_counter() - start, outputs


def _rel_l2(a: np.ndarray, b: np.ndarray) -> float:
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a64.shape != b64.shape:
        return math.inf
    norm = float(np.linalg.norm(b64))
    return float(np.linalg.norm(a64 - b64)) / (norm if norm > 0 else 1.0)


def _short_error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return text if len(text) <= 100 else text[:97] + "..."


def bench_model(name: str, args: argparse.Namespace) -> dict[str, Any]:
    import onnxruntime
    from onnx.reference import ReferenceEvaluator

    import mini_infer_core
    from mini_infer_core.testing.light_models import (
        default_inputs,
        load_light_model,
        logits_model,
        randomize_weights,
    )

    result: dict[str, Any] = {"model": name}
    start = time.perf_counter()
    model = logits_model(randomize_weights(load_light_model(name), seed=args.seed))
    result["prepare_s"] = time.perf_counter() - start
    feeds = default_inputs(model)

    runners: dict[str, Runner] = {}
    times: dict[str, list[float]] = {"mini": [], "ort": [], "ref": []}
    outputs: dict[str, np.ndarray] = {}
    errors: dict[str, str] = {}

    try:
        start = time.perf_counter()
        mini = mini_infer_core.InferenceSession(model, device="cpu")
        result["mini_build_s"] = time.perf_counter() - start
        result["gflop"] = model_gflop(mini.engine)
        runners["mini"] = lambda: mini.run(None, feeds)
    except Exception as exc:  # reported in the table
        errors["mini"] = _short_error(exc)

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # no warnings about the unused initializers
    if not args.ort_spinning:
        # Idle intra-op threads would otherwise spin after each run, stealing the cores
        # from the engine timed next (mini-infer measured ~40% slower right after it).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        ort = onnxruntime.InferenceSession(
            model.SerializeToString(), sess_options=options, providers=["CPUExecutionProvider"]
        )
        runners["ort"] = lambda: ort.run(None, feeds)
    except Exception as exc:  # reported in the table
        errors["ort"] = _short_error(exc)

    ref_rounds: set[int] = set()
    if not args.skip_reference and args.ref_repeat > 0:
        try:
            reference = ReferenceEvaluator(model)
            runners["ref"] = lambda: cast(list[Any], reference.run(None, feeds))
        except Exception as exc:  # reported in the table
            errors["ref"] = _short_error(exc)
        count = min(args.ref_repeat, args.repeat)
        ref_rounds = {round(i * args.repeat / count) for i in range(count)}

    for engine in ("mini", "ort"):
        if engine not in runners:
            continue
        try:
            for _ in range(args.warmup):
                _, outs = _timed(runners[engine])
                outputs[engine] = np.asarray(outs[0])
        except Exception as exc:  # reported in the table
            errors[engine] = _short_error(exc)
            del runners[engine]

    ref_spent, ref_status = 0.0, "skipped" if "ref" not in runners else "ok"
    for round_index in range(args.repeat):
        engines = ["mini", "ort"]
        if round_index in ref_rounds and ref_status == "ok":
            engines.append("ref")
        shift = round_index % len(engines)
        for engine in engines[shift:] + engines[:shift]:
            if engine not in runners:
                continue
            if engine == "ref":
                last = times["ref"][-1] if times["ref"] else 0.0
                if ref_spent + last > args.ref_budget:
                    ref_status = "budget"
                    continue
                try:
                    with _deadline(args.ref_budget - ref_spent):
                        elapsed, outs = _timed(runners["ref"])
                except _BudgetExceeded:
                    ref_status = "budget"
                    continue
                except Exception as exc:  # reported in the table
                    errors["ref"] = _short_error(exc)
                    del runners["ref"]
                    continue
                ref_spent += elapsed
            else:
                spent = sum(times[engine])
                if len(times[engine]) >= 3 and spent > args.max_seconds:
                    continue
                try:
                    elapsed, outs = _timed(runners[engine])
                except Exception as exc:  # reported in the table
                    errors[engine] = _short_error(exc)
                    del runners[engine]
                    continue
            times[engine].append(elapsed)
            outputs[engine] = np.asarray(outs[0])

    for engine in ("mini", "ort", "ref"):
        runs = times[engine]
        result[f"{engine}_ms"] = statistics.median(runs) * 1e3 if runs else None
        result[f"{engine}_min_ms"] = min(runs) * 1e3 if runs else None
        result[f"{engine}_runs"] = len(runs)
        result[f"{engine}_times_ms"] = [t * 1e3 for t in runs]
        if engine in errors and engine != "ref":
            result[f"{engine}_error"] = errors[engine]
    if "ref" in errors:
        result["ref_error"] = "error"
        result["ref_error_detail"] = errors["ref"]
    elif ref_status == "budget" and not times["ref"]:
        result["ref_error"] = "skipped (budget)"
    elif ref_status == "budget":
        result["ref_note"] = f"budget: {len(times['ref'])} run(s)"
    mini_ms, ort_ms, ref_ms = result["mini_ms"], result["ort_ms"], result["ref_ms"]
    result["mini_over_ort"] = mini_ms / ort_ms if mini_ms and ort_ms else None
    result["ref_over_mini"] = ref_ms / mini_ms if ref_ms and mini_ms else None
    result["rel_l2_mini_vs_ort"] = (
        _rel_l2(outputs["mini"], outputs["ort"]) if "mini" in outputs and "ort" in outputs else None
    )
    result["rel_l2_ref_vs_ort"] = (
        _rel_l2(outputs["ref"], outputs["ort"]) if "ref" in outputs and "ort" in outputs else None
    )
    if "ort" in outputs:
        result["logits_std"] = float(np.std(outputs["ort"]))
    return result


def model_gflop(engine: Any) -> float:
    """Multiply-adds of Conv, Gemm and MatMul nodes, x2, from the engine's static shapes."""
    total = 0
    for node in engine.nodes:
        if node.op_type not in ("Conv", "Gemm", "MatMul"):
            continue
        out = [int(d) for d in engine.tensors[node.outputs[0]].shape]
        w = engine.tensors[node.inputs[1]].shape
        if node.op_type == "Conv":
            total += int(np.prod(out)) * int(np.prod([int(d) for d in w[1:]]))
        else:
            a = [int(d) for d in engine.tensors[node.inputs[0]].shape]
            k = a[0] if node.plugin.attrs.get("transA") else a[-1]
            total += int(np.prod(out)) * k
    return 2 * total / 1e9


def matmul_gflops(n: int = 1024, repeat: int = 10) -> float:
    """The machine's own float32 GEMM rate through NumPy's BLAS: the physical ceiling."""
    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    c = np.empty_like(a)
    np.matmul(a, a, out=c)
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        np.matmul(a, a, out=c)
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best / 1e9


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_table(results: list[dict[str, Any]], rate: float | None = None,
                file: Any = sys.stdout) -> None:
    """The table; ``rate``: the machine's GEMM rate, for the "% GEMM" column."""
    header = ("model", "mini ms", "ort ms", "ref ms", "mini/ort", "ref/mini", "rel L2",
              "build s", "GFLOP/s", "% GEMM")
    rows = []
    for r in results:
        gflops = r["gflop"] / r["mini_ms"] * 1e3 if r.get("gflop") and r["mini_ms"] else None
        if r["ref_ms"] is not None:
            ref = _fmt(r["ref_ms"], ".1f")
        else:
            ref = r.get("ref_error", "skipped")
        rows.append((
            r["model"],
            "error" if "mini_error" in r else _fmt(r["mini_ms"], ".2f"),
            "error" if "ort_error" in r else _fmt(r["ort_ms"], ".2f"),
            ref,
            _fmt(r["mini_over_ort"], ".2f"),
            _fmt(r["ref_over_mini"], ".1f"),
            _fmt(r["rel_l2_mini_vs_ort"], ".1e"),
            _fmt(r.get("mini_build_s"), ".2f"),
            _fmt(gflops, ".0f"),
            _fmt(100 * gflops / rate if gflops and rate else None, ".0f"),
        ))
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows, strict=True)]
    line = "  ".join(f"{h:<{w}}" if i == 0 else f"{h:>{w}}" for i, (h, w) in
                     enumerate(zip(header, widths, strict=True)))
    print(line, file=file)
    print("-" * len(line), file=file)
    for row in rows:
        print("  ".join(f"{x:<{w}}" if i == 0 else f"{x:>{w}}" for i, (x, w) in
                        enumerate(zip(row, widths, strict=True))), file=file)
    ratios = [r["mini_over_ort"] for r in results if r["mini_over_ort"]]
    if ratios:
        geomean = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        print(f"\ngeometric mean of mini/ort over {len(ratios)} model(s): {geomean:.2f}",
              file=file)
    for r in results:
        for engine in ("mini", "ort"):
            if f"{engine}_error" in r:
                print(f"{r['model']}: {engine} failed: {r[f'{engine}_error']}", file=file)
        if "ref_error_detail" in r:
            print(f"{r['model']}: ref failed: {r['ref_error_detail']}", file=file)
        if "ref_note" in r:
            print(f"{r['model']}: ref {r['ref_note']}", file=file)


def main(argv: list[str] | None = None) -> int:
    from mini_infer_core.cli._parser import flags
    from mini_infer_core.testing.light_models import LIGHT_MODELS

    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--models", nargs="+", metavar="NAME", choices=LIGHT_MODELS,
                        default=list(LIGHT_MODELS), help="models to run (default: all)")
    parser.add_argument("--repeat", type=int, default=20,
                        help="timed rounds per model (default 20)")
    parser.add_argument("--warmup", type=int, default=2,
                        help="untimed runs of mini-infer and onnxruntime first, at least 1 "
                             "(default 2)")
    parser.add_argument("--max-seconds", type=float, default=30.0,
                        help="stop timing an engine once its runs add up to this, per "
                             "model (default 30)")
    parser.add_argument("--ref-repeat", type=int, default=3,
                        help="timed ReferenceEvaluator runs per model (default 3)")
    parser.add_argument("--ref-budget", type=float, default=20.0,
                        help="seconds of ReferenceEvaluator per model (default 20)")
    flags(parser, skip_reference="do not run onnx's ReferenceEvaluator",
          ort_spinning="let onnxruntime's idle threads spin (its default; off here because "
          "it slows the engine timed after it)",
          blas_spinning="let OpenBLAS's idle threads spin (its default; off here because it "
          "slows the engine timed after ReferenceEvaluator)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    parser.add_argument("--json", metavar="FILE",
                        help="write the results as JSON to FILE ('-': stdout)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    args.warmup = max(args.warmup, 1)  # the warm-up also fetches the logits to compare

    rate = matmul_gflops()
    from mini_infer_core.threads import blas_info

    blas = ", ".join(f"{b['internal_api']} {b['version']} x{b['num_threads']}"
                     for b in blas_info())
    print(f"machine float32 GEMM rate (NumPy BLAS: {blas}): {rate:.0f} GFLOP/s",
          file=sys.stderr, flush=True)
    results = []
    for name in args.models:
        print(f"[{name}] ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        result = bench_model(name, args)
        result["total_s"] = time.perf_counter() - start
        results.append(result)
        print(f"[{name}] mini {_fmt(result['mini_ms'], '.2f')} ms, ort "
              f"{_fmt(result['ort_ms'], '.2f')} ms, ref {_fmt(result['ref_ms'], '.1f')} ms "
              f"({result['total_s']:.0f} s)", file=sys.stderr, flush=True)
        gc.collect()

    if args.json == "-":
        json.dump(results, sys.stdout, indent=2)
        print()
    else:
        print_table(results, rate)
        print(f"machine float32 GEMM rate: {rate:.0f} GFLOP/s (GFLOP/s column: mini-infer's "
              "conv/gemm rate on that model; % GEMM: that rate over the machine's)")
        pools = ", ".join(f"{b['internal_api']} {b['version']} x{b['num_threads']}"
                          for b in blas_info())
        print(f"thread pools loaded: {pools}")
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
