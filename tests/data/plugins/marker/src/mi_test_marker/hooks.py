"""Writes a marker file when imported, so tests can prove it was never imported."""

import os
import pathlib

_marker = os.environ.get("MI_TEST_MARKER_FILE")
if _marker:
    pathlib.Path(_marker).write_text("imported")
