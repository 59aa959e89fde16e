# cython: language_level=3
"""The backend: arrays on any device and the rule that orders GPU work on
them (dlbridge/cuda/arrays.hpp), build_info() and release_cuda_cache(). The
one module that links dlbridge_cuda, so the process holds one copy of the
static CUDA runtime; the others call the backend through _backend.pxd."""
from libc.stdint cimport int64_t, uint64_t
from libcpp cimport bool as cbool
from libcpp.string cimport string

cimport dlbridge.cpp as cpp
from dlbridge.cpp cimport raise_python_error


# backend.hpp: cuda_runtime's calls of the same name, their pinned and managed
# memory freed with the GIL released.
cdef extern from "dlbridge/backend.hpp" namespace "dlb::python":
    cpp.tensor _empty_on "dlb::python::empty_on"(cpp.device, cpp.extents_t, cpp.dtype) \
        except +raise_python_error nogil
    cpp.tensor _copy_to "dlb::python::copy_to"(const cpp.tensor&, cpp.device, cpp.dtype, cpp.cuda_stream) \
        except +raise_python_error nogil


cdef extern from "dlbridge/cuda/arrays.hpp" namespace "dlb::cuda_runtime":
    void _fill_on_device "dlb::cuda_runtime::fill_on_device"(const cpp.tensor&, const cpp.scalar&) \
        except +raise_python_error nogil
    cpp.tensor _lend "dlb::cuda_runtime::lend"(const cpp.tensor&, cpp.cuda_stream) except +raise_python_error nogil
    cpp.tensor _ordered_import "dlb::cuda_runtime::ordered_import"(const cpp.tensor&, cpp.cuda_stream) \
        except +raise_python_error nogil
    void _order_after_producer "dlb::cuda_runtime::order_after_producer"(const cpp.tensor&, cpp.cuda_stream) \
        except +raise_python_error nogil
    cpp.device _cuda_pointer_device "dlb::cuda_runtime::cuda_pointer_device"(const void*) except +raise_python_error
    cbool _inherited_across_fork "dlb::cuda_runtime::inherited_across_fork"(const cpp.tensor&) noexcept nogil
    uint64_t _release_cuda_cache "dlb::cuda_runtime::release_cuda_cache"() except +raise_python_error nogil
    cbool backend_built() noexcept


# Copies of more bytes than this release the GIL.
cdef int64_t _nogil_bytes = 1 << 16


cdef int empty_on(cpp.device where, cpp.extents_t shape, cpp.dtype type, cpp.tensor* out) except -1 nogil:
    out[0] = _empty_on(where, shape, type)
    return 0


cdef cpp.tensor copy_to(const cpp.tensor& t, cpp.device where, cpp.dtype type,
                        cpp.cuda_stream stream=cpp.legacy_default_stream) except *:
    cdef cpp.tensor out
    if t.nbytes() > _nogil_bytes or t.get_device().type != cpp.kDLCPU or where.type != cpp.kDLCPU:
        with nogil:
            out = _copy_to(t, where, type, stream)
    else:
        out = _copy_to(t, where, type, stream)
    return out


cdef int fill_on_device(const cpp.tensor& t, const cpp.scalar& value) except -1 nogil:
    _fill_on_device(t, value)
    return 0


cdef cpp.tensor lend(const cpp.tensor& t, cpp.cuda_stream stream) except *:
    return _lend(t, stream)


cdef int ordered_import(const cpp.tensor& t, cpp.cuda_stream producer, cpp.tensor* out) except -1 nogil:
    out[0] = _ordered_import(t, producer)
    return 0


cdef int order_after_producer(const cpp.tensor& t, cpp.cuda_stream producer) except -1 nogil:
    _order_after_producer(t, producer)
    return 0


cdef cpp.device cuda_pointer_device(const void* p) except *:
    return _cuda_pointer_device(p)


cdef bint inherited_across_fork(const cpp.tensor& t) noexcept nogil:
    return _inherited_across_fork(t)


cdef cpp.copy_state* copy_state() noexcept nogil:
    return &cpp.copy_state_in_use()


def release_cuda_cache():
    """Gives the CUDA device memory dlbridge keeps for its next allocations,
    and no array uses, back to the driver, on every GPU; returns how many bytes
    that was. dlbridge's cache is its own: ``torch.cuda.empty_cache()`` (or
    CuPy's ``free_all_blocks()``) does not release it, nor this one theirs.
    First waits for all work queued on the GPUs to finish; do not call it while
    another thread captures a CUDA graph. An allocation that finds a GPU out
    of memory releases the cache itself and tries once more. Returns 0 where
    no GPU is usable (nothing is cached), or dlbridge was built without CUDA."""
    cdef uint64_t released
    with nogil:
        released = _release_cuda_cache()
    return released


# What this dlbridge was built with: the extension's compiler, and the
# backend's answers (runtime.hpp), through the same door as every GPU call.
cdef extern from "dlbridge/build_info.hpp" namespace "dlb::python":
    const char* compiler
    const long cplusplus


cdef extern from "dlbridge/cuda/runtime.hpp" namespace "dlb::cuda_runtime":
    int cuda_runtime_version "dlb::cuda_runtime::runtime_version"() noexcept
    int cuda_device_count "dlb::cuda_runtime::device_count"() noexcept
    string cuda_device_status "dlb::cuda_runtime::device_status"() except +


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
