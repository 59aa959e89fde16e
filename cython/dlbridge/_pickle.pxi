# Pickling: Array.__reduce_ex__'s flat buffer and its inverse.
# Included by _array.pyx.

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
    cdef Py_buffer* view = <Py_buffer*>malloc(sizeof(Py_buffer))
    if view == NULL:
        raise MemoryError()
    try:
        PyObject_GetBuffer(data, view, PyBUF_SIMPLE)
    except BaseException:
        free(view)
        raise
    cdef cpp.tensor t
    cdef vector[int64_t] dims = shape
    cdef bint handed_over = False
    try:
        if view.len != nbytes:
            raise ValueError(f"{name}: {dt.name} of shape {shape} takes {nbytes} bytes; the pickle holds {view.len}")
        if readonly or not view.readonly:
            handed_over = True  # adopt releases the buffer from here on, on failure too
            t = cpp.tensor.adopt(view.buf, dt.value, cpp.device(cpp.kDLCPU, 0), cpp.extents_t(dims.data(), dims.size()),
                                 cpp.extents_t(), readonly or view.readonly, cpp.release_buffer, view)
        else:
            t = _allocate(shape, dt, None, name)
            if nbytes:
                memcpy(t.data(), view.buf, nbytes)
    finally:
        if not handed_over:
            PyBuffer_Release(view)
            free(view)
    return wrap(t)
