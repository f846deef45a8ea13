"""scikit-learn pipelines converted with skl2onnx (``plugin_packages/ml_basic/tests/
row_pipelines.py``: trees and forests with and without ZipMap, boosting, SVMs, linear and
text models, k-NN, naive Bayes, PCA, k-means, scalers, imputers, one-hot encoders,
normalizers), scored one row per call and 200 rows per call, by mini-infer and by onnxruntime
in one process on the same inputs, one thread.

    python benchmarks/sklearn_pipelines.py [--sizes 1 200] [--repeat 30] [--pipelines NAME ...]
                                           [--threads 1] [--profile] [--loop]

Per pipeline and batch size: the best time per call of each engine (microseconds; the two
are timed interleaved, a sample of each in turn, and the minimum over ``--repeat`` samples
kept, the least disturbed on a shared machine), ours/ort, and whether the outputs agree:
labels (and every integer or string output) identical, scores (ZipMap's dicts key by key)
within 1e-5 (relative to the value where it is above 1); a regressor's scores further than
that are also set against scikit-learn's own float64 prediction, both engines' distances
printed (SVR: onnxruntime's float32 sums are the further from it). Then the geometric
mean of ours/ort per batch size and the pipelines above 2x. ``--profile`` adds, per
pipeline, where one row's time goes in mini-infer: each node's microseconds
(``ExecutionContext.time_nodes``).
``--loop`` adds, timed in the same interleaving, mini-infer with ``MINI_INFER_DIRECT_RUN=0``
(each plan's steps run by the context's loop, not by its generated function: the run path
before the small-model path, ``engine/_direct.py``) and its geometric mean.

Needs scikit-learn, skl2onnx and pandas (the test extras) and mini-infer-ml-plugins; every
model is trained and converted here, nothing is downloaded.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

import mini_infer_core as mi
from mini_infer_core.testing.bench import interleaved, ort_session, session_with_env
from mini_infer_core.threads import set_num_threads

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugin_packages" / "ml_basic"
                       / "tests"))
from row_pipelines import RowPipeline, pipeline, pipeline_names  # noqa: E402

#: the largest score difference accepted (relative above 1)
TOLERANCE = 1e-5


def compare(ours: Sequence[Any], theirs: Sequence[Any]) -> tuple[bool, float]:
    """(labels and other exact outputs identical, largest score difference: absolute, or
    relative where the score is above 1)."""
    same, diff = len(ours) == len(theirs), 0.0

    def worse(a: Any, b: Any) -> float:
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        if a.shape != b.shape:
            return math.inf
        return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b)))) if b.size else 0.0

    for a, b in zip(ours, theirs, strict=False):
        if isinstance(b, list):  # ZipMap: one dict per row
            if not isinstance(a, list) or [list(r) for r in a] != [list(r) for r in b]:
                same = False
                continue
            if b:
                diff = max(diff, worse([list(r.values()) for r in a],
                                       [list(r.values()) for r in b]))
            continue
        a, b = np.asarray(a), np.asarray(b)
        if b.dtype.kind in "OUSbiu":
            same &= a.shape == b.shape and a.tolist() == b.tolist()
        else:
            diff = max(diff, worse(a, b))
    return same, diff


def nearer_truth(case: RowPipeline, n: int, ours: Sequence[Any], theirs: Sequence[Any]
                 ) -> tuple[float, float] | None:
    """For a regressor whose scores differ from onnxruntime's by more than the tolerance:
    (ours, onnxruntime's) largest difference from scikit-learn's own float64 prediction (the
    arbiter of which float32 sum departs), else None."""
    est = case.estimator
    if hasattr(est, "predict_proba") or not hasattr(est, "predict") or len(theirs) != 1:
        return None
    truth = np.asarray(est.predict(case.sklearn_input(n)), np.float64).reshape(-1)

    def off(a: Any) -> float:
        a = np.asarray(a, np.float64).reshape(-1)
        return float(np.max(np.abs(a - truth) / np.maximum(1.0, np.abs(truth))))

    return off(ours[0]), off(theirs[0])


def profile(case: RowPipeline, rows: int) -> list[str]:
    """Each node's microseconds for ``rows`` rows (the median of 20 timed runs)."""
    engine = mi.load(case.model)
    feeds = case.feeds(rows)
    with engine.create_execution_context() as ctx:
        runs = [ctx.time_nodes(feeds) for _ in range(21)][1:]
    took = np.median(np.array(runs), axis=0) * 1e6
    lines = [f"  profile of {case.name!r}, {rows} row(s): {took.sum():.1f} us in its nodes"]
    for node, us in sorted(zip(engine.nodes, took, strict=True), key=lambda p: -p[1]):
        lines.append(f"    {us:8.1f} us  {node.describe()}")
    return lines


def loop_session(model: Any, feeds: dict[str, Any]) -> Any:
    """A session whose plans run by the context's loop (``MINI_INFER_DIRECT_RUN=0``, read
    when its context is made: at its first run, here)."""
    return session_with_env(model, feeds, {"MINI_INFER_DIRECT_RUN": "0"})


def geomean(values: Sequence[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else math.nan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 200])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--pipelines", nargs="*", default=None,
                        help=f"of: {' '.join(pipeline_names())}")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--loop", action="store_true",
                        help="also time mini-infer without the generated runs of its plans")
    args = parser.parse_args()
    set_num_threads(args.threads)
    loop = " | loop µs | ×" if args.loop else ""
    head = " | ".join(f"{n} row{'s' * (n != 1)}: mini / ort µs | ×{loop}" for n in args.sizes)
    print(f"| pipeline | {head} | outputs |")
    print("|---|" + ("---:|---:|" + "---:|---:|" * args.loop) * len(args.sizes) + "---|")
    ratios: dict[int, list[float]] = {n: [] for n in args.sizes}
    looped: dict[int, list[float]] = {n: [] for n in args.sizes}
    over: list[str] = []
    notes: list[str] = []
    for name in args.pipelines or pipeline_names():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            case = pipeline(name)
        ours, theirs = mi.InferenceSession(case.model), ort_session(case.model, args.threads)
        slow = loop_session(case.model, case.feeds(1)) if args.loop else None
        cells, same, diff, truth = [], True, 0.0, None
        for n in args.sizes:
            feeds = case.feeds(n)
            got, want = ours.run(None, feeds), theirs.run(None, feeds)
            s, d = compare(got, want)
            same, diff = same and s, max(diff, d)
            if d > TOLERANCE:
                truth = nearer_truth(case, n, got, want) or truth
            calls = [partial(ours.run, None, feeds), partial(theirs.run, None, feeds)]
            if slow is not None:
                calls.append(partial(slow.run, None, feeds))
            mine, ort, *rest = interleaved(calls, args.repeat)
            ratios[n].append(mine / ort)
            if mine / ort > 2:
                over.append(f"{case.name} ({n} row{'s' * (n != 1)}: {mine / ort:.1f}x)")
            cells.append(f"{mine * 1e6:,.1f} / {ort * 1e6:,.1f} | {mine / ort:.2f}")
            for t in rest:
                looped[n].append(t / ort)
                cells.append(f"{t * 1e6:,.1f} | {t / ort:.2f}")
        verdict = "same" if same and diff <= TOLERANCE else \
            f"{'labels same' if same else 'LABELS DIFFER'}, scores {diff:.1e}"
        if truth is not None:  # which engine's float32 sums depart from scikit-learn's
            verdict += (f" (from scikit-learn's float64: ours {truth[0]:.1e}, onnxruntime's "
                        f"{truth[1]:.1e})")
        print(f"| {case.name} | {' | '.join(cells)} | {verdict} |", flush=True)
        if args.profile:
            notes += profile(case, args.sizes[0])
    print()
    for n in args.sizes:
        print(f"{n} row(s): {len(ratios[n])} pipelines, {args.threads} thread(s); geometric "
              f"mean of mini/ort {geomean(ratios[n]):.2f}, largest {max(ratios[n]):.2f}"
              + (f" (loop: {geomean(looped[n]):.2f}, largest {max(looped[n]):.2f})"
                 if looped[n] else ""))
    print(f"above 2x: {', '.join(over) or 'none'}")
    for line in notes:
        print(line)


if __name__ == "__main__":
    main()
