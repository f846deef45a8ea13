"""Fixtures the cpu_native tests share."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from mini_infer_cpu_native import _qgemm
from quant_support import each_isa
from threadpoolctl import threadpool_limits


@pytest.fixture(params=[1, 2])
def threads(request: pytest.FixtureRequest) -> Iterator[int]:
    """Runs the test at 1 and at 2 of the library's threads (the value: how many)."""
    with threadpool_limits(request.param, user_api="mini_infer"):
        yield request.param


@pytest.fixture
def count_calls(monkeypatch: pytest.MonkeyPatch) -> Callable[[Any, str, str], dict[str, int]]:
    """``count_calls(module, name, key)`` wraps ``module.name`` (for the test only) and returns
    ``{key: n}``, ``n`` the number of calls made through it so far."""
    def install(module: Any, name: str, key: str) -> dict[str, int]:
        count = {key: 0}
        real = getattr(module, name)

        def counted(*args: Any, **kw: Any) -> Any:
            count[key] += 1
            return real(*args, **kw)

        monkeypatch.setattr(module, name, counted)
        return count
    return install


@pytest.fixture
def count_enqueues(monkeypatch: pytest.MonkeyPatch) -> Callable[..., dict[str, int]]:
    """``count_enqueues(*classes)`` counts, by class name, the nodes each of ``classes`` ran
    through ``enqueue`` (for the test only): a step bound to its kept calls adds none."""
    def install(*classes: Any) -> dict[str, int]:
        counts: dict[str, int] = {}
        for cls in classes:
            real = cls.enqueue

            def counted(self: Any, *args: Any, _real: Any = real,
                        _name: str = cls.__name__) -> None:
                counts[_name] = counts.get(_name, 0) + 1
                _real(self, *args)

            monkeypatch.setattr(cls, "enqueue", counted)
        return counts
    return install


@pytest.fixture(params=["amx", "avx512vnni", "avxvnni", "avx2", "plain"])
def isa(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every kernel of the integer GEMM this CPU can run (test_qgemm.py, test_qconv.py)."""
    yield from each_isa(request.param, _qgemm.qsupported, _qgemm.use_qgemm_isa,
                        "integer GEMM")
