"""dlbridge: zero-copy array exchange over DLPack 1.3.

``from_dlpack`` and ``asarray`` bring arrays in from NumPy, PyTorch, JAX,
CuPy or anything that speaks DLPack or the array interfaces; ``Array``
exports them again through ``__dlpack__``. Importing dlbridge imports no
array library.
"""
import os as _os

from dlbridge._array import Array, asarray, empty, from_dlpack, full, zeros
from dlbridge._runtime import build_info
from dlbridge._types import Device, DeviceType, DType

__version__ = build_info()["version"]

__all__ = [
    "Array", "DType", "Device", "DeviceType", "asarray", "build_info", "empty", "from_dlpack",
    "full", "get_include", "zeros",
]


def get_include() -> str:
    """The folder holding dlbridge's C++ headers (``#include <dlbridge/dlbridge.hpp>``)."""
    return _os.path.join(_os.path.dirname(__file__), "include")
