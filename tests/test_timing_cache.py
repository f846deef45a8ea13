"""Reproducible builds (issue 17, item 26): a timing cache (``--timing-cache FILE``) reused
and extended like trtexec's, and engine files that are the same bytes when built again --
with the same cache, or without tactic timing -- in another process, from another folder."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import mini_infer_core as mi
from mini_infer_core.builder import TimingCache
from mini_infer_core.errors import BuildError, PluginInterfaceError
from mini_infer_core.plugin import OnnxPlugin, OnnxPluginCreator
from mini_infer_core.registry import discover

#: passes over the tensor each tactic makes: "direct" is by far the fastest when timed
PASSES = {"slow": 300, "direct": 1}


class Tuned(OnnxPlugin):
    """y = x * 2, by one of two tactics; counts how often each tactic ran."""

    domain = "com.test"
    attributes: ClassVar[dict[str, Any]] = {"__tactic__": "", "k": 0}
    runs: ClassVar[dict[str, int]] = {}

    def get_tactics(self, input_shapes: Any) -> list[str]:
        return list(PASSES)

    def set_tactic(self, name: str) -> None:
        self.attrs["__tactic__"] = name

    def compute(self, x: Any, *, out: Any, __tactic__: str, k: int) -> None:
        tactic = __tactic__ or "slow"
        Tuned.runs[tactic] = Tuned.runs.get(tactic, 0) + 1
        for _ in range(PASSES[tactic]):
            np.multiply(x, 2.0, out=out)


def _model(ks: tuple[int, ...] = (0, 1)) -> onnx.ModelProto:
    """A chain of Tuned nodes; nodes with different ``k`` have different fields (keys)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 64])
    names = ["x", *(f"t{i}" for i in range(len(ks) - 1)), "y"]
    nodes = [helper.make_node("Tuned", [names[i]], [names[i + 1]], domain="com.test",
                              name=f"n{i}", k=k) for i, k in enumerate(ks)]
    return helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.test", 1)])


@pytest.fixture
def registry() -> Any:
    reg = discover()
    reg.register_creator(OnnxPluginCreator(Tuned, namespace="test"), distribution="tuned-dist",
                         distribution_version="1.0")
    Tuned.runs.clear()
    return reg


def _build(model: onnx.ModelProto, registry: Any, cache: Any) -> mi.Engine:
    return mi.Builder(registry).build_engine(mi.parse_onnx(model),
                                             mi.BuilderConfig(timing_cache=cache))


def test_a_new_cache_file_is_written_with_keys_naming_what_timings_depend_on(
        registry: Any, tmp_path: Path) -> None:
    path = tmp_path / "timing.cache"
    engine = _build(_model(), registry, path)
    data = json.loads(path.read_text())
    assert data["format"] == "mini-infer-timing-cache"
    assert len(data["entries"]) == 2  # two nodes with different fields
    (host,) = data["hosts"]
    for key, times in data["entries"].items():
        assert key.startswith("test::Tuned/v1 tuned-dist==1.0 | Tuned fields:")
        assert "in FLOAT[32, 64] | cpu | " in key and key.endswith(host)
        assert set(times) == set(PASSES) and times["direct"] < times["slow"]
    assert {r["chosen"] for r in engine.build_info["tactics"].values()} == {"direct"}
    recorded = sorted(tuple(sorted(r["ms"].items())) for r in engine.build_info["tactics"].values())
    assert recorded == sorted(tuple(sorted(t.items())) for t in data["entries"].values())


def test_cached_timings_decide_and_nothing_is_timed(registry: Any, tmp_path: Path) -> None:
    """A cache that (falsely) says "slow" is faster: the build believes it, as a build that
    timed nothing must; timing would have chosen "direct"."""
    path = tmp_path / "timing.cache"
    _build(_model(), registry, path)
    data = json.loads(path.read_text())
    for times in data["entries"].values():
        times.update(slow=0.001, direct=5.0)
    path.write_text(json.dumps(data))
    before = path.read_bytes()
    Tuned.runs.clear()
    engine = _build(_model(), registry, path)
    assert [nd.plugin.attrs["__tactic__"]  # type: ignore[attr-defined]
            for nd in engine.nodes] == ["slow", "slow"]
    assert Tuned.runs == {}  # no timing run at all
    assert path.read_bytes() == before  # nothing new: the file is not rewritten


def test_the_cache_is_extended_with_nodes_it_does_not_know(registry: Any,
                                                          tmp_path: Path) -> None:
    path = tmp_path / "timing.cache"
    _build(_model((0,)), registry, path)
    assert len(json.loads(path.read_text())["entries"]) == 1
    cache = TimingCache.load(path)
    engine = _build(_model((0, 7)), registry, cache)
    assert (cache.hits, cache.added) == (1, 1)
    cache.save()
    assert len(json.loads(path.read_text())["entries"]) == 2
    assert set(engine.build_info["tactics"]) == {"n0", "n1"}


