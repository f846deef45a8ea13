"""Image decoding: ImageDecoder (opset 20).

The encoded bytes (a 1-D UINT8 tensor) become a ``(height, width, channels)`` UINT8 image,
channels 3 for ``pixel_format`` "RGB" or "BGR" and 1 for "Grayscale"; height and width are
known once the stream is decoded (``data_dependent``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import PluginInterfaceError
from ..plugin import DataType, DimsExprs
from ..plugin.shapes import Shapes
from ._common import ranked
from ._schema import Op

__all__ = ["ImageDecoder"]

#: channels per pixel format
CHANNELS = {"RGB": 3, "BGR": 3, "Grayscale": 1}


class ImageDecoder(Op):
    """Decode BMP, JPEG, JPEG 2000, TIFF, PNG, WebP or PNM bytes (an empty image where the
    stream cannot be decoded)."""

    data_dependent = True
    dtypes = (DataType.UINT8,)

    def setup(self) -> None:
        if self.attrs["pixel_format"] not in CHANNELS:
            raise PluginInterfaceError(
                f"ImageDecoder: pixel_format {self.attrs['pixel_format']!r} is not one of "
                f"{', '.join(CHANNELS)}")

    @property
    def channels(self) -> int:
        return CHANNELS[self.attrs["pixel_format"]]

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> Shapes:
        ranked("ImageDecoder", inputs, 0, 1, "the encoded stream (1-D)")
        return [[self.dynamic_dim("height"), self.dynamic_dim("width"), self.channels]]

    def output_types(self, input_types: Sequence[DataType | None]) -> list[DataType]:
        return [DataType.UINT8]
