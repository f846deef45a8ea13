"""Listing plugins (discovery, the lazy creators, the CLI listing) imports neither CuPy nor a
kernel module; the first use of a creator imports its kernel module, still without CuPy."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap


def _run(code: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


HEAVY = 'heavy = sorted(m for m in sys.modules if m.split(".")[0] == "cupy" or ' \
        'm.startswith("mini_infer_cuda_plugins.ops"))'


def test_hooks_and_the_registry_listing_import_no_cupy_and_no_kernels() -> None:
    heavy = _run(f"""
        import contextlib, io, json, sys
        from mini_infer_cuda_plugins import hooks
        creators = hooks.plugin.mini_infer_creators()
        assert creators and all(c.devices == ("cuda",) for c in creators)
        hooks.plugin.mini_infer_devices()[0].availability()
        from mini_infer_core.registry import discover
        reg = discover()
        assert any(c.creator.plugin_namespace == "mini_infer.cuda"
                   for c in reg.candidates("", "Conv", "cuda"))
        from mini_infer_core.cli.main import main
        with contextlib.redirect_stdout(io.StringIO()):
            main(["plugins"])
        {HEAVY}
        print(json.dumps(heavy))
    """)
    assert heavy == []


def test_creating_a_plugin_imports_its_kernel_module_but_not_cupy() -> None:
    heavy = _run(f"""
        import json, sys
        from mini_infer_core.plugin import fields_from_values
        from mini_infer_cuda_plugins.catalog import lazy_creators
        conv = next(c for c in lazy_creators() if c.op_type == "Conv")
        conv.create_plugin("c", fields_from_values({{"group": 1}}))
        {HEAVY}
        print(json.dumps(heavy))
    """)
    assert "mini_infer_cuda_plugins.ops.conv" in heavy
    assert not [m for m in heavy if m.split(".")[0] == "cupy"]
