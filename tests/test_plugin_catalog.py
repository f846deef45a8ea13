"""mini_infer_core.plugin.catalog: entries from classes, lazy creators, the generated block."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from mini_infer_core.plugin import UnaryPlugin, fields_from_values
from mini_infer_core.plugin import catalog as cat


class Twice(UnaryPlugin):
    domain = "com.test"
    attributes = {"k": 2.0}

    def compute(self, x: Any, *, out: Any, k: float) -> None:
        np.multiply(x, k, out=out)


def test_entries_lazy_creators_and_the_generated_block(tmp_path: Path) -> None:
    (entry,) = cat.catalog_entries([Twice])
    assert entry == {"target": f"{__name__}:Twice", "name": "Twice", "op_type": "Twice",
                     "version": "1", "min_opset": 1, "max_opset": None, "fields": ("k",)}
    module = tmp_path / "gen_catalog.py"
    module.write_text("from typing import Any\n# BEGIN GENERATED\nCATALOG: list = []\n"
                      "# END GENERATED\n")
    cat.write_catalog(module, [entry])
    sys.path.insert(0, str(tmp_path))
    try:
        import gen_catalog  # type: ignore[import-not-found]

        assert gen_catalog.CATALOG == [entry]
    finally:
        sys.path.remove(str(tmp_path))
    (creator,) = cat.lazy_creators([entry], namespace="test", devices=("cpu",),
                                   domain="com.test")
    assert not creator.loaded  # type: ignore[attr-defined]
    plugin = creator.create_plugin("n", fields_from_values({"k": 3.0}))
    assert creator.loaded and plugin.attrs == {"k": 3.0}  # type: ignore[attr-defined]
