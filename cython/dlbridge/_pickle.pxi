# Included by _array.pyx; uses from it: Array, wrap, _export_buffer, _adopt_buffer;
# _checked_shape, _allocate (_creation.pxi).
# Pickling: Array.__reduce_ex__'s flat buffer and its inverse.
cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_FillInfo
from libc.stdint cimport int64_t
from libc.string cimport memcpy
from libcpp.vector cimport vector

cimport dlbridge.cpp as cpp
from dlbridge._types cimport DType, as_dtype

@cython.auto_pickle(False)
cdef class _Bytes:
    """The bytes of a C-contiguous CPU Array as one flat buffer, whatever its
    dtype (packed ones included): what Array.__reduce_ex__ pickles."""
    cdef Array a
    cdef bint readonly

    def __getbuffer__(self, Py_buffer* buffer, int flags):
        if self.a is None:  # made by _Bytes.__new__, which Python code can reach
            raise BufferError("this _Bytes holds no array: only Array.__reduce_ex__ makes one that does")
        PyBuffer_FillInfo(buffer, self, self.a.t.data(), self.a.t.nbytes(), self.readonly, flags)


def _from_pickle(data, str dtype, shape, bint readonly):
    """Array.__reduce_ex__'s inverse: the Array whose elements, in C order,
    are the bytes of `data` (any contiguous buffer). Shares them where it can;
    copies them where the buffer is read-only but the array was not."""
    cdef DType dt = as_dtype(dtype)
    cdef str name = "unpickling an Array"
    shape, nbytes = _checked_shape(shape, dt, name)
    cdef vector[int64_t] dims = shape
    cdef Py_buffer* view = _export_buffer(data, PyBUF_SIMPLE)
    cdef cpp.tensor t
    if view.len == nbytes and (readonly or not view.readonly):
        t = _adopt_buffer(view, dt.value, cpp.extents_t(dims.data(), dims.size()), cpp.extents_t(),
                          readonly or view.readonly)
        return wrap(t)
    try:
        if view.len != nbytes:
            raise ValueError(f"{name}: {dt.name} of shape {shape} takes {nbytes} bytes; the pickle holds {view.len}")
        t = _allocate(shape, dt, None, name)
        if nbytes:
            memcpy(t.data(), view.buf, nbytes)
    finally:
        cpp.release_buffer(view)
    return wrap(t)
