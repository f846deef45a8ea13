"""The engine report: one self-contained HTML file showing an engine as built.

``mini-infer report MODEL_OR_ENGINE -o report.html`` and :meth:`Engine.report
<mini_infer_core.engine.Engine.report>` write it (a view of the engine, so of its layer: it
runs the engine's own execution contexts): the engine graph (nodes coloured by plugin
distribution or device, fused nodes expandable into the ONNX nodes they replaced, copies
between devices, precisions; pan, zoom, search), a profiled run's time per node, by operator
and by plugin (beside onnxruntime's own profile with ``compare="onnxruntime"``), the memory
plan's tensor lifetimes and peak, the build's facts (tactics, timing-cache hits, folded and
pruned nodes, the plugin distributions it is bound to) and, with ``diff``, what changed from
another engine. The page needs no network: @dagrejs/dagre (graph layout) and Vega/Vega-Lite
(charts) ship in this package at pinned versions with their licences (``assets/``) and are
inlined.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import InputError
from ._data import diff_data, engine_data, memory_data, onnxruntime_profile, profile_data

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["ASSETS", "report_data", "render_html", "write_report"]

#: the vendored libraries, in load order, and their pinned versions (licences beside them)
ASSETS = {"dagre.min.js": "@dagrejs/dagre 1.1.4", "vega.min.js": "vega 5.30.0",
          "vega-lite.min.js": "vega-lite 5.21.0"}


def random_feeds(engine: Engine, shapes: Mapping[str, tuple[int, ...]] | None = None,
                 seed: int = 0) -> dict[str, np.ndarray[Any, Any]]:
    """Random inputs for ``engine``: ``shapes`` for its dynamic inputs, else 1 per dynamic
    dimension (the profile is of those shapes)."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for spec in engine.inputs:
        shape = tuple((shapes or {}).get(spec.name) or
                      (d if isinstance(d, int) else 1 for d in spec.shape))
        dt = spec.dtype.numpy
        feeds[spec.name] = (rng.random(shape, dtype=np.float32).astype(dt) if dt.kind == "f"
                            else rng.integers(0, 2, shape).astype(dt))
    return feeds


def _bindings(engine: Engine, feeds: Mapping[str, Any]) -> dict[str, int]:
    """The symbolic input dimensions that ``feeds`` fix (a bare symbol per dimension)."""
    out: dict[str, int] = {}
    for spec in engine.inputs:
        actual = np.shape(feeds[spec.name]) if spec.name in feeds else ()
        for d, n in zip(spec.shape, actual, strict=False):
            if isinstance(d, str) and d.isidentifier():
                out.setdefault(d, int(n))
    return out


def report_data(engine: Engine, *, profile: bool = True, feeds: Mapping[str, Any] | None = None,
                runs: int = 10, compare: str | None = None, model: bytes | None = None,
                diff: Engine | None = None, diff_name: str = "", title: str = "",
                timing_cache: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Everything the report shows, as JSON-able data (see the module's docstring).
    ``timing_cache``: ``{"path", "nodes", "hits"}``, how many of the nodes with tactics a
    timing cache holds (the builder's :func:`~mini_infer_core.builder.tactics.cache_hits`)."""
    if compare not in (None, "onnxruntime"):
        raise InputError(f"report compare={compare!r}: only 'onnxruntime' is supported")
    if compare and model is None:
        raise InputError("comparing with onnxruntime needs the ONNX model: report the .onnx "
                         "file, not an engine file")
    data = engine_data(engine)
    data["title"] = title or engine.name
    feeds = dict(feeds) if feeds is not None else random_feeds(engine)
    data["memory"] = memory_data(engine, _bindings(engine, feeds))
    data["profile"], data["ort_profile"], data["profile_runs"] = None, None, runs
    if profile:
        data["profile"] = profile_data(engine, feeds, runs)
        data["inputs_profiled"] = {n: {"shape": list(np.shape(v)), "dtype": str(np.asarray(
            v).dtype)} for n, v in feeds.items()}
    if compare and model is not None:
        data["ort_profile"] = onnxruntime_profile(model, feeds, runs)
    data["timing_cache"] = dict(timing_cache) if timing_cache else None
    data["diff"] = None
    if diff is not None:
        data["diff"] = {"other": diff_name or diff.name, **diff_data(data, engine_data(diff))}
    return data


def _asset(name: str) -> str:
    text = resources.files(__name__).joinpath("assets", name).read_text(encoding="utf-8")
    # no source-map comment: the page asks for nothing outside itself
    return "\n".join(line for line in text.splitlines()
                     if not line.startswith("//# sourceMappingURL="))


def render_html(data: Mapping[str, Any]) -> str:
    """The report page for ``data`` (:func:`report_data`), every script and style inlined."""
    payload = json.dumps(data, default=str).replace("</", "<\\/")
    libs = "\n".join(f"<script>/* {v} */\n{_asset(n)}\n</script>" for n, v in ASSETS.items())
    template = resources.files(__name__).joinpath("assets", "report.html").read_text("utf-8")
    title = str(data.get("title", "engine"))
    for old, new in (("{{TITLE}}", _escape(title)), ("{{CSS}}", _asset("report.css")),
                     ("{{DATA}}", payload), ("{{LIBS}}", libs),
                     ("{{APP}}", _asset("report.js")),
                     ("{{SUB}}", _escape(_subtitle(data)))):
        template = template.replace(old, new)
    return template


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _subtitle(data: Mapping[str, Any]) -> str:
    e = data["engine"]
    dists = ", ".join(f"{d['name']} {d['version']}" for d in data["build"]["distributions"])
    return (f"{len(data['nodes'])} nodes on {e['device']}; inputs "
            + ", ".join(f"{t['name']} {t['shape']}" for t in e["inputs"])
            + (f"; plugins from {dists}" if dists else ""))


def write_report(engine: Engine, path: str | os.PathLike[str], **options: Any) -> Path:
    """Write the report of ``engine`` to ``path`` (options: :func:`report_data`'s); the file
    is written whole or not at all."""
    target = Path(path)
    html = render_html(report_data(engine, **options))
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(html, encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target
