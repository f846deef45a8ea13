"""Importers: model formats → :class:`mini_infer_core.network.Network`."""

from .onnx_importer import graph_nodes, parse_onnx, tensor_value

__all__ = ["graph_nodes", "parse_onnx", "tensor_value"]
