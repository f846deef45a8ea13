"""Quantized models: mini-infer against onnxruntime (and OpenVINO), issue 25's corpus.

The corpus lives in a cache (``--cache DIR``, else ``$MINI_INFER_QUANT``, else
``~/.cache/mini-infer/quantized``), made by onnxruntime's and NNCF's own tools from float
models with random weights: ``NAME.SCHEME.onnx`` with ``NAME.SCHEME.json`` beside it (the tool
and its settings, the float model it came from under ``float/``, the benchmark's inputs and how
to fill them). Schemes: ``dynamic`` (``quantize_dynamic``: DynamicQuantizeLinear and
MatMulInteger on transformers), ``qdq`` (``quantize_static``, QDQ format: u8 activations, s8
per-channel weights, on CNNs), ``qop`` (QOperator format: QLinearConv...), ``nncf``
(``nncf.quantize``: symmetric s8) and ``nbits4`` (``MatMulNBitsQuantizer``: 4-bit weights on
decoders).

Per model and thread count (``--threads``, default ``1 2``), in one process on the same seeded
inputs (the harness of ``benchmarks/zoo.py``: warm-up runs, then alternating blocks after
pauses, the median of the block medians):

- ``mini`` mini-infer on the quantized model, ``ort`` onnxruntime (``ORT_ENABLE_ALL``),
  ``ov`` OpenVINO on the same file where it is installed (``pip install openvino``; it is an
  anchor, not a dependency), and ``f32`` mini-infer on the float model it was quantized from;
- correctness: the largest relative L2 error of mini-infer's outputs against onnxruntime's,
  held to ``max(2e-3, 3 x spread)`` where ``spread`` is onnxruntime's own difference between
  ``ORT_ENABLE_ALL`` and ``ORT_DISABLE_ALL`` on the same inputs (issue 25's bound).

Columns: mini/ort (the target: geometric mean <= 0.9, none above 1.5), ov/ort, f32/mini (our
float32 over our int8: the target is >= 1.7 in geometric mean), error, bound, pass.

    .venv/bin/python benchmarks/quantized.py                    # every model, 1 and 2 threads
    .venv/bin/python benchmarks/quantized.py --models '*.qdq' --threads 2 --quick
    .venv/bin/python benchmarks/quantized.py --list
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

# as zoo.py does: OpenBLAS's idle workers must not spin into the engine timed next
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402 - after the OpenBLAS setting
import zoo  # noqa: E402 - the zoo's harness

from mini_infer_core.testing.bench import openvino_runner  # noqa: E402

SCHEMES = ("dynamic", "qdq", "qop", "nncf", "nbits4")


def default_cache() -> Path:
    env = os.environ.get("MINI_INFER_QUANT")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "mini-infer" / "quantized"


def _outputs(names: list[str], values: Any) -> dict[str, Any]:
    return dict(zip(names, values, strict=True))


def bench_model(name: str, path: Path, meta: dict[str, Any], args: argparse.Namespace
                ) -> dict[str, Any]:
    from mini_infer_core.threads import set_num_threads

    feeds = zoo.make_feeds(list(meta["inputs"]), args.seed)
    result: dict[str, Any] = {"model": name, "scheme": meta.get("scheme", "?"),
                              "family": meta.get("family", "?"), "tool": meta.get("tool", "?"),
                              "per_threads": {}}
    float_path = path.parent / meta["float_source"] if meta.get("float_source") else None
    try:
        start = time.perf_counter()
        engine, fixed = zoo.build_mini(path, feeds)
        result["build_s"], result["fixed"] = time.perf_counter() - start, fixed
    except Exception as exc:  # noqa: BLE001 - a row that says why
        result["mini_error"] = zoo._short_error(exc)
        engine = None
    f32 = None
    if float_path is not None and float_path.exists() and not args.no_float:
        try:
            f32 = zoo.build_mini(float_path, feeds)[0]
        except Exception as exc:  # noqa: BLE001
            result["f32_error"] = zoo._short_error(exc)
    for threads in args.threads:
        set_num_threads(threads)
        row: dict[str, Any] = {}
        ort = zoo._ort_session(path, threads)
        names = [o.name for o in ort.get_outputs()]
        runners: dict[str, zoo.Runner] = {"ort": lambda s=ort, n=names: _outputs(
            n, s.run(None, feeds))}
        ctx = engine.create_execution_context() if engine is not None else None
        if ctx is not None:
            runners["mini"] = lambda c=ctx: c.execute(feeds)
        f32_ctx = f32.create_execution_context() if f32 is not None else None
        if f32_ctx is not None:
            runners["f32"] = lambda c=f32_ctx: c.execute(feeds)
        try:
            ov = openvino_runner(path, threads, "f32") if not args.no_openvino else None
        except Exception as exc:  # noqa: BLE001
            row["ov_error"] = zoo._short_error(exc)
            ov = None
        if ov is not None:
            runners["ov"] = lambda r=ov: r(feeds)
        expected = runners["ort"]()
        if ctx is not None:
            try:
                got = {}
                for _ in range(args.warmup):
                    got = runners["mini"]()
                errs = [zoo.rel_l2(got[n], expected[n]) for n in names if n in got]
                spread = zoo._ort_spread(path, feeds, expected)
                row["err"] = max(errs) if errs else math.inf
                row["spread"] = spread
                row["bound"] = max(2e-3, 3 * spread)
                row["pass"] = row["err"] <= row["bound"]
            except Exception as exc:  # noqa: BLE001
                row["mini_error"] = zoo._short_error(exc)
                runners.pop("mini")
        times = zoo._time_blocks(runners, args)
        for key in runners:
            row[f"{key}_ms"] = float(np.median(times[f"{key}_block_medians"])) * 1e3
        if "mini_ms" in row:
            row["ratio"] = row["mini_ms"] / row["ort_ms"]
            if "f32_ms" in row:
                row["f32_speedup"] = row["f32_ms"] / row["mini_ms"]
        if "ov_ms" in row:
            row["ov_ratio"] = row["ov_ms"] / row["ort_ms"]
        for c in (ctx, f32_ctx):
            if c is not None:
                c.close()
        result["per_threads"][threads] = row
    return result


def _geomean(values: list[float]) -> float | None:
    vals = [v for v in values if v and v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, vals)) / len(vals)) if vals else None


def print_tables(results: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    f = zoo._fmt
    summary: dict[str, Any] = {}
    for threads in args.threads:
        print(f"\n== {threads} thread(s): ms (median of block medians); mini/ort <= 0.9 "
              "geomean, <= 1.5 each; f32/mini >= 1.7 geomean")
        print(f"{'model':<30} {'mini':>8} {'ort':>8} {'ov':>8} {'f32':>8} {'mini/ort':>8} "
              f"{'ov/ort':>7} {'f32/mini':>8} {'err':>9} {'bound':>8}  result")
        ratios, speedups, ov_ratios = [], [], []
        for r in results:
            row = r["per_threads"].get(threads, {})
            error = r.get("mini_error") or row.get("mini_error")
            verdict = ("ERROR " + error) if error else ("pass" if row.get("pass") else "FAIL")
            print(f"{r['model']:<30} {f(row.get('mini_ms'), '8.2f')} "
                  f"{f(row.get('ort_ms'), '8.2f')} {f(row.get('ov_ms'), '8.2f')} "
                  f"{f(row.get('f32_ms'), '8.2f')} {f(row.get('ratio'), '8.2f')} "
                  f"{f(row.get('ov_ratio'), '7.2f')} {f(row.get('f32_speedup'), '8.2f')} "
                  f"{f(row.get('err'), '9.2e')} {f(row.get('bound'), '8.1e')}  {verdict}")
            ratios.append(row.get("ratio"))
            speedups.append(row.get("f32_speedup"))
            ov_ratios.append(row.get("ov_ratio"))
        done = [(r["model"], r["per_threads"].get(threads, {}).get("ratio")) for r in results]
        worst = max(((m, v) for m, v in done if v), key=lambda t: t[1], default=(None, None))
        s = {"geomean_mini_ort": _geomean([v for v in ratios if v]),
             "geomean_f32_over_int8": _geomean([v for v in speedups if v]),
             "geomean_ov_ort": _geomean([v for v in ov_ratios if v]),
             "worst": worst, "measured": sum(1 for v in ratios if v), "models": len(results)}
        summary[str(threads)] = s
        print(f"geomean mini/ort {f(s['geomean_mini_ort'], '.2f')} over {s['measured']} of "
              f"{s['models']} models (worst {worst[0]} {f(worst[1], '.2f')}); ov/ort "
              f"{f(s['geomean_ov_ort'], '.2f')}; our f32/int8 "
              f"{f(s['geomean_f32_over_int8'], '.2f')}")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    zoo.add_corpus_arguments(parser, "the corpus (default: $MINI_INFER_QUANT or "
                             "~/.cache/mini-infer/quantized)", "NAME.SCHEME")
    parser.add_argument("--no-float", action="store_true", help="leave out our float32 column")
    parser.add_argument("--no-openvino", action="store_true", help="leave out OpenVINO")
    args = zoo.parse_corpus_arguments(parser, argv)
    cache = (args.cache or default_cache()).expanduser()
    models = [(n, p, m) for n, p, m in zoo.list_models(cache, args.models)
              if m.get("scheme") in SCHEMES]
    if args.list or not models:
        for name, path, meta in models:
            print(f"{name:<32} {meta.get('scheme'):<8} {meta.get('tool', '?'):<40} "
                  f"{path.stat().st_size / 1e6:7.1f} MB")
        print(f"{len(models)} model(s) in {cache}", file=sys.stderr)
        return 0 if models else 1
    results = []
    for i, (name, path, meta) in enumerate(models, 1):
        print(f"[{i}/{len(models)}] {name} ...", file=sys.stderr, flush=True)
        try:
            result = bench_model(name, path, meta, args)
        except Exception as exc:  # noqa: BLE001 - the harness goes on
            result = {"model": name, "mini_error": "harness: " + zoo._short_error(exc),
                      "per_threads": {}}
        results.append(result)
        for t, row in result["per_threads"].items():
            print(f"    {t}t: mini {zoo._fmt(row.get('mini_ms'), '.2f')} ort "
                  f"{zoo._fmt(row.get('ort_ms'), '.2f')} x{zoo._fmt(row.get('ratio'), '.2f')}",
                  file=sys.stderr, flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps({"partial": True, "results": results},
                                                  indent=1, default=str))
    summary = print_tables(results, args)
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "results": results},
                                              indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
