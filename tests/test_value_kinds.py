"""The run-time checks and copies of non-tensor values (``plugin._kinds``) on sequences of
maps, which ZipMap makes hundreds of per run: a list of dicts of plain values passes both
in one pass, and anything else still takes the element-by-element path (arrays inside are
mapped, a non-dict element is named)."""

from __future__ import annotations

import numpy as np

from mini_infer_core.plugin import DataType
from mini_infer_core.plugin._kinds import ValueKind, check_value, map_tensors

SEQ_OF_MAPS = ValueKind(("sequence", "map"), DataType.INT64)


def test_a_list_of_dicts_of_floats_passes_and_is_handed_back_as_it_is() -> None:
    rows = [{0: 0.25, 1: 0.75}, {0: 1.0, 1: 0.0}]
    assert check_value(rows, SEQ_OF_MAPS, DataType.FLOAT, None) is None
    calls: list[object] = []
    got = map_tensors(lambda a: calls.append(a) or a, rows, SEQ_OF_MAPS)
    assert got == rows and got is not rows
    assert all(a is b for a, b in zip(got, rows, strict=True))
    assert calls == []  # no tensor inside: the function never runs
    assert map_tensors(np.asarray, [], SEQ_OF_MAPS) == []
    assert check_value([], SEQ_OF_MAPS, DataType.FLOAT, None) is None


def test_arrays_inside_the_maps_are_still_mapped() -> None:
    rows = [{0: 0.5}, {0: np.float32(2.0)}, {0: np.zeros(2, np.float32)}]
    got = map_tensors(lambda a: ("mapped", a.shape), rows, SEQ_OF_MAPS)
    assert got[0] == {0: 0.5}
    assert got[2] == {0: ("mapped", (2,))}
    assert got[1] == {0: ("mapped", ())}


def test_an_element_that_is_not_a_dict_is_named() -> None:
    problem = check_value([{0: 1.0}, [1.0]], SEQ_OF_MAPS, DataType.FLOAT, None)
    assert problem is not None and problem.startswith("element 1:") and "a dict" in problem
    assert map_tensors(lambda a: a, [{0: 1.0}, {1: 2.0}], SEQ_OF_MAPS) == [{0: 1.0}, {1: 2.0}]
