"""An engine is bound to the plugin distributions that built it.

Each node of an engine file records the distribution (name and version) whose creator made its
plugin. Another distribution may register the same ``(name, version, namespace)`` -- a fork, a
rival wheel -- and take over when the original is blocked or uninstalled; its kernel may
compute different numbers. Loading refuses such a substitute (:class:`PluginSubstituteError`)
unless the user allows it (``Runtime(allow_substitutes=True)``, ``mini-infer
--allow-plugin-substitutes``, ``MINI_INFER_ALLOW_PLUGIN_SUBSTITUTES=1``), and then warns
(:class:`PluginSubstituteWarning`). A newer or older version of the same distribution is no
substitute: the plugin's own version is its serialization contract.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from ..errors import PluginSubstituteError, PluginSubstituteWarning
from ..registry import PluginRegistry

__all__ = ["ALLOW_ENV", "allow_substitutes_default", "check_substitutes"]

#: environment switch that allows substitutes where the caller did not say
ALLOW_ENV = "MINI_INFER_ALLOW_PLUGIN_SUBSTITUTES"


def allow_substitutes_default() -> bool:
    return os.environ.get(ALLOW_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def _dist(name: str | None, version: str | None) -> str:
    if not name:
        return "a creator registered in process (no distribution)"
    return f"distribution {name} {version}" if version else f"distribution {name}"


def check_substitutes(label: str, nodes: list[dict[str, Any]], registry: PluginRegistry,
                      skip_namespace: str, allow: bool) -> list[str]:
    """Compare each node's recorded distribution with the one that provides its plugin now;
    raise on a substitute unless ``allow`` (then warn). Returns the substitutions found.
    Nodes without a recorded distribution (built with in-process creators) are not checked,
    nor those whose creator is missing (reported elsewhere)."""
    found: dict[tuple[str, str, str, str | None, str | None], list[str]] = {}
    for nd in nodes:
        p = nd["plugin"]
        recorded = p.get("distribution")
        if p["namespace"] == skip_namespace or not recorded:
            continue
        rec = registry.get_creator(p["name"], p["version"], p["namespace"])
        if rec is None or rec.distribution == recorded:
            continue
        key = (p["namespace"], p["name"], p["version"], rec.distribution,
               rec.distribution_version)
        found.setdefault(key, []).append(f"{nd['name']!r} ({nd['op_type']})")
    if not found:
        return []
    lines = []
    wanted = set()
    by_node = {(nd["plugin"]["namespace"], nd["plugin"]["name"], nd["plugin"]["version"]): nd
               for nd in nodes}
    for key, users in sorted(found.items(), key=lambda kv: kv[0][:3]):
        ns, name, version, dist, dist_version = key
        p = by_node[(ns, name, version)]["plugin"]
        built = _dist(p.get("distribution"), p.get("distribution_version"))
        rec_dv = p.get("distribution_version")
        wanted.add(f"{p['distribution']}=={rec_dv}" if rec_dv else str(p["distribution"]))
        lines.append(
            f"  node {users[0]}{f' and {len(users) - 1} more' if len(users) > 1 else ''}: "
            f"plugin {ns}::{name} v{version} was built by {built}, "
            f"but is now provided by {_dist(dist, dist_version)}")
    body = "\n".join(lines)
    if allow:
        text = (f"{label}: loading with substitute plugin distributions (allowed); results may "
                f"differ from the build's:\n{body}")
        warnings.warn(text, PluginSubstituteWarning, stacklevel=4)
        return lines
    raise PluginSubstituteError(
        f"{label}: the engine was built with other plugin distributions than the ones that "
        f"provide its plugins now; a substitute may compute different results:\n{body}\n"
        f"install the distribution(s) that built it (pip install {' '.join(sorted(wanted))}, "
        "and unblock them if `-p no:`/MINI_INFER_BLOCK_PLUGINS blocks them), rebuild the "
        "engine with the installed plugins, or allow the substitute: "
        "Runtime(allow_substitutes=True), `mini-infer --allow-plugin-substitutes`, "
        f"{ALLOW_ENV}=1")
