# Included by _array.pyx; uses from it: Array, _view.
# Basic indexing (ints, slices, Ellipsis and None): views, never copies.
#
# A key is read once: _key_entries copies it into a list of exact values
# before anything is checked, so a tuple subclass whose iteration, or an
# object whose __index__, answers differently each time is checked and used
# as the one answer it gave. The checks bound the axes of the result and the
# axes read; _axes and _axis_read bound them again where they are written
# and read.
import operator

from libc.stdint cimport int64_t

cimport dlbridge.cpp as cpp


# The axes of a view being built: extents and strides, at most _axes_size.
cdef enum:
    _axes_size = 64

cdef extern from *:
    """
    static_assert(dlb::max_ndim == 64, "_indexing.pxi: _axes_size must be dlb::max_ndim");
    """

cdef struct _axes:
    int n
    int64_t extent[_axes_size]
    int64_t stride[_axes_size]


cdef inline int _add_axis(_axes* out, int64_t extent, int64_t stride) except -1:
    if out.n >= _axes_size:
        raise IndexError(f"the result would have more than {_axes_size} axes; at most {cpp.max_ndim} are allowed")
    out.extent[out.n] = extent
    out.stride[out.n] = stride
    out.n += 1
    return 0


cdef inline int _axis_read(const cpp.tensor& t, int axis) except -1:
    """`axis`, refused unless t has it: the one place indexing reads an axis."""
    if not 0 <= axis < t.ndim():
        raise IndexError(f"too many indices: the array is {t.ndim()}-dimensional")
    return axis


cdef object _index_int(k):
    if type(k) is int:
        return k
    # NumPy's bool scalars are refused like Python's: before NumPy 2.2 they
    # still had a (deprecated) __index__, which would make True mean 1.
    if not isinstance(k, (bool, Array)) and not (type(k).__module__ == "numpy" and type(k).__name__ == "bool"):
        try:
            return operator.index(k)  # an exact int, whatever k's type
        except TypeError:
            pass
    raise IndexError(f"only integers, slices, Ellipsis and None are valid indices, "
                     f"got {type(k).__name__}")


cdef list _key_entries(key):
    """The key read once: a list of its entries, ints made exact ints."""
    cdef list entries = list(key) if isinstance(key, tuple) else [key]
    for i, k in enumerate(entries):
        if not (k is None or k is Ellipsis or isinstance(k, slice)):
            entries[i] = _index_int(k)
    return entries


cdef Py_ssize_t _spanned_axes(list entries, int ndim) except -1:
    """The axes the key's Ellipsis (or its end) stands for, after the checks
    that need no extent: at most one Ellipsis, no more ints and slices than
    `ndim` axes, and a result within max_ndim axes."""
    cdef Py_ssize_t ints = 0, slices = 0, added = 0, ellipses = 0
    for k in entries:
        if k is Ellipsis:
            ellipses += 1
        elif k is None:
            added += 1
        elif isinstance(k, slice):
            slices += 1
        else:
            ints += 1
    if ellipses > 1:
        raise IndexError("an index can only have a single Ellipsis")
    if ints + slices > ndim:
        raise IndexError(f"too many indices: the array is {ndim}-dimensional, but {ints + slices} were indexed")
    # Every axis survives but those an int takes; each None adds one.
    if ndim - ints + added > cpp.max_ndim:
        raise IndexError(f"the result would have {ndim - ints + added} axes; at most {cpp.max_ndim} are allowed")
    return ndim - ints - slices


cdef int64_t _int_offset(i, int64_t n, int axis) except -1:
    """Elements from the start of an axis of extent `n` to index `i`, an
    exact int of any size (negative counts from the end)."""
    if not -n <= i < n:
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
    cdef list entries = _key_entries(key)
    cdef Py_ssize_t spanned = _spanned_axes(entries, ndim)
    cdef _axes out
    out.n = 0
    cdef int axis = 0
    cdef int64_t offset = 0, length
    for k in entries:
        if k is Ellipsis:
            for _ in range(spanned):
                _add_axis(&out, a.t.shape(_axis_read(a.t, axis)), a.t.stride(axis))
                axis += 1
        elif k is None:
            _add_axis(&out, 1, 0)
        elif isinstance(k, slice):
            start, stop, step = k.indices(a.t.shape(_axis_read(a.t, axis)))
            length = len(range(start, stop, step))
            if length > 0:
                offset += <int64_t>start * a.t.stride(axis)
            _add_axis(&out, length, _sliced_stride(step, a.t.stride(axis), length, axis))
            axis += 1
        else:
            offset += _int_offset(k, a.t.shape(_axis_read(a.t, axis)), axis) * a.t.stride(axis)
            axis += 1
    while axis < ndim:
        _add_axis(&out, a.t.shape(axis), a.t.stride(axis))
        axis += 1
    cdef cpp.extents_t new_shape = cpp.extents_t(out.extent, out.n)
    cdef cpp.extents_t new_strides = cpp.extents_t(out.stride, out.n)
    # Packed elements share bytes: a view must start at byte 0 and stay packed.
    if a.t.type().is_subbyte() and (offset != 0 or not cpp.is_c_contiguous(new_shape, new_strides)):
        raise TypeError(f"packed {a.dtype.name} arrays only support indexing that keeps them "
                        f"contiguous from the first element; convert to a wider dtype first")
    cdef char* data = <char*>a.t.data()
    if not a.t.type().is_subbyte():
        data += offset * <int64_t>a.t.type().itemsize()
    cdef cpp.tensor view = a.t.restrided(data, new_shape, new_strides)
    return _view(a, view)