def test_nodes_with_the_same_signature_share_one_entry(registry: Any, tmp_path: Path) -> None:
    cache = TimingCache()
    engine = _build(_model((3, 3, 3)), registry, cache)
    assert len(cache) == 1
    assert len({json.dumps(r["ms"]) for r in engine.build_info["tactics"].values()}) == 1


@pytest.mark.parametrize("content", ["{not json", '{"format": "other"}',
                                     '{"format": "mini-infer-timing-cache", "version": 99}',
                                     '{"format": "mini-infer-timing-cache", "version": 1, '
                                     '"entries": {"k": {"t": "fast"}}}'])
def test_an_unreadable_cache_is_a_build_error_that_says_what_to_do(
        registry: Any, tmp_path: Path, content: str) -> None:
    path = tmp_path / "timing.cache"
    path.write_text(content)
    with pytest.raises(BuildError, match="timing cache|not a mini-infer timing cache"):
        _build(_model(), registry, path)


def test_a_failing_serialize_while_keying_the_cache_names_the_node(
        registry: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache key digests the plugin's bytes: a serialize() that fails there is the same
    PluginInterfaceError writing the engine gives, not a raw exception from the builder."""
    def broken(self: Any) -> bytes:
        raise RuntimeError("cannot pack")
    monkeypatch.setattr(Tuned, "serialize", broken)
    with pytest.raises(PluginInterfaceError, match="node 'n0'.*cannot pack"):
        _build(_model(), registry, TimingCache())


# -- byte-for-byte reproducible engine files, built in separate processes --------------------
def _conv_model(folder: Path) -> Path:
    """Two 3x3 Convs (the compiled plugin offers Winograd F(2x2), F(4x4) and GEMM), a 1x1
    Conv and more initializers than one, so that their order matters."""
    rng = np.random.default_rng(0)
    inits = [onnx.numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
             for n, s in (("w", (16, 16, 3, 3)), ("w2", (8, 16, 1, 1)), ("b", (16,)))]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
             helper.make_node("Conv", ["c2", "w2"], ["y"], name="conv3")]
    model = helper.make_model(helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 12, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits),
        opset_imports=[helper.make_opsetid("", 17)])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "m.onnx"
    onnx.save(model, str(path))
    return path


def _build_in_process(model: Path, out: Path, seed: int, *flags: str) -> str:
    """``mini-infer build`` in a new process (its own hash seed); the engine's SHA-256."""
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    subprocess.run([sys.executable, "-m", "mini_infer_core.cli.main", "build", str(model),
                    "-o", str(out), *flags], check=True, capture_output=True, env=env,
                   cwd=model.parent)
    return hashlib.sha256(out.read_bytes()).hexdigest()


def test_builds_without_tactic_timing_are_byte_for_byte_identical(tmp_path: Path) -> None:
    a = _build_in_process(_conv_model(tmp_path / "one"), tmp_path / "a.engine", 1,
                          "--no-tactic-timing")
    b = _build_in_process(_conv_model(tmp_path / "two" / "deeper"), tmp_path / "b.engine", 2,
                          "--no-tactic-timing")
    assert a == b


def test_builds_with_the_same_timing_cache_are_byte_for_byte_identical(tmp_path: Path) -> None:
    reg = discover()
    if not any(r.distribution == "mini-infer-cpu-native" for r in reg.creators):
        pytest.skip("needs mini-infer-cpu-native (its Conv offers tactics to time); "
                    "bash scripts/setup.sh installs it")
    cache = tmp_path / "timing.cache"
    # LINEAR only: blocked, the convolutions would run cpu_native's one blocked kernel, no
    # tactics to time
    first = _build_in_process(_conv_model(tmp_path / "one"), tmp_path / "a.engine", 1,
                              "--timing-cache", str(cache), "--linear-only")
    entries = json.loads(cache.read_text())["entries"]
    assert len(entries) == 2 and all(
        k.startswith("mini_infer.cpu_native::Conv") and {"winograd", "gemm"} <= set(v)
        for k, v in entries.items())
    second = _build_in_process(_conv_model(tmp_path / "two"), tmp_path / "b.engine", 2,
                               "--timing-cache", str(cache), "--linear-only")
    third = _build_in_process(_conv_model(tmp_path / "one"), tmp_path / "c.engine", 3,
                              "--timing-cache", str(cache), "--linear-only")
    assert first == second == third
    header = json.loads((tmp_path / "a.engine").read_bytes()[128:].split(b"\0", 1)[0])
    info = header["build_info"]
    assert info["source"] == "m.onnx"  # the file name, not the folder it was built in
    assert "build_seconds" not in info
    assert set(info["tactics"]) == {"conv", "conv2"}
