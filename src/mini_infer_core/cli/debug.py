"""``mini-infer debug reduce``: shrink a failing model to a small subgraph that still fails
(Polygraphy's ``debug reduce``), writing the reduced model and its inputs.

What "fails" means is either a command (``--check "COMMAND"``: a non-zero exit status; the
candidate model's path replaces ``{model}`` in it, or is appended, and ``{inputs}`` names a
``.npz`` of its inputs) or ``--mode compare``: mini-infer's outputs on ``--device`` differ from
onnxruntime's (or onnx's ReferenceEvaluator's) beyond ``--rtol``/``--atol``, a mini-infer
build or run error counting as a failure. The search is :mod:`._reduce`'s.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, MiniInferError
from ..registry import PluginRegistry
from . import _args
from ._reduce import Check

__all__ = ["command"]


def _load_model(path: str) -> Any:
    import onnx

    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file" if not os.path.exists(path)
                         else f"{path}: is a folder, not an ONNX model")
    try:
        return onnx.load(path)
    except Exception as exc:  # noqa: BLE001 - not an ONNX file
        raise InputError(f"{path} is not an ONNX model ({type(exc).__name__}); "
                         "debug reduce needs the .onnx file") from None


def _feeds(args: argparse.Namespace, model: Any) -> dict[str, np.ndarray[Any, Any]]:
    """The whole model's inputs: ``--input`` files, the rest random (``--seed``), shaped by
    ``--shape`` or the model's static dimensions (dynamic ones set to 1)."""
    from onnx import helper

    inits = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    names = [i.name for i in inputs]
    given = dict(_args.load_npy(item) for item in args.input)
    shapes = _args.parse_shapes(args.shape)
    _args.check_input_names("--input", given, names)
    _args.check_input_names("--shape", shapes, names)
    if args.seed < 0:
        raise InputError(f"--seed {args.seed}: a seed is a whole number >= 0")
    rng = np.random.default_rng(args.seed)
    for vi in inputs:
        if vi.name in given:
            continue
        tensor = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            raise InputError(f"input {vi.name!r} is not a tensor: give it with --input")
        dims = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in tensor.shape.dim)
        shape = shapes.get(vi.name, dims)
        dt = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
        given[vi.name] = (rng.random(shape, dtype=np.float32).astype(dt) if dt.kind == "f"
                          else rng.integers(0, 2, shape).astype(dt))
    return given


def _all_values(model: Any, feeds: dict[str, np.ndarray[Any, Any]], anchor: str,
                path: str) -> dict[str, Any]:
    """Every tensor's value on ``feeds``, from ``anchor`` (onnxruntime, else the reference)."""
    from .compare import _anchor

    order = [anchor] + [a for a in ("onnxruntime", "reference") if a != anchor]
    errors = []
    for name in order:
        try:
            values = dict(feeds)
            values.update(_anchor(name, model, path).tensors(feeds))
            return values
        except MiniInferError as exc:
            errors.append(str(exc))
    raise MiniInferError("cannot compute the model's intermediate values to feed the "
                         "subgraphs: " + "; ".join(errors))


def _command_check(check: str, tmp: Path, timeout: float) -> Check:
    words = shlex.split(check)
    if not words:
        raise InputError("--check: an empty command")

    def fails(model: Any, feeds: dict[str, np.ndarray[Any, Any]]) -> bool:
        import onnx

        path, inputs = tmp / "candidate.onnx", tmp / "candidate_inputs.npz"
        onnx.save(model, str(path))
        np.savez(inputs, **feeds)  # type: ignore[arg-type]
        argv = [w.replace("{model}", str(path)).replace("{inputs}", str(inputs))
                for w in words]
        if not any("{model}" in w for w in words):
            argv.append(str(path))
        try:
            proc = subprocess.run(argv, capture_output=True, timeout=timeout, check=False)
        except FileNotFoundError:
            raise InputError(f"--check {check!r}: no program {argv[0]!r}") from None
        except subprocess.TimeoutExpired:
            return True  # a hang is a failure, as Polygraphy counts it
        return proc.returncode != 0

    return fails


