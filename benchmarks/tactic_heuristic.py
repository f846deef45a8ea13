"""Steady-state latency of engines built with and without tactic timing (issue 30).

``InferenceSession`` on an ``.onnx`` without a config builds for a one-off session: the
plugins' own (heuristic) tactic choice and the format cost model, no timing runs
(``BuilderConfig(time_tactics=False)``). This script checks what that costs after start-up:
each model is built both ways in one process, then the two engines run interleaved on the same
inputs (``--runs`` rounds of one run each, after warm-up); the median of each and their ratio
are printed, with the build times.

    python benchmarks/tactic_heuristic.py [--runs 30] [--model NAME ...]

The development machine is shared: read the ratios, not the times.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

import mini_infer_core as mi


def _models() -> dict[str, tuple[Any, dict[str, np.ndarray]]]:
    from pathlib import Path

    import onnx

    from mini_infer_core.testing.light_models import (
        default_inputs,
        load_light_model,
        strip_initializer_inputs,
    )

    rng = np.random.default_rng(0)
    data = Path(__file__).resolve().parents[1] / "tests" / "data" / "models"
    out: dict[str, tuple[Any, dict[str, np.ndarray]]] = {
        "torch_smallcnn": (onnx.load(str(data / "torch_smallcnn.onnx")),
                           {"x": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)}),
    }
    for name in ("squeezenet", "shufflenet", "inception_v1", "resnet50", "densenet121",
                 "vgg19"):
        m = strip_initializer_inputs(load_light_model(name))
        out[f"light_{name}"] = (m, default_inputs(m))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--model", action="append", help="only these models (repeatable)")
    args = parser.parse_args()
    models = _models()
    if args.model:
        models = {k: v for k, v in models.items() if k in args.model}
    print(f"{'model':20s} {'build timed':>11s} {'heuristic':>9s}   {'timed':>8s} "
          f"{'heuristic':>9s} {'ratio':>6s}")
    ratios = []
    for name, (model, feeds) in models.items():
        shapes = {k: v.shape for k, v in feeds.items()}
        engines, builds = {}, {}
        for timed in (True, False):
            t0 = time.perf_counter()
            engines[timed] = mi.build_engine(mi.parse_onnx(model), mi.BuilderConfig(
                device="cpu", input_shapes=shapes, time_tactics=timed))
            builds[timed] = time.perf_counter() - t0
        ctxs = {k: e.create_execution_context() for k, e in engines.items()}
        times: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(3):
            for ctx in ctxs.values():
                ctx.execute(feeds)
        for _ in range(args.runs):
            for k, ctx in ctxs.items():
                t0 = time.perf_counter()
                ctx.execute(feeds)
                times[k].append(time.perf_counter() - t0)
        a, b = (statistics.median(times[k]) * 1e3 for k in (True, False))
        ratios.append(b / a)
        print(f"{name:20s} {builds[True]:9.2f} s {builds[False]:7.2f} s   {a:6.2f} ms "
              f"{b:7.2f} ms {b / a:6.3f}", flush=True)
        for ctx in ctxs.values():
            ctx.close()
    geo = float(np.exp(np.mean(np.log(ratios))))
    print(f"{'geometric mean':20s} {'':11s} {'':9s}   {'':8s} {'':9s} {geo:6.3f}")


if __name__ == "__main__":
    main()
