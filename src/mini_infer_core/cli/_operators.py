"""docs/operators.md, generated from the registry: every operator, domain, opsets, devices."""

from __future__ import annotations

from collections import defaultdict

from ..registry import PluginRegistry

__all__ = ["operators_markdown"]


def operators_markdown(reg: PluginRegistry, command: str = "mini-infer plugins --markdown"
                       ) -> str:
    """The operator table; ``command`` is the command line that generated it (named in the
    text, so that whoever regenerates it can run the same)."""
    rows: dict[tuple[str, str], list[str]] = defaultdict(list)
    for rec in reg.creators:
        c = rec.creator
        opsets = f"{c.min_opset}–{c.max_opset}" if c.max_opset else f"{c.min_opset}+"
        rows[(c.domain or "ai.onnx", c.op_type)].append(
            f"{opsets} | {', '.join(c.devices)} | `{c.plugin_namespace}::{c.name}` "
            f"v{c.plugin_version} | {rec.provider}")
    dists = ", ".join(f"{d.name} {d.version}" for d in reg.distributions
                      if d.status == "loaded")
    ops = sorted({op for _, op in rows})
    out = [
        "# Operators",
        "",
        f"Generated from the plugin registry by `{command}`",
        f"(distributions: {dists}). Do not edit by hand; `tests/test_operators_doc.py` checks",
        "that it is current.",
        "",
        f"{len(ops)} operators, {sum(len(v) for v in rows.values())} creators.",
        "",
        "| domain | operator | opsets | devices | plugin | distribution |",
        "|---|---|---|---|---|---|",
    ]
    for (domain, op), entries in sorted(rows.items()):
        for e in entries:
            out.append(f"| {domain} | {op} | {e} |")
    return "\n".join(out) + "\n"
