"""An If on an input's value in a keyed plan runs its taken branch's plan in place
(``mini_infer_core.engine.branch_step``): after the first run of a key no subgraph runner
runs, and the results stay onnxruntime's for both branch values, across keys that come and
go. Silero VAD's exports (the wheel's ONNX files, where ``silero-vad`` is installed) give
onnxruntime's outputs over a run of chunks with the state carried."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import ort_run
from onnx import TensorProto
from test_if_inlining import mode_if

import mini_infer_core as mi
from mini_infer_core.builder.subgraph import SubgraphRunner
from mini_infer_core.engine.branch_step import BranchStep
from mini_infer_core.engine.keyed import KeyedPlans, PlanMismatch


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times a subgraph runner ran a body (a list of one count)."""
    count = [0]
    run = SubgraphRunner.run

    def counted(self: SubgraphRunner, *args: object) -> object:
        count[0] += 1
        return run(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(SubgraphRunner, "run", counted)
    return count


def test_branch_runs_inlined_for_both_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each key's first run goes through the If plugin (in segments, then once more
    through the plan's step, which learns the branch's plan); every repeat runs the branch's
    plan directly -- the runner is not called -- with onnxruntime's results, for mode 1 (the
    Concat branch) and mode 0 (the ReduceSum branch) alike, including after the other key
    ran in between. A run with the last run's shapes and mode goes to its plan without
    working the key out; the same shapes with the other mode do not."""
    model = mode_if()
    count = _counting(monkeypatch)
    keyed = [0]  # the key worked out (not a repeat of the last run's key)
    key = KeyedPlans.key

    def counted_key(self: KeyedPlans, feeds: dict[str, np.ndarray]) -> object:
        keyed[0] += 1
        return key(self, feeds)

    monkeypatch.setattr(KeyedPlans, "key", counted_key)
    with mi.load(model).create_execution_context() as ctx:
        for mode in (1, 0, 1, 0):
            for k in range(4):
                x = np.random.default_rng(10 * mode + k).standard_normal((3, 4)).astype(
                    np.float32)
                feeds = {"x": x, "mode": np.array(mode, np.int64)}
                before, looked_up = count[0], keyed[0]
                got = ctx.execute(feeds)
                for name, want in zip(("z", "y"), ort_run(model, feeds), strict=True):
                    assert got[name].shape == want.shape, (mode, k, name)
                    np.testing.assert_allclose(got[name], want, rtol=1e-6,
                                               err_msg=f"{name} mode={mode} run {k}")
                if k >= 1:  # learnt on an earlier run of this key: no runner, and the
                    # last run's key again: its plan straight away
                    assert count[0] == before, (mode, k)
                    assert keyed[0] == looked_up, (mode, k)
                else:  # the other mode's run before: the key is worked out
                    assert keyed[0] == looked_up + 1, (mode, k)
                step = ctx._plan.into[1]
                assert isinstance(step, BranchStep)
        assert ctx.plans_cached == 2


def test_branch_step_follows_a_condition_the_key_does_not_fix() -> None:
    """The shortcut checks the condition on every run: a planned If step whose condition
    array is changed under it takes the other branch (the generic path), not the learnt
    one."""
    model = mode_if()
    x = np.ones((2, 4), np.float32)
    with mi.load(model).create_execution_context() as ctx:
        feeds = {"x": x, "mode": np.array(1, np.int64)}
        for _ in range(3):
            ctx.execute(feeds)
        step = ctx._plan.into[1]
        assert isinstance(step, BranchStep) and step._learnt is not None
        cond = ctx._plan.steps[1].inputs[0]
        cond[...] = False  # the else branch gives (2, 1), the plan holds (2, 8)
        with pytest.raises(PlanMismatch, match="plan holds"):
            step()


def _silero_models() -> list[Path]:
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or spec.origin is None:
        return []
    return sorted((Path(spec.origin).parent / "data").glob("*.onnx"))


@pytest.mark.skipif(not _silero_models(),
                    reason="silero-vad is not installed (scripts/setup.sh installs it "
                           "with --no-deps: its wheel requires torch, which the test extra "
                           "does not carry)")
@pytest.mark.parametrize("path", _silero_models(), ids=lambda p: p.stem)
def test_silero_exports_match_onnxruntime_over_chunks(path: Path) -> None:
    """30 ms chunks (512 samples + 64 of context at 16 kHz) of noise and a tone, the state
    carried from each run to the next: the probability and the state within 1e-4 of
    onnxruntime's (1e-2 for the float16 export)."""
    model = onnx.load(str(path))
    names = [i.name for i in model.graph.input]
    if "input" not in names or "state" not in names:
        pytest.skip(f"{path.name} has no input/state inputs (not a streaming export)")
    half = model.graph.input[names.index("input")].type.tensor_type.elem_type == \
        TensorProto.FLOAT16
    dtype = np.float16 if half else np.float32
    tol = 1e-2 if half else 1e-4
    rng = np.random.default_rng(0)
    t = np.arange(576 * 6) / 16000
    audio = (0.3 * np.sin(2 * np.pi * 440 * t) + 0.05 * rng.standard_normal(t.size))
    state_dtype = np.float16 if model.graph.input[names.index("state")].type.tensor_type \
        .elem_type == TensorProto.FLOAT16 else np.float32
    ours_state = ort_state = np.zeros((2, 1, 128), state_dtype)
    session = mi.InferenceSession(model)  # builds per input shapes where a rank needs them
    outputs = [o.name for o in model.graph.output]
    for k in range(6):
        chunk = audio[k * 576:(k + 1) * 576][None].astype(dtype)
        feeds = {"input": chunk, "state": ours_state}
        ort_feeds = {"input": chunk, "state": ort_state}
        if "sr" in names:
            feeds["sr"] = ort_feeds["sr"] = np.array(16000, np.int64)
        got = dict(zip(outputs, session.run(None, feeds), strict=True))
        want = dict(zip(outputs, ort_run(model, ort_feeds), strict=True))
        for name, value in want.items():
            np.testing.assert_allclose(got[name].astype(np.float32),
                                       value.astype(np.float32), atol=tol,
                                       err_msg=f"{path.stem} chunk {k} {name}")
        ours_state, ort_state = got["stateN"], want["stateN"]