def _compare_check(args: argparse.Namespace, reg: PluginRegistry) -> Check:
    from ..builder import BuilderConfig
    from .bench import build_for_shapes
    from .compare import _anchor, tensor_error

    config = BuilderConfig(device=args.device, time_tactics=False)

    def fails(model: Any, feeds: dict[str, np.ndarray[Any, Any]]) -> bool:
        try:
            expected = _anchor(args.b, model, args.model).run(feeds)
        except MiniInferError:
            return False  # the oracle cannot judge this subgraph
        try:
            engine = build_for_shapes(reg, model, config,
                                      {n: tuple(v.shape) for n, v in feeds.items()})
            with engine.create_execution_context() as ctx:
                got = ctx.execute(feeds)
        except MiniInferError:
            return True  # mini-infer refuses what the oracle runs
        return any(not tensor_error(got[n], v, args.rtol, args.atol)["match"]
                   for n, v in expected.items() if n in got)

    return fails


def _safe(name: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "input"
    stem, i = base, 1
    while stem in taken:
        i += 1
        stem = f"{base}_{i}"
    taken.add(stem)
    return stem


def command(args: argparse.Namespace, reg: PluginRegistry) -> dict[str, Any]:
    """Run ``mini-infer debug reduce``; the result's ``text`` is what the CLI prints."""
    import onnx

    from ._reduce import reduce_model

    if (args.check is not None) == (args.mode == "compare"):
        raise InputError("debug reduce: give exactly one of --check \"COMMAND\" (fails when it "
                         "exits non-zero) or --mode compare (fails when mini-infer differs "
                         "from --b)")
    if args.rtol < 0 or args.atol < 0:
        raise InputError("--rtol and --atol are tolerances >= 0")
    if args.check_timeout <= 0:
        raise InputError(f"--check-timeout {args.check_timeout}: seconds > 0")
    if args.b not in ("onnxruntime", "reference"):
        raise InputError(f"--b {args.b!r}: onnxruntime or reference")
    _args.check_output_path(args.output, "-o", "reduced model")
    inputs_dir = Path(args.output).with_suffix("").with_name(Path(args.output).stem + "_inputs")
    if inputs_dir.exists() and not inputs_dir.is_dir():
        raise InputError(f"{inputs_dir} exists and is not a folder: the reduced model's "
                         "inputs are written there; move it away")
    model = _load_model(args.model)
    feeds = _feeds(args, model)
    values = _all_values(model, feeds, args.b, args.model)
    def log(line: str) -> None:
        if not args.json:
            print(line, file=sys.stderr)

    with tempfile.TemporaryDirectory(prefix="mini-infer-reduce-") as tmp:
        fails = (_command_check(args.check, Path(tmp), args.check_timeout) if args.check
                 else _compare_check(args, reg))
        log(f"reducing {args.model} ({len(model.graph.node)} nodes):")
        found = reduce_model(model, values, fails, log)
    onnx.save(found.model, args.output)
    inputs_dir.mkdir(exist_ok=True)
    taken: set[str] = set()
    files = {}
    for name, value in found.feeds.items():
        file = inputs_dir / f"{_safe(name, taken)}.npy"
        np.save(file, value)
        files[name] = str(file)
    run_line = " ".join(["mini-infer run", shlex.quote(args.output),
                         *(f"--input {shlex.quote(f'{n}={f}')}" for n, f in files.items())])
    text = [f"reduced {args.model}: {found.original_nodes} -> {len(found.nodes)} node(s) "
            f"({', '.join(found.nodes)}) in {len(found.checks)} checks",
            f"wrote {args.output} and its inputs in {inputs_dir}/", f"try: {run_line}"]
    return {"model": args.model, "output": args.output, "inputs": files,
            "original_nodes": found.original_nodes, "nodes": found.nodes,
            "checks": found.checks, "text": "\n".join(text)}
