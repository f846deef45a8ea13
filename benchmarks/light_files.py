"""Write onnx's nine light CNNs as files, for ``benchmarks/zoo.py --cache DIR``.

``light_models.py`` hands the models to both engines as ``ModelProto`` objects, which is what
its latency comparison needs; peak memory of a process that loads a model *file* and runs it
(``zoo.py --memory``) needs files. This writes each light model as the light-model benchmark
runs it (random, well-scaled weights from ``randomize_weights``, seed 0; the final Softmax
removed) to ``DIR/<name>.onnx`` (zoo.py reads the input from the model itself), so that

    python benchmarks/light_files.py /tmp/light
    python benchmarks/zoo.py --cache /tmp/light --threads 1 --quick --memory

prints mini-infer's and onnxruntime's peak RSS for each of them. The models come from the
installed onnx package's backend test data: nothing is downloaded.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import onnx

from mini_infer_core.testing.light_models import (
    LIGHT_MODELS,
    load_light_model,
    logits_model,
    randomize_weights,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="where the .onnx and .json files go")
    parser.add_argument("--seed", type=int, default=0, help="of the random weights")
    args = parser.parse_args(argv)
    args.folder.mkdir(parents=True, exist_ok=True)
    for name in LIGHT_MODELS:
        model = logits_model(randomize_weights(load_light_model(name), seed=args.seed))
        onnx.save(model, str(args.folder / f"{name}.onnx"))
        print(f"{name}: {args.folder / (name + '.onnx')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
