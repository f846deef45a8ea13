"""scikit-learn models and pipelines converted with skl2onnx (the cases of
``plugin_packages/ml_basic/tests/sklearn_models.py``: forests, boosting, linear models, SVMs,
k-NN, column transformers, ZipMap outputs, DictVectorizer inputs), run by mini-infer and by
onnxruntime in one process on the same inputs.

    python benchmarks/sklearn_pipelines.py [--threads 1] [--repeat 20] [--cases NAME ...]

Per case: whether the labels (and string outputs) are identical, the largest absolute
difference of the scores (ZipMap's dicts compared key by key), the minimum latency of each
engine over ``--repeat`` runs of all the case's inputs (milliseconds; the minimum is the
least disturbed on a shared machine), and ours/ort. Needs scikit-learn and skl2onnx (the test
extras) and mini-infer-ml-plugins.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

import mini_infer_core as mi
from mini_infer_core.testing.bench import best_ms, ort_session
from mini_infer_core.threads import set_num_threads

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugin_packages" / "ml_basic"
                       / "tests"))
from sklearn_models import case_names, cases  # noqa: E402


def _compare(ours: list[Any], theirs: list[Any]) -> tuple[bool, float]:
    """(labels and strings identical, largest score difference)."""
    same, diff = True, 0.0
    for a, b in zip(ours, theirs, strict=True):
        if isinstance(b, list):  # ZipMap: one dict per row
            same &= [sorted(r) for r in a] == [sorted(r) for r in b]
            diff = max([diff, *(abs(r[k] - s[k]) for r, s in zip(a, b, strict=True) for k in s)])
            continue
        a, b = np.asarray(a), np.asarray(b)
        if b.dtype.kind in "OUSbiu":
            same &= a.tolist() == b.tolist()
        else:
            diff = max(diff, float(np.max(np.abs(a.astype(np.float64) - b))) if b.size else 0.0)
    return same, diff


def _run_all(session: Any, runs: list[dict[str, Any]]) -> None:
    for feeds in runs:
        session.run(None, feeds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--cases", nargs="*", default=None)
    args = parser.parse_args()
    set_num_threads(args.threads)
    print("| case | labels | max score diff | mini ms | ort ms | mini/ort |")
    print("|---|---|---:|---:|---:|---:|")
    ratios = []
    for name in args.cases or case_names():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            case = cases(name)
        ours, theirs = mi.InferenceSession(case.model), ort_session(case.model, args.threads)
        runs = case.runs()
        same, diff = True, 0.0
        for feeds in runs:
            s, d = _compare(ours.run(None, feeds), theirs.run(None, feeds))
            same, diff = same and s, max(diff, d)
        mine = best_ms(partial(_run_all, ours, runs), repeat=args.repeat, warmup=2)
        ort = best_ms(partial(_run_all, theirs, runs), repeat=args.repeat, warmup=2)
        ratios.append(mine / ort)
        print(f"| {case.name} | {'same' if same else 'DIFFER'} | {diff:.1e} | {mine:.3f} | "
              f"{ort:.3f} | {mine / ort:.2f} |")
    gm = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"\n{len(ratios)} cases, {args.threads} thread(s); geometric mean of mini/ort: {gm:.2f}")


if __name__ == "__main__":
    main()
