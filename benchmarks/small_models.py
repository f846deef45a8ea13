"""Small recurrent and voice models against onnxruntime, per call, in one process: Silero VAD
(every ONNX export its wheel ships, one 30 ms chunk per call: 512 samples at 16 kHz with the
64 samples of context before them, its state carried from call to call) and a set of LSTM and
GRU layers (unidirectional, bidirectional, two stacked; batch 1 and 8; exported by
torch.onnx.export where torch is installed, else built with onnx.helper).

    python benchmarks/small_models.py [--repeat 30] [--threads 1] [--models NAME ...]
                                      [--profile]

Per model: the best time per call of each engine (microseconds; timed interleaved, a sample of
each in turn, the minimum over ``--repeat`` samples kept: the machine may be shared), the
ratio ours/onnxruntime, and the largest difference of the outputs (after the same calls, so
that the carried states went through the same steps). Then the geometric mean of the ratios.
``--profile`` adds, per model, each node's microseconds in mini-infer
(``ExecutionContext.time_nodes``). Silero's models need ``pip install silero-vad --no-deps``
(the wheel holds the ONNX files); without it they are skipped with a note.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi
from mini_infer_core.testing.bench import interleaved, ort_session
from mini_infer_core.threads import set_num_threads

#: samples per chunk at 16 kHz (30 ms is 480; Silero's v5 models take 512) and its context
CHUNK, CONTEXT = 512, 64


class Case:
    """A model, how to feed it one call, and how the outputs feed the next call (states)."""

    def __init__(self, name: str, model: onnx.ModelProto, feeds: dict[str, np.ndarray],
                 carry: dict[str, str] | None = None) -> None:
        self.name, self.model, self.feeds, self.carry = name, model, feeds, carry or {}

    def stepper(self, run: Callable[[dict[str, np.ndarray]], Sequence[Any]],
                outputs: list[str]) -> Callable[[], Sequence[Any]]:
        """One call of ``run`` on the feeds, the carried outputs fed back to the next call."""
        feeds = dict(self.feeds)

        def step() -> Sequence[Any]:
            got = run(feeds)
            for out, into in self.carry.items():
                feeds[into] = got[outputs.index(out)]
            return got
        return step


def silero_cases() -> tuple[list[Case], str]:
    """Silero VAD's ONNX exports (each file of its wheel's data folder), or a note why none."""
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or spec.origin is None:
        return [], "silero-vad is not installed (pip install silero-vad --no-deps): skipped"
    data = Path(spec.origin).parent / "data"
    cases = []
    rng = np.random.default_rng(0)
    audio = (rng.standard_normal((1, CHUNK + CONTEXT)) * 0.1).astype(np.float32)
    for path in sorted(data.glob("*.onnx")):
        model = onnx.load(str(path))
        names = [i.name for i in model.graph.input]
        if "input" not in names or "state" not in names:
            continue
        elem = model.graph.input[names.index("input")].type.tensor_type.elem_type
        feeds: dict[str, np.ndarray] = {
            "input": audio.astype(np.float16 if elem == TensorProto.FLOAT16 else np.float32),
            "state": np.zeros((2, 1, 128), np.float32)}
        if "sr" in names:
            feeds["sr"] = np.array(16000, np.int64)
        sel = model.graph.input[names.index("state")].type.tensor_type.elem_type
        if sel == TensorProto.FLOAT16:
            feeds["state"] = feeds["state"].astype(np.float16)
        cases.append(Case(f"silero:{path.stem}", model, feeds, {"stateN": "state"}))
    return cases, ""


def _rnn_model(op: str, t: int, batch: int, n_in: int, hid: int, dirs: int, layers: int,
               seed: int) -> onnx.ModelProto:
    """``layers`` stacked ``op`` layers (each one's Y, directions joined, the next one's X),
    as torch.nn.LSTM/GRU export them (no sequence lengths, initial states as inputs)."""
    rng = np.random.default_rng(seed)
    g = {"LSTM": 4, "GRU": 3}[op]
    nodes, inits, inputs = [], [], [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [t, batch, n_in])]
    x, width = "x", n_in
    for i in range(layers):
        w = (rng.standard_normal((dirs, g * hid, width)) / math.sqrt(width)).astype(np.float32)
        r = (rng.standard_normal((dirs, g * hid, hid)) / math.sqrt(hid)).astype(np.float32)
        b = (rng.standard_normal((dirs, 2 * g * hid)) * 0.1).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(r, f"r{i}"),
                  numpy_helper.from_array(b, f"b{i}")]
        ins = [x, f"w{i}", f"r{i}", f"b{i}", "", f"h{i}"] + ([f"c{i}"] if op == "LSTM" else [])
        for s in ins[5:]:
            inputs.append(helper.make_tensor_value_info(s, TensorProto.FLOAT,
                                                        [dirs, batch, hid]))
        outs = [f"y{i}", f"yh{i}"] + ([f"yc{i}"] if op == "LSTM" else [])
        attrs: dict[str, Any] = {"linear_before_reset": 1} if op == "GRU" else {}
        nodes.append(helper.make_node(op, ins, outs, hidden_size=hid, direction=(
            "bidirectional" if dirs == 2 else "forward"), **attrs))
        nodes.append(helper.make_node("Transpose", [f"y{i}"], [f"t{i}"], perm=[0, 2, 1, 3]))
        inits.append(numpy_helper.from_array(np.array([t, batch, dirs * hid], np.int64),
                                             f"s{i}"))
        nodes.append(helper.make_node("Reshape", [f"t{i}", f"s{i}"], [f"x{i + 1}"]))
        x, width = f"x{i + 1}", dirs * hid
    graph = helper.make_graph(nodes, op.lower(), inputs, [
        helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)


def _torch_model(op: str, t: int, batch: int, n_in: int, hid: int, dirs: int, layers: int,
                 seed: int) -> onnx.ModelProto | None:
    """The same stack as torch.nn.LSTM/GRU exported by torch.onnx.export (None: no torch)."""
    if importlib.util.find_spec("torch") is None:
        return None
    import io

    import torch

    torch.manual_seed(seed)
    cls = {"LSTM": torch.nn.LSTM, "GRU": torch.nn.GRU}[op]
    module = cls(n_in, hid, num_layers=layers, bidirectional=dirs == 2).eval()
    buf = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(module, (torch.randn(t, batch, n_in),), buf, input_names=["x"],
                          opset_version=14, dynamo=False)
    return onnx.load_from_string(buf.getvalue())


#: (name, op, T, B, I, H, directions, layers)
RNN_SET = [
    ("lstm_uni", "LSTM", 50, 1, 64, 128, 1, 1),
    ("lstm_bi_tagger", "LSTM", 50, 1, 100, 128, 2, 1),
    ("lstm_bi_stacked", "LSTM", 50, 1, 64, 128, 2, 2),
    ("lstm_uni_b8", "LSTM", 50, 8, 64, 128, 1, 1),
    ("lstm_cell_t1", "LSTM", 1, 1, 128, 128, 1, 1),
    ("gru_uni", "GRU", 50, 1, 64, 128, 1, 1),
    ("gru_bi", "GRU", 50, 1, 64, 128, 2, 1),
    ("gru_bi_stacked", "GRU", 50, 1, 64, 96, 2, 2),
    ("gru_uni_b8", "GRU", 50, 8, 64, 128, 1, 1),
]


def rnn_cases(torch_too: bool) -> list[Case]:
    cases = []
    rng = np.random.default_rng(1)
    for seed, (name, op, t, b, n_in, hid, dirs, layers) in enumerate(RNN_SET):
        model = _rnn_model(op, t, b, n_in, hid, dirs, layers, seed)
        feeds = {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]
                                             ).astype(np.float32) for i in model.graph.input}
        cases.append(Case(name, model, feeds))
        exported = _torch_model(op, t, b, n_in, hid, dirs, layers, seed) if torch_too else None
        if exported is not None:
            cases.append(Case(f"{name}:torch", exported, {"x": feeds["x"]}))
    return cases




def largest_difference(ours: Sequence[Any], theirs: Sequence[Any]) -> float:
    return max((float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))
                for a, b in zip(ours, theirs, strict=True) if np.asarray(b).size), default=0.0)


def profile(case: Case) -> list[str]:
    """Each node's microseconds (the median of 50 timed runs)."""
    engine = mi.load(case.model)
    with engine.create_execution_context() as ctx:
        runs = [ctx.time_nodes(case.feeds) for _ in range(51)][1:]
    took = np.median(np.array(runs), axis=0) * 1e6
    lines = [f"  profile of {case.name}: {took.sum():.1f} us in its nodes"]
    for node, us in sorted(zip(engine.nodes, took, strict=True), key=lambda p: -p[1])[:12]:
        lines.append(f"    {us:8.1f} us  {node.describe()}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--models", nargs="*", default=None,
                        help="names (or prefixes: silero, lstm, gru) to run")
    parser.add_argument("--no-torch", action="store_true",
                        help="only the onnx.helper-built LSTM/GRU models")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    set_num_threads(args.threads)
    cases, note = silero_cases()
    cases += rnn_cases(not args.no_torch)
    if args.models:
        cases = [c for c in cases if any(c.name.startswith(m) for m in args.models)]
    print("| model | mini-infer µs | onnxruntime µs | mini/ort | largest difference |")
    print("|---|---:|---:|---:|---:|")
    ratios: list[float] = []
    notes = [note] if note else []
    for case in cases:
        ours = mi.InferenceSession(case.model)
        theirs = ort_session(case.model, args.threads)
        ours_out = [o.name for o in ours.get_outputs()]
        theirs_out = [o.name for o in theirs.get_outputs()]
        mine = case.stepper(partial(ours.run, None), ours_out)
        ort = case.stepper(partial(theirs.run, None), theirs_out)
        diff = max(largest_difference(mine(), ort()) for _ in range(3))
        t_mine, t_ort = interleaved([mine, ort], args.repeat, sample_seconds=2e-3, most=500)
        ratios.append(t_mine / t_ort)
        print(f"| {case.name} | {t_mine * 1e6:,.1f} | {t_ort * 1e6:,.1f} | "
              f"{t_mine / t_ort:.2f} | {diff:.1e} |", flush=True)
        if args.profile:
            notes += profile(case)
    print()
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else math.nan
    print(f"{len(ratios)} models, {args.threads} thread(s): geometric mean of mini/ort "
          f"{geo:.2f}, largest {max(ratios, default=math.nan):.2f}")
    for line in notes:
        print(line)


if __name__ == "__main__":
    main()
