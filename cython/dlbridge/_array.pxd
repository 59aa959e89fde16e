from cpython.object cimport PyObject
from libc.stdint cimport int32_t, int64_t

cimport dlbridge.cpp as cpp
from dlbridge._types cimport DType


cdef class Array:
    # Empty (has_value() false) until __init__ or wrap() sets it, and then
    # never changed: views, exports and released buffers point into it.
    cdef cpp.tensor t
    cdef object __weakref__
    # Always None: Cython makes a type collectable only when it has an object
    # field, and _array.pyx replaces the collector's slots to follow `t`.
    cdef object _gc_anchor


# Wraps a C++ tensor as a Python Array (moving it).
cdef Array wrap(cpp.tensor& t)
# Moves a C++ tensor into the currency of `like`, zero copy: a base-class
# numpy.ndarray for an ndarray (or subclass), a torch.Tensor for a torch
# tensor (its DLPack C exchange table), an array of like's library through
# its from_dlpack (JAX, CuPy), else a dlbridge.Array. BufferError where that
# library cannot hold the array truthfully (device memory for NumPy, read-only
# data for PyTorch, a dtype NumPy lacks).
cdef object wrap_like(cpp.tensor& t, object like)


# -- The seam of dlbridge's own modules (dlbridge._importers cimports these);
# private: no consumer may rely on them.

# Refuses an Array that holds no memory (made by Array.__new__ alone). Not
# inline: a consumer's module compiles the inline functions of this file,
# and would import what they call, which no consumer should depend on.
cdef int _require(Array a) except -1


# wrap(t) for a view of base's memory, and a view of all of it.
cdef Array _view(Array base, cpp.tensor& t)
cdef Array _whole_view(Array a)


# The array API's copy argument, converted once at each door (from_dlpack,
# asarray, __dlpack__); inline, and calling nothing of this module.
cdef enum _copy_mode:
    _copy_if_needed  # copy=None
    _copy_always     # copy=True
    _copy_never      # copy=False


cdef inline _copy_mode _as_copy_mode(copy) except *:
    """True, False or None; TypeError otherwise."""
    if copy is None:
        return _copy_if_needed
    if type(copy) is bool:
        return _copy_always if copy else _copy_never
    raise TypeError(f"copy must be True, False or None, got {copy!r}")


# The release of memory a Python object keeps alive (cpp.release_object,
# this module's copy). The collector follows such an owner only where the
# tensor's keeper holds this very function (python/core.hpp:
# collectable_owner): each shared object has a copy of its own of an inline
# function, so dlbridge's other modules adopt memory with this one.
cdef cpp.release_fn _object_release() noexcept

# A buffer export in a Py_buffer of its own, and a CPU tensor on its memory
# (which releases it).
cdef Py_buffer* _export_buffer(obj, int flags) except NULL
cdef cpp.tensor _adopt_buffer(Py_buffer* view, cpp.dtype t, cpp.extents_t shape, cpp.extents_t strides,
                              bint readonly) except *

# Python scalars: their kind, their value read once, as an element, and the
# dtype NumPy infers for a list of them.
cdef int _scalar_kind(value) except -1
cdef object _scalar_once(value)
cdef cpp.scalar _element_value(cpp.dtype t, value) except *
cdef DType _common_dtype(list leaves)

cdef int64_t _stream_int64(stream) except? -1

# DLPack C exchange tables: dlbridge's own, and a producer type's (cached).
cdef const cpp.DLPackExchangeAPI* _own_exchange_api() noexcept
cdef const cpp.DLPackExchangeAPI* _type_exchange_api(object x) except? NULL
cdef int _torch_state_checked(object x, bint complex_data=*, bint float_data=*) except -1
cdef int _check_slot(int status, object x, str slot) except -1
# Makes `error` this thread's pending Python exception; returns -1.
cdef int _fail(error) noexcept

# The argument API's slots that make arrays (dlbridge/python/returns.hpp).
cdef PyObject* _slot_wrap(cpp.tensor* t) noexcept
cdef PyObject* _slot_wrap_like(cpp.tensor* t, PyObject* like) noexcept
cdef int _slot_zeros(cpp.device where, const int64_t* shape, int32_t ndim, cpp.dtype type,
                     cpp.tensor* out) noexcept
