"""dlbridge: zero-copy array exchange over DLPack 1.3.

``from_dlpack`` and ``asarray`` bring arrays in from NumPy, PyTorch, JAX,
CuPy or anything that speaks DLPack or the array interfaces; ``Array``
exports them again through ``__dlpack__``. Importing dlbridge imports no
array library.
"""
import os as _os

from dlbridge._array import Array, empty, full, get_copy_threads, set_copy_threads, zeros
from dlbridge._backend import _version as __version__
from dlbridge._backend import build_info, release_cuda_cache
from dlbridge._importers import asarray, from_dlpack
from dlbridge._signatures import annotate
from dlbridge._types import Device, DeviceType, DType

__all__ = [
    "Array", "DType", "Device", "DeviceType", "annotate", "asarray", "build_info", "empty", "from_dlpack",
    "full", "get_cmake_dir", "get_copy_threads", "get_include", "get_pkgconfig_dir", "release_cuda_cache",
    "set_copy_threads", "zeros",
]


def get_include() -> str:
    """The folder holding dlbridge's C++ headers (``#include <dlbridge/dlbridge.hpp>``)."""
    return _os.path.join(_os.path.dirname(__file__), "include")


def get_pkgconfig_dir() -> str:
    """The folder holding ``dlbridge.pc``, the pkg-config file for C++ builds
    (the package's own folder).

    With it on ``PKG_CONFIG_PATH``, ``pkg-config --cflags dlbridge`` and Meson's
    ``dependency('dlbridge')`` find the headers. Its paths are relative to the
    file, so it works wherever dlbridge is installed.
    """
    return _os.path.dirname(__file__)


def get_cmake_dir() -> str:
    """The folder holding ``dlbridgeConfig.cmake``, for CMake builds:
    ``-Ddlbridge_DIR=<it>``, then ``find_package(dlbridge CONFIG)`` and the
    target ``dlbridge::dlbridge``."""
    return _os.path.join(_os.path.dirname(__file__), "lib", "cmake", "dlbridge")
