"""ONNX node conformance: every case of ``onnx.backend.test.case.node.collect_testcases(None)``
through mini-infer's public backend API, classified as

- passed: every output matches (same dtype and shape, rtol 1e-3, atol 1e-5, NaN == NaN);
- wrong: it built and ran, but an output differs, or running raised;
- random: a random operator (Bernoulli...) whose draws differ from the ones onnx stored (made
  with NumPy's global random state) while their shape, dtype and support match;
- unsupported: the build refused it (an operator no installed plugin serves, a type or
  attribute kind mini-infer does not import yet).

Prints a per-operator table and the totals. Options: ``--json FILE`` writes the per-case
results, ``--only SUBSTR`` runs matching case names, ``--failures`` prints each non-passing
case with its reason, ``--device cpu``.

    python benchmarks/conformance.py
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings
from collections import Counter, defaultdict
from typing import Any

import numpy as np

RTOL, ATOL = 1e-3, 1e-5


def case_operator(case: Any) -> str:
    ops = [n.op_type for n in case.model.graph.node if n.op_type != "Constant"] or ["Constant"]
    if len(set(ops)) == 1:
        return ops[0]
    stem = re.sub(r"^test_", "", case.name).replace("_", "").lower()
    from onnx import defs

    names = sorted({s.name for s in defs.get_all_schemas()}, key=len, reverse=True)
    for n in names:
        if stem.startswith(n.lower()):
            return n + " (expanded)" if "expanded" in case.name else n
    return ops[0] + " (graph)"


def as_array(x: Any) -> Any:
    """onnx ships some expected values as TensorProto (narrow float types)."""
    from onnx import TensorProto, numpy_helper

    return numpy_helper.to_array(x) if isinstance(x, TensorProto) else x


def compare(ours: Any, ref: Any) -> str | None:
    if isinstance(ref, (list, tuple)) or ref is None:  # a sequence, an empty optional
        if ref is None or ours is None:
            return None if ours is ref else f"{type(ours).__name__} != {type(ref).__name__}"
        if not isinstance(ours, (list, tuple)):
            return f"{type(ours).__name__} where a sequence is expected"
        if len(ours) != len(ref):
            return f"{len(ours)} elements, expected {len(ref)}"
        for k, (o, r) in enumerate(zip(ours, ref, strict=True)):
            problem = compare(o, r)
            if problem:
                return f"element {k}: {problem}"
        return None
    ours, ref = np.asarray(ours), np.asarray(as_array(ref))
    if ours.dtype != ref.dtype:
        return f"dtype {ours.dtype} != {ref.dtype}"
    if ours.shape != ref.shape:
        return f"shape {ours.shape} != {ref.shape}"
    if ref.dtype.kind == "V" and ref.dtype.itemsize <= 2:  # ml_dtypes floats (bfloat16, fp8)
        try:
            ours, ref = ours.astype(np.float32), ref.astype(np.float32)
        except (TypeError, ValueError):
            pass
    if ref.dtype.kind in "fc":
        if not np.allclose(ours, ref, rtol=RTOL, atol=ATOL, equal_nan=True):
            err = np.nanmax(np.abs(ours.astype(np.float64) - ref.astype(np.float64)))
            return f"max abs error {err:.3g}"
    elif ref.dtype.kind in "OUS":
        if ours.tolist() != ref.tolist():
            return "values differ"
    elif not np.array_equal(ours, ref):
        return "values differ"
    return None


def run_case(case: Any, device: str) -> tuple[str, str]:
    from mini_infer_core.backend import MiniInferBackend
    from mini_infer_core.errors import (
        BuildError,
        DeviceError,
        ModelImportError,
        PluginLoadError,
    )

    try:
        rep = MiniInferBackend.prepare(case.model, device)
    except (BuildError, ModelImportError, DeviceError, PluginLoadError) as exc:
        return "unsupported", f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    except Exception as exc:  # noqa: BLE001 - a crash in the build is a bug: count it wrong
        return "wrong", f"build crashed: {type(exc).__name__}: {exc}"[:240]
    for inputs, expected in case.data_sets:
        try:
            outs = rep.run([as_array(x) for x in inputs])
        except BuildError as exc:  # built for the feeds' shapes at the run, and refused
            return "unsupported", f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        except Exception as exc:  # noqa: BLE001
            return "wrong", f"run raised {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        if len(outs) < len(expected):
            return "wrong", f"{len(outs)} outputs, expected {len(expected)}"
        for k, (o, e) in enumerate(zip(outs, expected, strict=False)):
            problem = compare(o, e)
            if problem and case_operator(case).split()[0] in RANDOM_DRAWS:
                return random_draws(k, np.asarray(o), np.asarray(e), problem)
            if problem:
                return "wrong", f"output {k}: {problem}"
    return "passed", ""


#: operators whose outputs are random draws: onnx made the cases' expected outputs with
#: NumPy's global random state, which no implementation reproduces (onnxruntime's own
#: backend tests skip them)
RANDOM_DRAWS = frozenset({"Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike",
                          "RandomUniform", "RandomUniformLike"})


def random_draws(k: int, got: np.ndarray, want: np.ndarray, problem: str) -> tuple[str, str]:
    """A random operator's output that differs from onnx's draw: "random" where its shape,
    dtype and (for 0/1 draws) values' support are what the draw's are, else "wrong"."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return "wrong", f"output {k}: {problem}"
    if np.isin(want, (0, 1)).all() and not np.isin(got, (0, 1)).all():
        return "wrong", f"output {k}: values other than 0 and 1"
    return "random", (f"output {k}: random draws (onnx's come from NumPy's global state): "
                      f"shape, dtype and support match, values cannot")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--only", default=None)
    ap.add_argument("--json", default=None, help="write per-case results to this file")
    ap.add_argument("--failures", action="store_true")
    ap.add_argument("--write-pinned", action="store_true",
                    help="rewrite tests/data/conformance_passing.txt and _excluded.txt")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    from onnx.backend.test.case.node import collect_testcases

    cases = [c for c in collect_testcases(None)
             if c.kind == "node" and (args.only is None or args.only in c.name)]
    results: dict[str, dict[str, str]] = {}
    by_op: dict[str, Counter[str]] = defaultdict(Counter)
    t0 = time.perf_counter()
    for case in cases:
        with np.errstate(all="ignore"):
            status, reason = run_case(case, args.device)
        op = case_operator(case)
        results[case.name] = {"status": status, "op": op, "reason": reason}
        by_op[op][status] += 1
        if args.failures and status != "passed":
            print(f"{status:<11} {case.name}: {reason}")
    elapsed = time.perf_counter() - t0
    totals = Counter(r["status"] for r in results.values())
    print(f"\n{'operator':<34} {'cases':>5} {'passed':>6} {'wrong':>6} {'unsupp':>6}")
    for op in sorted(by_op):
        c = by_op[op]
        print(f"{op:<34} {sum(c.values()):>5} {c['passed']:>6} {c['wrong']:>6} "
              f"{c['unsupported']:>6}")
    print(f"\ntotal {len(cases)} cases: passed {totals['passed']}, wrong {totals['wrong']}, "
          f"random {totals['random']}, unsupported {totals['unsupported']} "
          f"({elapsed:.1f}s; rtol {RTOL}, atol {ATOL})")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1, sort_keys=True)
    if args.write_pinned:
        write_pinned(results)
    return 0


def write_pinned(results: dict[str, dict[str, str]]) -> None:
    from pathlib import Path

    data = Path(__file__).resolve().parents[1] / "tests" / "data"
    passing = sorted(n for n, r in results.items() if r["status"] == "passed")
    (data / "conformance_passing.txt").write_text(
        "# ONNX node conformance cases that pass on cpu; tests/test_conformance.py keeps them\n"
        "# passing. Regenerate: python benchmarks/conformance.py --write-pinned\n"
        + "".join(f"{n}\n" for n in passing))
    lines = ["# ONNX node conformance cases that do not pass yet, with the reason (status: first",
             "# line of the error). Bernoulli's expected outputs were drawn from NumPy's global",
             "# random state when onnx made the cases: no implementation reproduces them.",
             "# Regenerate: python benchmarks/conformance.py --write-pinned"]
    for n, r in sorted(results.items()):
        if r["status"] != "passed":
            reason = " ".join(r["reason"].split())[:160] or "no reason recorded"
            lines.append(f"{n}  # {r['status']} ({r['op']}): {reason}")
    (data / "conformance_excluded.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
