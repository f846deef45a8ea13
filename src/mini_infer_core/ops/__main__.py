"""``python -m mini_infer_core.ops [--check]``: regenerate (or check) the table of what the
schemas read from onnx.defs (see :mod:`mini_infer_core.ops._memo`)."""

import sys

from ._memo import main

sys.exit(main())
