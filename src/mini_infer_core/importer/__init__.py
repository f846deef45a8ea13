"""Importers: model formats → :class:`mini_infer_core.network.Network`."""

from .onnx_importer import parse_onnx

__all__ = ["parse_onnx"]
