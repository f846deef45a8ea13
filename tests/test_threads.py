"""The process's CPU budget (affinity and cgroup CPU quota), the thread count it gives the
pools, and what ``mini-infer plugins`` / ``bench`` print about it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mini_infer_core.threads import _cgroup_dirs, read_cpu_budget

AFFINITY = len(os.sched_getaffinity(0))


def _cgroup(tmp_path: Path, **files: str) -> Path:
    d = tmp_path / "cg"
    d.mkdir(exist_ok=True)
    for name, text in files.items():
        (d / name.replace("__", ".")).write_text(text + "\n")
    return d


def test_a_v2_quota_of_one_and_a_half_cpus_gives_two_threads(tmp_path: Path) -> None:
    cg = _cgroup(tmp_path, cpu__max="150000 100000")
    b = read_cpu_budget(cg, affinity=8)
    assert (b.threads, b.affinity, b.quota) == (2, 8, 1.5)
    assert b.quota_file == str(cg / "cpu.max")
    assert "cgroup quota 1.5 CPUs" in b.reason and "rounded up" in b.reason
    assert read_cpu_budget(cg, affinity=1).threads == 1  # never more than the affinity


@pytest.mark.parametrize(("quota", "period", "threads"), [
    ("50000", "100000", 1), ("100000", "100000", 1), ("100001", "100000", 2),
    ("400000", "100000", 4), ("1000000", "100000", 6)])
def test_quotas_round_up_and_stay_within_the_affinity(tmp_path: Path, quota: str, period: str,
                                                      threads: int) -> None:
    cg = _cgroup(tmp_path, cpu__max=f"{quota} {period}")
    assert read_cpu_budget(cg, affinity=6).threads == threads


def test_no_v2_quota_leaves_the_affinity(tmp_path: Path) -> None:
    cg = _cgroup(tmp_path, cpu__max="max 100000")
    b = read_cpu_budget(cg, affinity=3)
    assert (b.threads, b.quota) == (3, None)
    assert b.reason == "affinity 3 CPUs, no cgroup quota"


def test_a_v1_quota_and_v1_without_one(tmp_path: Path) -> None:
    cg = _cgroup(tmp_path, cpu__cfs_quota_us="250000", cpu__cfs_period_us="100000")
    b = read_cpu_budget(cg, affinity=8)
    assert (b.threads, b.quota) == (3, 2.5)
    assert b.quota_file is not None and b.quota_file.endswith("cpu.cfs_quota_us")
    cg = _cgroup(tmp_path, cpu__cfs_quota_us="-1", cpu__cfs_period_us="100000")
    assert read_cpu_budget(cg, affinity=8).threads == 8


def test_the_affinity_is_the_process_s_own_by_default(tmp_path: Path) -> None:
    b = read_cpu_budget(_cgroup(tmp_path))  # a cgroup without CPU files
    assert (b.threads, b.affinity, b.quota) == (AFFINITY, AFFINITY, None)


def test_a_parent_cgroup_s_quota_limits_its_children(tmp_path: Path) -> None:
    """The cgroup's path from /proc/self/cgroup, each directory up to the mount point read:
    the smallest quota wins (v2 in a child with none of its own, v1's cpu controller)."""
    mount = tmp_path / "sys"
    (mount / "a" / "b").mkdir(parents=True)
    (mount / "a" / "cpu.max").write_text("200000 100000\n")
    (mount / "a" / "b" / "cpu.max").write_text("max 100000\n")
    (mount / "cpu" / "x").mkdir(parents=True)
    (mount / "cpu" / "x" / "cpu.cfs_quota_us").write_text("300000\n")
    (mount / "cpu" / "x" / "cpu.cfs_period_us").write_text("100000\n")
    proc = tmp_path / "cgroup"
    proc.write_text("3:cpu,cpuacct:/x\n2:memory:/m\n0::/a/b\n")
    dirs = [Path(d) for d in _cgroup_dirs(proc, mount)]  # os.path strings (no pathlib)
    assert set(dirs) >= {mount / "a" / "b", mount / "a", mount, mount / "cpu" / "x"}
    assert mount / "m" not in dirs
    quotas = [read_cpu_budget(d, affinity=8).quota for d in dirs]
    assert min(q for q in quotas if q is not None) == 2.0


def _env(cg: Path) -> dict[str, str]:
    return {**os.environ, "MINI_INFER_CGROUP": str(cg)}


def _mini_infer(*args: str, env: dict[str, str]) -> str:
    proc = subprocess.run([sys.executable, "-m", "mini_infer_core.cli.main", *args],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_plugins_prints_the_thread_count_and_why(tmp_path: Path) -> None:
    cg = _cgroup(tmp_path, cpu__max="150000 100000")
    want = min(AFFINITY, 2)
    out = _mini_infer("plugins", env=_env(cg))
    line = next(x for x in out.splitlines() if x.startswith("threads:"))
    assert line.startswith(f"threads: {want} (")
    assert "cgroup quota 1.5 CPUs" in line and f"affinity {AFFINITY} CPU" in line
    data = json.loads(_mini_infer("plugins", "--json", env=_env(cg)))
    assert data["threads"]["count"] == want
    out = _mini_infer("plugins", env=_env(_cgroup(tmp_path, cpu__max="max 100000")))
    assert f"threads: {AFFINITY} (affinity {AFFINITY} CPU" in out
    assert "no cgroup quota" in out


def test_bench_prints_the_thread_count_asked_and_the_budget(tmp_path: Path) -> None:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
                              [w])
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    cg = _cgroup(tmp_path, cpu__max="100000 100000")  # one CPU
    out = _mini_infer("bench", str(model), "--iterations", "1", "--warmup", "0",
                      "--threads", "2", env=_env(cg))
    assert "threads: 1 (asked 2, capped at the CPU budget (cgroup quota 1 CPUs" in out
    out = _mini_infer("bench", str(model), "--iterations", "1", "--warmup", "0", env=_env(cg))
    assert "threads: 1 (" in out and "cgroup quota 1 CPUs" in out


def test_the_compiled_pool_defaults_to_the_budget_and_is_never_given_more(tmp_path: Path
                                                                         ) -> None:
    """With a one-CPU quota the compiled kernels' pool uses one thread by default, and
    set_num_threads(2) does not give it two; without a quota it uses the affinity's CPUs."""
    pytest.importorskip("mini_infer_cpu_native._native",
                        reason="the compiled kernels are not built here")
    if AFFINITY < 2:
        pytest.skip("one CPU: the budget and the affinity are the same")
    script = ("from mini_infer_cpu_native import _native\n"
              "from mini_infer_core.threads import set_num_threads\n"
              "print(_native.pool_threads())\n"
              "set_num_threads(2)\n"
              "print(_native.pool_threads())\n")

    def run(cpu_max: str) -> list[str]:
        cg = _cgroup(tmp_path, cpu__max=cpu_max)
        return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              env=_env(cg), timeout=120, check=True).stdout.split()

    assert run("100000 100000") == ["1", "1"]
    assert run("max 100000") == [str(min(AFFINITY, 64)), "2"]
