"""The discovery cache (issue 29, item 23; issue 30): a start whose installed distributions are
those the cache was made from registers what discovery afresh (importlib.metadata, pluggy,
every hook) registers, without importing importlib.metadata or the hook module of a
distribution whose device nobody asked for; installing a distribution or editing a plugin's
files makes the next start read them afresh."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from helpers import install_plugin_module

import mini_infer_core as mi

#: the registry a fresh process gets (get_plugin_registry: the cached way), as JSON, and
#: which of the probed modules it imported
_PROBE = textwrap.dedent("""
    import json, sys
    from mini_infer_core.registry import get_plugin_registry
    reg = get_plugin_registry()
    before = sorted(m for m in sys.argv[1:] if m in sys.modules)
    out = {"creators": [c for r in reg.creators for c in r.to_json()],
           "distributions": [d.to_json() for d in reg.distributions],
           "devices": reg.device_names(), "imported": before}
    out["cpu"] = type(reg.get_device("cpu")).__name__
    print(json.dumps(out))
""")

_PROBED = ["importlib.metadata", "email", "mini_infer_cpu_native.hooks",
           "mini_infer_ml_plugins.hooks", "mini_infer_cpu_native.catalog",
           "mini_infer_cpu_plugins.hooks"]


def _probe(cache: Path, *, path: Path | None = None, off: bool = False) -> dict[str, Any]:
    env = {**os.environ, "MINI_INFER_CACHE_DIR": str(cache)}
    env.pop("MINI_INFER_DISCOVERY_CACHE", None)
    if off:
        env["MINI_INFER_DISCOVERY_CACHE"] = "0"
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(path),
                                                          env.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", _PROBE, *_PROBED], capture_output=True,
                          text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return found


def _afresh() -> dict[str, Any]:
    """The oracle: discovery without the cache, in this process."""
    reg = mi.discover()
    return {"creators": [c for r in reg.creators for c in r.to_json()],
            "distributions": [d.to_json() for d in reg.distributions],
            "devices": reg.device_names()}


def test_a_start_from_the_cache_registers_what_discovery_afresh_does(tmp_path: Path) -> None:
    first = _probe(tmp_path)  # no cache yet: importlib.metadata, pluggy, every hook
    assert "importlib.metadata" in first["imported"]
    assert list(tmp_path.glob("discovery-*.json")), "the cache was not written"
    second = _probe(tmp_path)
    expected = _afresh()
    for found in (first, second):
        assert found["creators"] == expected["creators"]
        assert found["distributions"] == expected["distributions"]
        assert found["devices"] == expected["devices"]
        assert found["cpu"] == "CpuDevice"
    assert len(expected["creators"]) > 300
    # the second start read the cache only: no importlib.metadata, no hook module of a
    # distribution without devices, cpu_basic's only once the cpu device was asked for
    assert second["imported"] == [], second["imported"]


def test_the_cache_off_is_read_afresh(tmp_path: Path) -> None:
    found = _probe(tmp_path, off=True)
    assert "importlib.metadata" in found["imported"]
    assert not list(tmp_path.glob("discovery-*.json"))
    assert found["creators"] == _afresh()["creators"]


_FAKE = """
    from mini_infer_core.plugin import LazyPluginCreator
    from mini_infer_core.registry import hookimpl

    OPS = {ops!r}

    @hookimpl
    def mini_infer_creators():
        return [LazyPluginCreator("mini_infer_cpu_plugins.ops.activation:" + op, name=op,
                                  op_type=op, namespace="test.cache", field_names=(),
                                  devices=("cpu",), priority=-5) for op in OPS]
"""


def _fake_ops(found: dict[str, Any]) -> list[str]:
    return sorted(c["op_type"] for c in found["creators"] if c["namespace"] == "test.cache")


def test_installing_or_editing_a_distribution_invalidates_the_cache(tmp_path: Path) -> None:
    cache, site = tmp_path / "cache", tmp_path / "site"
    site.mkdir()
    _probe(cache, path=site)
    assert _fake_ops(_probe(cache, path=site)) == []
    install_plugin_module(site, "mi-test-cached", "1.0", "cached",
                          _FAKE.format(ops=["Relu"]))
    assert _fake_ops(_probe(cache, path=site)) == ["Relu"]  # installed: read afresh
    warm = _probe(cache, path=site)
    assert _fake_ops(warm) == ["Relu"] and warm["imported"] == []
    module = site / "mi_test_cached.py"
    module.write_text(textwrap.dedent(_FAKE.format(ops=["Relu", "Sigmoid"])))
    os.utime(module, ns=(module.stat().st_atime_ns, module.stat().st_mtime_ns + 10**9))
    assert _fake_ops(_probe(cache, path=site)) == ["Relu", "Sigmoid"]  # edited: afresh
    assert _fake_ops(_probe(cache, path=site)) == ["Relu", "Sigmoid"]


def test_writing_the_cache_removes_those_of_environments_that_are_gone(tmp_path: Path) -> None:
    """Throw-away virtual environments (tests, CI) leave a cache file each; the next write
    removes those whose environment folder no longer exists, and keeps the others."""
    cache = tmp_path / "cache"
    cache.mkdir()
    alive = tmp_path / "venv-alive"
    alive.mkdir()
    files = {"gone": {"prefix": str(tmp_path / "venv-gone"), "key": "0"},
             "alive": {"prefix": str(alive), "key": "0"},
             "older": {"key": "0"}}  # an earlier layout, which did not record the environment
    for name, data in files.items():
        (cache / f"discovery-{name}.json").write_text(json.dumps(data))
    _probe(cache)  # no cache for this environment yet: discovery writes one
    left = sorted(p.name for p in cache.glob("discovery-*.json"))
    assert "discovery-gone.json" not in left
    assert {"discovery-alive.json", "discovery-older.json"} <= set(left)
    assert len(left) == 3  # and this environment's own


def test_discovery_afresh_keeps_the_versions_the_cache_knew(tmp_path: Path) -> None:
    """The first start after an install reads the distributions afresh and rewrites the
    cache: with the versions the old one recorded (onnx's, asked when an engine's first
    schema loads) asked again, so that start's engine load does not rewrite it once more."""
    from importlib import metadata

    env = {**os.environ, "MINI_INFER_CACHE_DIR": str(tmp_path)}
    env.pop("MINI_INFER_DISCOVERY_CACHE", None)
    code = ("from mini_infer_core.registry import get_plugin_registry; get_plugin_registry(); "
            "from mini_infer_core._distributions import distribution_version as v; "
            "print(v('onnx'))")
    asked = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, timeout=600, check=True).stdout.split()[-1]
    assert asked == metadata.version("onnx")
    (cache,) = tmp_path.glob("discovery-*.json")
    data = json.loads(cache.read_text())
    assert data["versions"] == {"onnx": asked}
    data["key"] = "stale"  # as an install makes it: the next start reads afresh
    cache.write_text(json.dumps(data))
    probe = ("import json; from mini_infer_core.registry import get_plugin_registry; "
             "get_plugin_registry(); from mini_infer_core import _distributions as d; "
             "print(json.dumps(d.read_cache()['versions']))")
    again = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                           env=env, timeout=600, check=True).stdout.splitlines()[-1]
    assert json.loads(again) == {"onnx": metadata.version("onnx")}
    assert json.loads(cache.read_text())["key"] != "stale"
