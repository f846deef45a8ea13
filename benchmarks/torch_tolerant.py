"""Import torchvision next to a torch it was not built for (for the export scripts).

PyPI's torchvision wheel is built against CUDA torch; next to the CPU torch the export venvs
use, its compiled operators (nms, roi_align, ...) do not load and its ``import`` fails in
``torch.library.register_fake``. ``import_torchvision`` lets those registrations skip the
operators that do not exist while torchvision is imported. Used by ``benchmarks/zoo_export.py``
and ``scripts/export_test_models.py``; it needs torch, which the project's own venv lacks.
"""

from __future__ import annotations

from typing import Any

__all__ = ["import_torchvision"]


def import_torchvision(torch: Any) -> Any:
    """``import torchvision`` with ``torch.library.register_fake`` tolerating missing operators."""
    original = torch.library.register_fake

    def tolerant(op: Any, func: Any = None, /, *args: Any, **kwargs: Any) -> Any:
        def apply(f: Any) -> Any:
            try:
                return original(op, f, *args, **kwargs)
            except Exception:  # an operator whose compiled library did not load
                return f

        return apply(func) if func is not None else apply

    torch.library.register_fake = tolerant
    try:
        import torchvision
        import torchvision.extension
    finally:
        torch.library.register_fake = original
    return torchvision
