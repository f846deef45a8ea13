"""The small ("light") test CNNs that ship with onnx, made useful for testing an engine.

onnx installs nine small ImageNet CNNs under ``onnx/backend/test/data/light`` (opset 9,
IR version 3): AlexNet, DenseNet-121, Inception v1/v2, ResNet-50, ShuffleNet, SqueezeNet,
VGG-19 and ZFNet-512.  Their weights are not stored: each weight is produced at run time by
a ``ConstantOfShape`` node fed by an int64 shape initializer named ``<weight>__SHAPE``, with
a constant value such as 0.02.  With such weights every class gets (nearly) the same score,
so the softmax output is near-uniform, and a broken engine can easily reproduce it.

This module and :mod:`~mini_infer_core.testing.random_weights` hold pure functions on
:class:`onnx.ModelProto` (they import only numpy and onnx) to

* locate the models and their expected outputs (:func:`light_model_path`,
  :func:`expected_output`) and build the input onnx's backend runner uses
  (:func:`default_inputs`);
* replace the constant weights by random, well-scaled ones, so that the outputs are
  discriminative (:func:`randomize_weights`, defined in
  :mod:`~mini_infer_core.testing.random_weights` and re-exported here);
* expose the logits instead of the final softmax (:func:`logits_model`);
* drop the IR-3 convention of listing initializers as graph inputs
  (:func:`strip_initializer_inputs`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import ModelProto, TensorProto, numpy_helper

from ._onnx_graph import _consumers, _copy, _op
from .random_weights import randomize_weights

__all__ = [
    "LIGHT_MODELS",
    "default_inputs",
    "expected_output",
    "light_model_dir",
    "light_model_path",
    "load_light_model",
    "logits_model",
    "randomize_weights",
    "strip_initializer_inputs",
]

LIGHT_MODELS: tuple[str, ...] = (
    "bvlc_alexnet",
    "densenet121",
    "inception_v1",
    "inception_v2",
    "resnet50",
    "shufflenet",
    "squeezenet",
    "vgg19",
    "zfnet512",
)
"""Names of the light models, as in ``light_<name>.onnx``."""


# --------------------------------------------------------------------------- locations


def light_model_dir() -> Path:
    """Return the directory in the installed onnx package holding the light models."""
    return Path(onnx.__file__).resolve().parent / "backend" / "test" / "data" / "light"


def _canonical_name(name: str) -> str:
    short = name.removesuffix(".onnx").removeprefix("light_")
    if short not in LIGHT_MODELS:
        raise ValueError(f"unknown light model {name!r}; expected one of {', '.join(LIGHT_MODELS)}")
    return short


def light_model_path(name: str) -> Path:
    """Return the path of ``light_<name>.onnx``; ``name`` is one of :data:`LIGHT_MODELS`.

    A leading ``light_`` and a trailing ``.onnx`` are accepted and ignored.
    """
    return light_model_dir() / f"light_{_canonical_name(name)}.onnx"


def load_light_model(name: str) -> ModelProto:
    """Load the light model ``name`` (one of :data:`LIGHT_MODELS`)."""
    return onnx.load(str(light_model_path(name)))


def expected_output(name: str) -> np.ndarray:
    """Return the expected output stored beside the model (``light_<name>_output_0.pb``).

    It is the output of the original model (constant weights, final softmax) on
    :func:`default_inputs`.
    """
    path = light_model_dir() / f"light_{_canonical_name(name)}_output_0.pb"
    tensor = TensorProto()
    tensor.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(tensor)


def default_inputs(model: ModelProto) -> dict[str, np.ndarray]:
    """Build the input onnx's backend test runner feeds a model (``random=False``).

    For every graph input that is not an initializer: ``np.arange(n).reshape(shape) / n`` as
    float32, where dimensions without a ``dim_value`` count as 1 (see
    ``onnx.backend.test.runner.Runner.generate_dummy_data``).
    """
    initializers = {init.name for init in model.graph.initializer}
    feeds: dict[str, np.ndarray] = {}
    for value_info in model.graph.input:
        if value_info.name in initializers:
            continue
        tensor_type = value_info.type.tensor_type
        is_tensor = value_info.type.HasField("tensor_type")
        if not is_tensor or tensor_type.elem_type != TensorProto.FLOAT:
            raise NotImplementedError(
                f"input {value_info.name!r}: only float tensor inputs are supported"
            )
        shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in tensor_type.shape.dim)
        n = int(np.prod(shape, dtype=np.int64))
        feeds[value_info.name] = (np.arange(n).reshape(shape) / n).astype(np.float32)
    return feeds


# --------------------------------------------------------------------------- transforms


def logits_model(model: ModelProto) -> ModelProto:
    """Return a copy whose outputs are the logits instead of the final softmax.

    Every graph output produced by a ``Softmax`` node is replaced by that node's input
    (with the same float32 type and shape, as softmax keeps them), and the Softmax node is
    removed unless something else uses its result.  Graph outputs not produced by a Softmax
    are left alone: DenseNet-121, for instance, has no final softmax, so its output already
    is the logits and the copy is unchanged.
    """
    out = _copy(model)
    graph = out.graph
    nodes = list(graph.node)
    producers = {name: index for index, node in enumerate(nodes) for name in node.output}
    consumers = _consumers(nodes)
    output_names = [value_info.name for value_info in graph.output]
    removed: set[int] = set()
    logits_names: set[str] = set()
    for value_info in graph.output:
        index = producers.get(value_info.name)
        if index is None or _op(nodes[index]) != "Softmax":
            continue
        softmax = nodes[index]
        value_info.name = softmax.input[0]
        if not value_info.type.HasField("tensor_type"):
            value_info.type.tensor_type.elem_type = TensorProto.FLOAT
        logits_names.add(softmax.input[0])
        if not consumers.get(softmax.output[0]) and output_names.count(softmax.output[0]) == 1:
            removed.add(index)
    if removed:
        del graph.node[:]
        graph.node.extend(node for index, node in enumerate(nodes) if index not in removed)
    if logits_names:
        kept_value_info = [vi for vi in graph.value_info if vi.name not in logits_names]
        del graph.value_info[:]
        graph.value_info.extend(kept_value_info)
    return out


def strip_initializer_inputs(model: ModelProto) -> ModelProto:
    """Return a copy whose graph inputs no longer list the initializers.

    IR version 3 required every initializer to be a graph input too; since IR version 4 an
    initializer that is also an input is an overridable default.  The copy has only the real
    inputs, and its IR version is raised to at least 4, so the initializers are constants.
    """
    out = _copy(model)
    graph = out.graph
    initializers = {init.name for init in graph.initializer}
    real_inputs = [vi for vi in graph.input if vi.name not in initializers]
    del graph.input[:]
    graph.input.extend(real_inputs)
    out.ir_version = max(out.ir_version, 4)
    return out
