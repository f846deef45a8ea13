"""mini_infer_core.plugin.catalog: entries from classes, lazy creators, the generated block."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

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


def test_schema_kernels_makes_one_kernel_class_per_schema() -> None:
    from mini_infer_core.ops import schema_kernels
    from mini_infer_core.ops import softmax as activation

    class Kernel:
        def compute(self, x: Any, *, out: Any, axis: int) -> None:
            np.copyto(out, x)

    soft, log = schema_kernels(Kernel, activation.Softmax_1, activation.LogSoftmax_13,
                               module=__name__)
    for made, schema in ((soft, activation.Softmax_1), (log, activation.LogSoftmax_13)):
        assert (made.__name__, made.__qualname__, made.__module__) == (
            schema.__name__, schema.__name__, __name__)
        assert made.__mro__[1:3] == (Kernel, schema)
    assert (soft.op_type, soft.plugin_version, soft.max_opset, soft.coerce_2d) == (
        "Softmax", "1", 12, True)
    assert (log.op_type, log.plugin_version, log.min_opset, log.log) == (
        "LogSoftmax", "13", 13, True)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = np.empty_like(x)
    log("n", axis=-1).compute(x, out=out, axis=-1)
    np.testing.assert_array_equal(out, x)
    # a base that is no schema would not be found by kernel_catalog under its name
    with pytest.raises(TypeError, match="SoftmaxBase is not named like an operator schema"):
        schema_kernels(Kernel, activation.SoftmaxBase, module=__name__)
