"""What the integer-GEMM tests share (test_qgemm.py, test_qconv.py): the 8-bit types and their
ONNX element types (their fixture ``isa``, every integer-GEMM kernel this CPU has, is in
conftest.py)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

U8, S8 = np.uint8, np.int8
ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32,
        np.dtype(U8): TensorProto.UINT8, np.dtype(S8): TensorProto.INT8}
