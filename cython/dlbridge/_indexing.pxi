# Basic indexing (ints, slices, Ellipsis, None): views, never copies.
# Included by _array.pyx.

cdef object _index_int(k):
    if type(k) is int:
        return k
    # NumPy's bool scalars are refused like Python's: before NumPy 2.2 they
    # still had a (deprecated) __index__, which would make True mean 1.
    if not isinstance(k, (bool, Array)) and not (type(k).__module__ == "numpy" and type(k).__name__ == "bool"):
        try:
            return operator.index(k)
        except TypeError:
            pass
    raise IndexError(f"only integers, slices, Ellipsis and None are valid indices, "
                     f"got {type(k).__name__}")


cdef tuple _parse_key(key, int ndim):
    """The key as a tuple, after the checks that need no extent: at most one
    Ellipsis, no more ints and slices than `ndim` axes, and a result within
    max_ndim axes (checked before any axis is written). Returns the key and
    the number of axes its Ellipsis (or its end) stands for."""
    if not isinstance(key, tuple):
        key = (key,)
    cdef Py_ssize_t ints = 0, slices = 0, added = 0, ellipses = 0
    for k in key:
        if k is Ellipsis:
            ellipses += 1
        elif k is None:
            added += 1
        elif isinstance(k, slice):
            slices += 1
        else:
            _index_int(k)
            ints += 1
    if ellipses > 1:
        raise IndexError("an index can only have a single Ellipsis")
    if ints + slices > ndim:
        raise IndexError(f"too many indices: the array is {ndim}-dimensional, but {ints + slices} were indexed")
    # Every axis survives but those an int takes; each None adds one.
    if ndim - ints + added > cpp.max_ndim:
        raise IndexError(f"the result would have {ndim - ints + added} axes; at most {cpp.max_ndim} are allowed")
    return key, ndim - ints - slices


cdef int64_t _int_offset(k, int64_t n, int axis) except -1:
    """Elements from the start of an axis of extent `n` to index `k`
    (negative counts from the end)."""
    cdef int64_t i = _index_int(k)
    if i < -n or i >= n:
        raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
    return i + n if i < 0 else i


cdef int64_t _sliced_stride(step, int64_t stride, int64_t length, int axis) except? -1:
    """The stride of an axis sliced with `step`; it must fit in int64 unless
    the slice keeps one element at most (then the step is irrelevant)."""
    new_stride = step * stride
    if -2**63 <= new_stride < 2**63:
        return new_stride
    if length > 1:
        raise ValueError(f"slicing axis {axis} with step {step} needs a stride of {new_stride} "
                         f"elements, which does not fit in int64")
    return stride


cdef Array _index(Array a, key):
    """Basic indexing: ints, slices (any step), Ellipsis and None; a view."""
    cdef int ndim = a.t.ndim()
    cdef Py_ssize_t spanned
    key, spanned = _parse_key(key, ndim)
    cdef int64_t[64] dims
    cdef int64_t[64] steps
    cdef int out = 0
    cdef int axis = 0
    cdef int64_t offset = 0, length
    for k in key:
        if k is Ellipsis:
            for _ in range(spanned):
                dims[out] = a.t.shape(axis)
                steps[out] = a.t.stride(axis)
                out += 1
                axis += 1
        elif k is None:
            dims[out] = 1
            steps[out] = 0
            out += 1
        elif isinstance(k, slice):
            start, stop, step = k.indices(a.t.shape(axis))
            length = len(range(start, stop, step))
            if length > 0:
                offset += <int64_t>start * a.t.stride(axis)
            dims[out] = length
            steps[out] = _sliced_stride(step, a.t.stride(axis), length, axis)
            out += 1
            axis += 1
        else:
            offset += _int_offset(k, a.t.shape(axis), axis) * a.t.stride(axis)
            axis += 1
    while axis < ndim:
        dims[out] = a.t.shape(axis)
        steps[out] = a.t.stride(axis)
        out += 1
        axis += 1
    cdef cpp.extents_t new_shape = cpp.extents_t(dims, out)
    cdef cpp.extents_t new_strides = cpp.extents_t(steps, out)
    # Packed elements share bytes: a view must start at byte 0 and stay packed.
    if a.t.type().is_subbyte() and (offset != 0 or not cpp.is_c_contiguous(new_shape, new_strides)):
        raise TypeError(f"packed {a.dtype.name} arrays only support indexing that keeps them "
                        f"contiguous from the first element; convert to a wider dtype first")
    cdef char* data = <char*>a.t.data()
    if not a.t.type().is_subbyte():
        data += offset * <int64_t>a.t.type().itemsize()
    cdef cpp.tensor view = a.t.restrided(data, new_shape, new_strides)
    return _view(a, view)
