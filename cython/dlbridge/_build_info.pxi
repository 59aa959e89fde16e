# Included by _array.pyx; uses from it: nothing.
# What this dlbridge was built with (in _array, beside the one module that links
# the CUDA backend, so the process holds one copy of the static CUDA runtime).
from libcpp cimport bool as cbool
from libcpp.string cimport string

cimport dlbridge.cpp as cpp

cdef extern from "dlbridge/build_info.hpp" namespace "dlb::python":
    const char* compiler
    const long cplusplus


# The backend or, where it was not built, the implementation that refuses
# GPU work (dlbridge/cuda/arrays.hpp): the same door as every GPU operation.
cdef extern from "dlbridge/cuda/runtime.hpp" namespace "dlb::cuda_runtime":
    int cuda_runtime_version "dlb::cuda_runtime::runtime_version"() noexcept
    int cuda_device_count "dlb::cuda_runtime::device_count"() noexcept
    string cuda_device_status "dlb::cuda_runtime::device_status"() except +


cdef extern from "dlbridge/cuda/arrays.hpp" namespace "dlb::cuda_runtime":
    cbool backend_built() noexcept


cdef extern from "dlbridge/version.hpp" namespace "dlb":
    const char* version


# dlbridge.__version__ alone: importing dlbridge asks CUDA nothing (build_info()
# does, and a process whose CUDA was initialised cannot fork children that use
# it), so that a process that never uses a GPU can.
_version = version.decode()


def build_info():
    """A dict describing this build: ``version``, ``dlpack_version``,
    ``compiler``, ``cpp_std``, ``cuda`` (backend compiled in),
    ``cuda_version`` (None without it), ``gpu_count`` and ``cuda_status``
    (why no GPU is usable, or "")."""
    cuda_version = None
    if backend_built():
        v = cuda_runtime_version()
        cuda_version = f"{v // 1000}.{v % 1000 // 10}"
    std = {202002: "c++20", 202302: "c++23"}.get(cplusplus, f"__cplusplus {cplusplus}")
    return {
        "version": version.decode(),
        "dlpack_version": f"{cpp.dlpack_major_version}.{cpp.dlpack_minor_version}",
        "compiler": compiler.decode(),
        "cpp_std": std,
        "cuda": bool(backend_built()),
        "cuda_version": cuda_version,
        "gpu_count": cuda_device_count(),
        "cuda_status": cuda_device_status().decode(),
    }
