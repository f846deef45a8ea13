"""The long fuzz run: the engine loader, the ONNX importer (with the builder) and the plugin-field
decoder (``mini_infer_core.testing.fuzz``), coverage-guided by atheris (libFuzzer), one process
per target. Only ``MiniInferError`` may escape a target; any other exception is recorded (its
input saved, deduplicated by exception type and place) and the run goes on; a crash, a hang
(``--timeout``) or running out of memory stops that target's process, and libFuzzer saves the
input. Prints executions, executions/second and findings per target.

    python benchmarks/fuzz.py --executions 1000000 [--targets engine,onnx,fields]
        [--split 1,1,1] [--jobs 3] [--timeout 30] [--out fuzz-out]

The corpus grows in ``OUT/corpus-TARGET`` and is reused by the next run. Without atheris
(``pip install atheris``) Hypothesis drives the targets instead (not coverage-guided).
Run it with ``nice`` on a shared machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

TARGETS = ("engine", "onnx", "fields")
PACKAGES = ["mini_infer_core", "mini_infer_cpu_plugins", "mini_infer_cpu_native",
            "mini_infer_l2norm"]


class Recorder:
    """Findings of one target, deduplicated by (exception type, innermost place)."""

    def __init__(self, out: Path, target: str) -> None:
        self.out, self.target = out, target
        self.seen: set[str] = set()
        self.path = out / f"findings-{target}.jsonl"
        (out / "findings").mkdir(parents=True, exist_ok=True)

    def record(self, exc: BaseException, data: bytes) -> None:
        frames = traceback.extract_tb(exc.__traceback__)
        ours = [f for f in frames if "mini_infer" in f.filename] or frames
        place = f"{ours[-1].filename}:{ours[-1].lineno}" if ours else "?"
        key = f"{type(exc).__name__} at {place}"
        if key in self.seen:
            return
        self.seen.add(key)
        name = f"{self.target}-{hashlib.sha1(data).hexdigest()[:16]}.bin"
        (self.out / "findings" / name).write_bytes(data)
        entry = {"target": self.target, "key": key, "error": f"{type(exc).__name__}: {exc}"[:500],
                 "input": f"findings/{name}",
                 "traceback": "".join(traceback.format_exception(exc))[-4000:]}
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")
        print(f"FINDING {key}: {entry['error'][:200]}", file=sys.stderr, flush=True)


def child_atheris(target: str, runs: int, out: Path, timeout: int, rss_mb: int) -> None:
    import atheris

    with atheris.instrument_imports(include=PACKAGES):
        from mini_infer_core.testing.fuzz import Fuzzer

        fuzzer = Fuzzer()
        seeds = fuzzer.seeds()[target]
        for data in seeds:  # imports the plugins' lazy modules under instrumentation
            fuzzer.check(target, data)
    corpus = out / f"corpus-{target}"
    corpus.mkdir(parents=True, exist_ok=True)
    for data in seeds:
        (corpus / f"seed-{hashlib.sha1(data).hexdigest()[:16]}").write_bytes(data)
    recorder = Recorder(out, target)
    check = fuzzer.check

    def one(data: bytes) -> None:
        exc = check(target, data)
        if exc is not None:
            recorder.record(exc, data)

    atheris.Setup([sys.argv[0], f"-runs={runs}", f"-timeout={timeout}",
                   f"-rss_limit_mb={rss_mb}", f"-artifact_prefix={out}/{target}-",
                   "-print_final_stats=1", "-max_len=16384", str(corpus)], one)
    atheris.Fuzz()


def child_hypothesis(target: str, runs: int, out: Path) -> None:
    from hypothesis import HealthCheck, given, settings

    from mini_infer_core.testing.fuzz import Fuzzer, hypothesis_inputs

    fuzzer = Fuzzer()
    recorder = Recorder(out, target)
    count = 0
    t0 = time.perf_counter()

    @settings(max_examples=runs, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(hypothesis_inputs(fuzzer, target))
    def one(data: bytes) -> None:
        nonlocal count
        count += 1
        exc = fuzzer.check(target, data)
        if exc is not None:
            recorder.record(exc, data)

    one()
    took = time.perf_counter() - t0
    print(f"stat::number_of_executed_units: {count}\n"
          f"stat::average_exec_per_sec: {count / took:.0f}", file=sys.stderr)


def run_target(target: str, runs: int, args: argparse.Namespace) -> subprocess.Popen[str]:
    cmd = [sys.executable, __file__, "--child", target, "--runs", str(runs), "--out",
           str(args.out), "--timeout", str(args.timeout), "--rss-limit-mb",
           str(args.rss_limit_mb), "--fuzzer", args.fuzzer]
    log = open(args.out / f"log-{target}.txt", "w", encoding="utf-8")  # noqa: SIM115
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True)


def summary(target: str, out: Path, rc: int | None, seconds: float) -> dict[str, Any]:
    text = (out / f"log-{target}.txt").read_text(errors="replace")
    units = re.findall(r"stat::number_of_executed_units: (\d+)", text)
    done = re.findall(r"Done (\d+) runs in (\d+) second", text)
    progress = re.findall(r"^#(\d+)\s", text, re.M)
    executions = int(units[-1]) if units else int(done[-1][0]) if done else \
        int(progress[-1]) if progress else 0
    cov = re.findall(r"cov: (\d+) ft: (\d+)", text)
    findings = []
    path = out / f"findings-{target}.jsonl"
    if path.exists():
        findings = [json.loads(line) for line in path.read_text().splitlines() if line]
    artifacts = sorted(p.name for p in out.glob(f"{target}-*") if p.is_file())
    fuzzing = int(done[-1][1]) if done else None  # libFuzzer's own clock: after start-up
    rate_over = fuzzing if fuzzing else seconds
    return {"target": target, "executions": executions, "seconds": round(seconds, 1),
            "fuzzing_seconds": fuzzing,
            "exec_per_second": round(executions / rate_over, 1) if rate_over else 0.0,
            "coverage": {"cov": int(cov[-1][0]), "features": int(cov[-1][1])} if cov else None,
            "returncode": rc, "findings": [f["key"] + ": " + f["error"][:160] for f in findings],
            "crash_artifacts": artifacts}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--executions", type=int, default=30000,
                   help="total executions over the targets")
    p.add_argument("--targets", default=",".join(TARGETS))
    p.add_argument("--split", default=None,
                   help="weights of the targets' shares of --executions (default equal)")
    p.add_argument("--jobs", type=int, default=1, help="targets fuzzed at the same time")
    p.add_argument("--timeout", type=int, default=30, help="seconds one input may take")
    p.add_argument("--rss-limit-mb", type=int, default=4096)
    p.add_argument("--out", type=Path, default=Path("fuzz-out"))
    p.add_argument("--fuzzer", choices=["auto", "atheris", "hypothesis"], default="auto")
    p.add_argument("--child", choices=TARGETS, help=argparse.SUPPRESS)
    p.add_argument("--runs", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.fuzzer == "auto":
        try:
            import atheris  # noqa: F401

            args.fuzzer = "atheris"
        except ImportError:
            args.fuzzer = "hypothesis"
    if args.child:
        if args.fuzzer == "atheris":
            child_atheris(args.child, args.runs, args.out, args.timeout, args.rss_limit_mb)
        else:
            child_hypothesis(args.child, args.runs, args.out)
        return 0
    targets = [t for t in args.targets.split(",") if t]
    weights = [float(w) for w in args.split.split(",")] if args.split else [1.0] * len(targets)
    share = {t: max(1, int(args.executions * w / sum(weights)))
             for t, w in zip(targets, weights, strict=True)}
    print(f"fuzzing {', '.join(f'{t}: {n}' for t, n in share.items())} executions with "
          f"{args.fuzzer} ({args.jobs} at a time); logs and findings in {args.out}", flush=True)
    pending = list(targets)
    running: dict[str, tuple[subprocess.Popen[str], float]] = {}
    results: dict[str, dict[str, Any]] = {}
    while pending or running:
        while pending and len(running) < args.jobs:
            t = pending.pop(0)
            running[t] = (run_target(t, share[t], args), time.perf_counter())
        for t, (proc, t0) in list(running.items()):
            rc = proc.poll()
            if rc is not None:
                results[t] = summary(t, args.out, rc, time.perf_counter() - t0)
                del running[t]
                r = results[t]
                print(f"{t:7s} {r['executions']:>9d} executions in {r['fuzzing_seconds']} s "
                      f"({r['seconds']:.0f} s with start-up): {r['exec_per_second']:>8.1f}/s, "
                      f"coverage {r['coverage']}, "
                      f"{len(r['findings'])} finding(s), exit {rc}", flush=True)
        time.sleep(1)
    total = sum(r["executions"] for r in results.values())
    failures = [f"{t}: {f}" for t, r in results.items() for f in r["findings"]] + [
        f"{t}: libFuzzer artifact {a}" for t, r in results.items() for a in r["crash_artifacts"]]
    print(f"total: {total} executions over {len(results)} target(s)")
    for line in failures:
        print("FAILURE", line)
    (args.out / "summary.json").write_text(json.dumps(
        {"fuzzer": args.fuzzer, "total_executions": total, "targets": results}, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
