"""ImageDecoder (schema: :mod:`mini_infer_core.ops.image`), decoding with Pillow.

Pillow is an optional dependency: ``pip install "mini-infer-cpu-plugins[image]"`` (or
``pip install pillow``). Without it a model with ImageDecoder builds, and running the node
raises an error that says what to install. A stream Pillow cannot decode gives an empty
``(0, 0, channels)`` image, as ONNX specifies.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import image as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin

__all__ = ["ImageDecoder"]

Array = NDArray[Any]

#: Pillow's mode for each pixel format (BGR is RGB reversed)
_MODES = {"RGB": "RGB", "BGR": "RGB", "Grayscale": "L"}


def _pillow() -> Any:
    try:
        import PIL.Image
    except ImportError:
        raise PluginInterfaceError(
            "ImageDecoder needs Pillow, an optional dependency of mini-infer-cpu-plugins: "
            "pip install \"mini-infer-cpu-plugins[image]\" (or pip install pillow)") from None
    return PIL.Image


def decode(data: bytes, pixel_format: str) -> Array:
    """``data`` decoded to ``(height, width, channels)`` uint8 (empty if it cannot be)."""
    image_module = _pillow()
    channels = 1 if pixel_format == "Grayscale" else 3
    try:
        with image_module.open(io.BytesIO(data)) as img:
            pixels = np.asarray(img.convert(_MODES[pixel_format]), np.uint8)
    except (OSError, ValueError, SyntaxError):  # what Pillow raises for streams it rejects
        return np.zeros((0, 0, channels), np.uint8)
    pixels = pixels.reshape(pixels.shape[0], pixels.shape[1], channels)
    return np.ascontiguousarray(pixels[:, :, ::-1] if pixel_format == "BGR" else pixels)


class ImageDecoder(CpuPlugin, schema.ImageDecoder):
    def compute(self, encoded: Array, *, pixel_format: str) -> Array:
        return decode(np.ascontiguousarray(encoded, np.uint8).tobytes(), pixel_format)
