"""Tree ensembles: scikit-learn forests converted with skl2onnx, run by mini-infer (the compiled
walk of mini-infer-ml-plugins, and its NumPy walk) and by onnxruntime, in one process on the
same rows, at 1 and 2 threads.

    python benchmarks/ml_trees.py [--rows 10000] [--features 20] [--trees 300] [--repeat 5]

The forests are trained here (a few seconds to a minute on two cores): a random forest
classifier and regressor (fully grown trees) and a gradient-boosting classifier (depth 3).
Each figure is the minimum over ``--repeat`` runs in milliseconds (the machine is shared; the
minimum is the least disturbed); ``ours/ort`` is the compiled walk's time over onnxruntime's;
``diff`` the largest difference between mini-infer's and onnxruntime's scores (labels are
checked equal).
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import onnx
from mini_infer_ml_plugins.ops import _trees
from threadpoolctl import threadpool_limits

import mini_infer_core
from mini_infer_core.testing.bench import best_ms, ort_session


def _forests(rows: int, features: int, trees: int) -> list[tuple[str, Any, np.ndarray]]:
    from sklearn.datasets import make_classification, make_regression
    from sklearn.ensemble import (
        GradientBoostingClassifier,
        RandomForestClassifier,
        RandomForestRegressor,
    )

    xc, yc = make_classification(rows, features, n_informative=features // 2, n_classes=3,
                                 random_state=0)
    xr, yr = make_regression(rows, features, noise=5.0, random_state=0)
    return [
        (f"RandomForestClassifier {trees}", RandomForestClassifier(
            trees, random_state=0, n_jobs=-1).fit(xc, yc), xc.astype(np.float32)),
        (f"RandomForestRegressor {trees}", RandomForestRegressor(
            trees, random_state=0, n_jobs=-1, max_features=0.5).fit(xr, yr),
         xr.astype(np.float32)),
        (f"GradientBoostingClassifier {trees}", GradientBoostingClassifier(
            n_estimators=trees // 3, random_state=0).fit(xc, yc), xc.astype(np.float32)),
    ]


def _onnx(model: Any, features: int) -> onnx.ModelProto:
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return to_onnx(model, initial_types=[("x", FloatTensorType([None, features]))],
                       options={id(model): {"zipmap": False}} if hasattr(
                           model, "predict_proba") else None,
                       target_opset={"": 17, "ai.onnx.ml": 3})


def _ort(model: onnx.ModelProto, threads: int) -> Callable[[np.ndarray], list[Any]]:
    sess = ort_session(model, threads)
    return lambda x: list(sess.run(None, {"x": x}))


def _ours(model: onnx.ModelProto) -> Callable[[np.ndarray], list[Any]]:
    sess = mini_infer_core.InferenceSession(mini_infer_core.load(model))
    return lambda x: list(sess.run(None, {"x": x}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--trees", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--no-numpy", action="store_true", help="skip the NumPy walk (slow)")
    args = ap.parse_args()
    if not _trees.compiled_available():
        print("note: the compiled walk is not built here; 'ours' is the NumPy walk")
    print(f"{'model':34} {'thr':>3} {'ours ms':>9} {'numpy ms':>9} {'ort ms':>8} "
          f"{'ours/ort':>8} {'numpy/ort':>9} {'diff':>9}")
    for name, est, x in _forests(args.rows, args.features, args.trees):
        model = _onnx(est, args.features)
        for threads in args.threads:
            with threadpool_limits(threads):
                ours, theirs = _ours(model), _ort(model, threads)
                a, b = ours(x), theirs(x)
                diff = max(float(np.abs(np.asarray(p, np.float64) - np.asarray(q)).max())
                           for p, q in zip(a, b, strict=True) if np.asarray(q).dtype.kind == "f")
                labels = [p for p, q in zip(a, b, strict=True) if np.asarray(q).dtype.kind != "f"]
                assert all(np.array_equal(p, q) for p, q in zip(
                    labels, [q for q in b if np.asarray(q).dtype.kind != "f"], strict=True))
                best = {"ours": float("inf"), "ort": float("inf")}
                for _ in range(2):  # interleaved blocks
                    best["ours"] = min(best["ours"], best_ms(partial(ours, x), repeat=args.repeat))
                    best["ort"] = min(best["ort"], best_ms(partial(theirs, x), repeat=args.repeat))
                numpy_ms = float("nan")
                if not args.no_numpy:
                    lib, _trees._LIB = _trees._LIB, None
                    try:
                        numpy_ms = best_ms(partial(_ours(model), x), repeat=2)
                    finally:
                        _trees._LIB = lib
            print(f"{name:34} {threads:>3} {best['ours']:>9.1f} {numpy_ms:>9.1f} "
                  f"{best['ort']:>8.1f} {best['ours'] / best['ort']:>8.2f} "
                  f"{numpy_ms / best['ort']:>9.2f} {diff:>9.2e}", flush=True)


if __name__ == "__main__":
    main()
