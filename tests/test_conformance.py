"""ONNX node conformance: every case that passed when the pin was last updated must still pass.

The pinned list is ``tests/data/conformance_passing.txt`` (regenerate with
``python benchmarks/conformance.py --write-pinned``); what does not pass yet, and why, is
listed in ``tests/data/conformance_excluded.txt``. Cases are run through the public backend
API by ``benchmarks/conformance.py``, whose tolerances are rtol 1e-3, atol 1e-5.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PINNED = ROOT / "tests" / "data" / "conformance_passing.txt"
EXCLUDED = ROOT / "tests" / "data" / "conformance_excluded.txt"


def _runner():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("conformance",
                                                  ROOT / "benchmarks" / "conformance.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _pinned() -> list[str]:
    return [line.strip() for line in PINNED.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


@pytest.fixture(scope="module")
def cases():  # type: ignore[no-untyped-def]
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {c.name: c for c in collect_testcases(None) if c.kind == "node"}


def test_pinned_cases_still_pass(cases) -> None:  # type: ignore[no-untyped-def]
    runner = _runner()
    regressions = []
    for name in _pinned():
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            status, reason = runner.run_case(cases[name], "cpu")
        if status != "passed":
            regressions.append(f"{name}: {status}: {reason}")
    assert not regressions, "conformance regressions:\n" + "\n".join(regressions)


def test_every_case_is_pinned_or_excluded_with_a_reason(cases) -> None:  # type: ignore[no-untyped-def]
    pinned = set(_pinned())
    excluded = {}
    for line in EXCLUDED.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, why = line.partition("  # ")
            excluded[name.strip()] = why.strip()
    assert not pinned & set(excluded), "a case is both pinned and excluded"
    missing = sorted(set(cases) - pinned - set(excluded))
    assert not missing, f"cases neither pinned nor excluded: {missing[:20]}"
    assert all(excluded.values()), "every exclusion needs a reason"
    assert len(pinned) >= 1600
