"""Name the content type of files with Magika's trained model (shipped inside the ``magika``
wheel), run from a mini-infer engine file: the main job's result, which a person can check.

    python scripts/identify_files.py --model          # the path of Magika's model.onnx
    python scripts/identify_files.py magika.engine README.md scripts/setup.sh ...

For each file it prints the label the engine's scores give, its score, and the label Magika
itself gives (its onnxruntime session and its own rules), which should agree. The features are
Magika's (v3 models): the first and the last 1,024 bytes of the first and the last 4 KiB,
whitespace stripped, padded with token 256.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

import mini_infer_core as mi


def model_dir() -> Path:
    """The folder of Magika's default model inside the installed wheel."""
    import magika

    return Path(magika.__file__).parent / "models" / magika.Magika().get_model_name()


def features(path: Path, config: dict[str, Any]) -> np.ndarray[Any, np.dtype[np.int32]]:
    """Magika's model input for one file: ``beg_size`` + ``end_size`` byte values."""
    beg_size, end_size = config["beg_size"], config["end_size"]
    block, pad = config["block_size"], config["padding_token"]
    data = path.read_bytes()
    beg = list(data[:block].lstrip()[:beg_size])
    end = list(data[-block:].rstrip()[-end_size:]) if data else []
    padded = beg + [pad] * (beg_size - len(beg)) + [pad] * (end_size - len(end)) + end
    return np.array(padded, dtype=np.int32)


def main(argv: list[str]) -> int:
    if argv == ["--model"]:
        print(model_dir() / "model.onnx")
        return 0
    engine_path, files = argv[0], [Path(f) for f in argv[1:]]
    config = json.loads((model_dir() / "config.min.json").read_text())
    labels = config["target_labels_space"]
    engine = mi.Runtime().load_engine(engine_path)
    with engine.create_execution_context() as ctx:
        (scores,) = ctx.execute({"bytes": np.stack([features(f, config) for f in files])}
                                ).values()
    from magika import Magika

    theirs = Magika().identify_paths(files)
    width = max(len(str(f)) for f in files)
    for f, row, their in zip(files, scores, theirs, strict=True):
        best = int(np.argmax(row))
        print(f"{str(f):{width}s}  {labels[best]:10s} {row[best]:.3f}  "
              f"(Magika itself: {their.output.label})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
