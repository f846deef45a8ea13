"""``mini-infer report MODEL_OR_ENGINE -o report.html``: the engine report
(:mod:`mini_infer_core.report`) of an engine file, or of the engine built from an ONNX model."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..registry import PluginRegistry
from . import _args

__all__ = ["command"]


def _engine(path: str, args: argparse.Namespace, reg: PluginRegistry) -> tuple[Any, bytes | None]:
    """The engine of ``path`` and, for an ONNX model, its bytes (onnxruntime's profile)."""
    from ..engine.format import is_engine_file

    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file" if not os.path.exists(path)
                         else f"{path}: is a folder; give an .onnx or engine file")
    if is_engine_file(path):
        from ..runtime import Runtime

        engine = Runtime(reg).load_engine(path)
        _args.check_engine_device(path, engine, args.device if getattr(
            args, "device_given", False) else None)
        return engine, None
    from ..builder import BuilderConfig
    from .bench import build_for_shapes

    config = BuilderConfig(device=args.device, time_tactics=not args.no_tactic_timing)
    engine = build_for_shapes(reg, path, config, _args.parse_shapes(args.shape))
    return engine, Path(path).read_bytes()


def command(args: argparse.Namespace, reg: PluginRegistry) -> dict[str, Any]:
    """Run ``mini-infer report``; the result's ``text`` is what the CLI prints."""
    from ..engine.report import write_report

    _args.check_output_path(args.output, "-o", "report")
    if args.runs < 1:
        raise InputError(f"--runs {args.runs}: at least 1 profiled run")
    if args.diff and not os.path.isfile(args.diff):
        raise InputError(f"--diff {args.diff}: no such file")
    if args.timing_cache and not os.path.isfile(args.timing_cache):
        raise InputError(f"--timing-cache {args.timing_cache}: no such file")
    engine, model = _engine(args.model, args, reg)
    if args.compare and model is None:
        raise InputError(f"--compare onnxruntime: {args.model} is an engine file; onnxruntime "
                         "profiles the ONNX model: report the .onnx file")
    other = _engine(args.diff, args, reg)[0] if args.diff else None
    feeds = _args.feeds(args, engine)
    hits = None
    if args.timing_cache:
        from ..builder.tactics import cache_hits
        from ..builder.timing_cache import open_timing_cache

        cache = open_timing_cache(args.timing_cache)
        hits = cache_hits(engine, cache) if cache is not None else None
    path = write_report(engine, args.output, profile=not args.no_profile, feeds=feeds,
                        runs=args.runs, compare=args.compare, model=model, diff=other,
                        diff_name=args.diff or "", title=Path(args.model).name,
                        timing_cache=hits)
    size = path.stat().st_size
    return {"report": str(path), "bytes": size, "nodes": len(engine.nodes),
            "text": f"wrote {path} ({size / 2**20:.1f} MiB, {len(engine.nodes)} nodes): open it "
                    "in a browser (it needs no network)"}
