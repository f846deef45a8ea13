"""``mini_infer_core._record.record``: the engine path's data classes made without
:mod:`dataclasses` (issue 30) behave as :func:`dataclasses.dataclass` makes them -- the
oracle here is dataclasses itself, on twin classes."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any, ClassVar

import pytest

from mini_infer_core._record import FrozenInstanceError, field, record, replace


@record(frozen=True)
class Spec:
    name: str
    shape: tuple[int, ...]
    kind: str = "activation"
    tags: list[str] = field(default_factory=list)
    count: ClassVar[int] = 0


@dataclasses.dataclass(frozen=True)
class SpecDC:
    name: str
    shape: tuple[int, ...]
    kind: str = "activation"
    tags: list[str] = dataclasses.field(default_factory=list)
    count: ClassVar[int] = 0


@record(slots=True)
class Step:
    plugin: Any
    inputs: list[Any] = field(default_factory=list)


@record
class Counted:
    value: int

    def __post_init__(self) -> None:
        self.double = self.value * 2


def _same_repr(ours: Any, theirs: Any) -> None:
    assert repr(ours) == repr(theirs).replace(type(theirs).__qualname__,
                                              type(ours).__qualname__)


def test_construction_repr_and_equality_are_dataclass_s() -> None:
    for args, kwargs in [(("x", (1, 2)), {}), (("x", (1,), "constant"), {}),
                         (("y",), {"shape": (), "tags": ["a"]})]:
        _same_repr(Spec(*args, **kwargs), SpecDC(*args, **kwargs))
    assert Spec("x", (1,)) == Spec("x", (1,), "activation", [])
    assert Spec("x", (1,)) != Spec("x", (2,))
    assert Spec("x", (1,)) != SpecDC("x", (1,))  # another class: not equal, as dataclass
    assert hash(Spec("x", (1,), tags=())) == hash(Spec("x", (1,), tags=()))  # type: ignore[arg-type]
    assert Spec("x", (1,)).tags is not Spec("x", (1,)).tags  # a factory per instance
    assert Spec.kind == SpecDC.kind == "activation" and "count" not in Spec.__match_args__
    assert Spec.__match_args__ == SpecDC.__match_args__  # type: ignore[attr-defined]


def test_wrong_arguments_raise_type_errors_as_dataclass_s() -> None:
    for args, kwargs in [((), {}), (("x", (), "k", [], 5), {}), (("x", ()), {"other": 1}),
                         (("x", ()), {"name": "y"})]:
        with pytest.raises(TypeError):
            SpecDC(*args, **kwargs)
        with pytest.raises(TypeError):
            Spec(*args, **kwargs)


def test_frozen_records_refuse_assignment() -> None:
    spec = Spec("x", (1,))
    with pytest.raises(FrozenInstanceError):
        spec.name = "y"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        spec.other = 1  # type: ignore[attr-defined]
    with pytest.raises(FrozenInstanceError):
        del spec.name  # type: ignore[misc]


def test_dataclasses_functions_accept_records() -> None:
    spec = Spec("x", (1,), tags=["t"])
    assert dataclasses.is_dataclass(spec)
    assert [f.name for f in dataclasses.fields(spec)] == \
        [f.name for f in dataclasses.fields(SpecDC)]
    assert dataclasses.asdict(spec) == dataclasses.asdict(SpecDC("x", (1,), tags=["t"]))
    other = dataclasses.replace(spec, kind="constant")
    assert type(other) is Spec and other == Spec("x", (1,), "constant", ["t"])


def test_slots_post_init_pickle_and_copy() -> None:
    step = Step("p")
    step.inputs.append(1)
    assert not hasattr(step, "__dict__") and Step.__slots__ == ("plugin", "inputs")
    assert pickle.loads(pickle.dumps(step)) == step and copy.deepcopy(step) == step
    spec = Spec("x", (1,))
    assert pickle.loads(pickle.dumps(spec)) == spec and copy.copy(spec) == spec
    counted = Counted(value=4)
    assert counted.double == 8 and Counted.__hash__ is None  # mutable: unhashable


def test_replace_is_dataclasses_replace() -> None:
    """``_record.replace`` (the build's, without importing dataclasses) makes what
    :func:`dataclasses.replace` makes of the twin dataclass, and refuses what it refuses."""
    spec, twin = Spec("x", (1, 2), tags=["t"]), SpecDC("x", (1, 2), tags=["t"])
    for changes in ({}, {"kind": "weight"}, {"shape": (3,), "tags": []}):
        got, want = replace(spec, **changes), dataclasses.replace(twin, **changes)
        assert type(got) is Spec and got is not spec
        assert dataclasses.astuple(got) == dataclasses.astuple(want)
    assert replace(spec).tags is spec.tags  # fields are passed on, not copied (as dataclasses)
    step = Step("p", [1])
    assert replace(step, inputs=[2]).inputs == [2] and replace(step).plugin == "p"
    with pytest.raises(TypeError):
        dataclasses.replace(twin, nope=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="nope"):
        replace(spec, nope=1)
