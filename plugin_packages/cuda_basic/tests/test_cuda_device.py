"""The CUDA package without a GPU: discovery and an explained unavailability."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from mini_infer_core.errors import DeviceError
from mini_infer_core.registry import discover


def test_cuda_device_is_discovered_and_explains_its_availability() -> None:
    reg = discover()
    dist = reg.distribution("mini-infer-cuda-plugins")
    assert dist is not None and dist.status == "loaded", dist
    dev = reg.get_device("cuda")
    assert dev is not None
    ok, reason = dev.availability()
    if importlib.util.find_spec("cupy") is None:
        assert not ok and "CuPy is not installed" in reason and "[cuda12]" in reason
    assert ok or reason
    # in a fresh interpreter: an earlier test of this process may have imported CuPy
    code = ("import sys\nfrom mini_infer_core.registry import discover\n"
            "discover().get_device('cuda').availability()\n"
            "assert 'cupy' not in sys.modules, 'discovery and availability imported CuPy'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_using_an_unavailable_cuda_device_is_a_clear_error() -> None:
    dev = discover().get_device("cuda")
    assert dev is not None
    if dev.availability()[0]:
        pytest.skip("a CUDA device is available here; this checks the no-GPU path")
    with pytest.raises(DeviceError, match="unavailable"):
        dev.allocate(16)
