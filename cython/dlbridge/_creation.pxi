# Included by _array.pyx; uses from it: wrap; empty_on, fill_on_device (dlbridge._backend); _element_value,
# _scalar_dtype, _scalar_once (_scalars.pxi).
# empty, zeros and full.
import operator

from libc.stdint cimport int64_t
from libc.string cimport memset
from libcpp.optional cimport optional
from libcpp.vector cimport vector

cimport dlbridge.cpp as cpp
from dlbridge._types cimport DType, as_device, as_dtype

cdef tuple _checked_shape(shape, DType dt, str name):
    """(shape as a tuple of ints, bytes its elements take), or the error
    `name` reports for a shape no array can have (shape.hpp: check_shape)."""
    if isinstance(shape, int) or hasattr(shape, "__index__"):
        shape = (shape,)
    try:
        shape = tuple([operator.index(e) for e in shape])
    except TypeError:
        raise TypeError(f"{name}: shape must be an int or a sequence of ints, got {shape!r}") from None
    count = 1
    for e in shape:
        count *= e
    nbytes = (count * dt.bits + 7) // 8
    cdef vector[int64_t] dims
    cdef bint fits = True
    for e in shape:
        fits = fits and e < (1 << 63)
        dims.push_back(min(max(e, -1), (1 << 63) - 1))
    cdef optional[cpp.shape_error] error = cpp.check_shape(cpp.extents_t(dims.data(), dims.size()), dt.value)
    cdef cpp.shape_defect defect
    if error.has_value():
        defect = error.value().defect
    elif not fits:  # an extent past int64: the size or the C-order strides overflow
        defect = cpp.shape_defect.size_overflow if count else cpp.shape_defect.strides_overflow
    else:
        return shape, nbytes
    if defect == cpp.shape_defect.too_many_axes:
        raise ValueError(f"{name}: expected ndim <= {cpp.max_ndim}, got {len(shape)}")
    if defect == cpp.shape_defect.negative_extent:
        raise ValueError(f"{name}: negative extents are not allowed, got shape {shape}")
    if defect == cpp.shape_defect.size_overflow:
        raise ValueError(f"{name}: shape {shape} of {dt.name} is too big: {nbytes} bytes do not fit in int64")
    raise ValueError(f"{name}: shape {shape} of {dt.name} is too big: its C-order strides do not fit in int64 "
                     f"(empty axes counted as extent 1)")


cdef cpp.tensor _allocate(shape, DType dt, device, str name) except *:
    cdef cpp.device where = cpp.device(cpp.kDLCPU, 0) if device is None else as_device(device).value
    shape, nbytes = _checked_shape(shape, dt, name)
    cdef vector[int64_t] dims = shape
    cdef cpp.tensor t
    try:
        if where.type == cpp.kDLCPU:
            empty_on(where, cpp.extents_t(dims.data(), dims.size()), dt.value, &t)
            return t
        with nogil:  # a CUDA allocation may wait for the GPU (pinned, managed, out of memory)
            empty_on(where, cpp.extents_t(dims.data(), dims.size()), dt.value, &t)
        return t
    except MemoryError:
        raise MemoryError(f"{name}: cannot allocate {nbytes} bytes for shape {shape} of {dt.name}") from None


cdef cpp.scalar _zero_bits(cpp.dtype type):
    """The value whose bits are all zero, as on the CPU: for float8_e8m0fnu,
    which has no zero, its smallest value 2**-127 (so it is for ml_dtypes too)."""
    return cpp.scalar.from_real(2.0**-127) if type.code == cpp.kDLFloat8_e8m0fnu else cpp.scalar.from_int(0)


def empty(shape, *, dtype=None, device=None):
    """A new C-contiguous array with uninitialised values (float64 by default)."""
    cdef cpp.tensor t = _allocate(shape, as_dtype("float64" if dtype is None else dtype), device, "empty")
    return wrap(t)


def zeros(shape, *, dtype=None, device=None):
    """A new C-contiguous array of zero bits (float64 by default)."""
    cdef cpp.tensor t = _allocate(shape, as_dtype("float64" if dtype is None else dtype), device, "zeros")
    cdef cpp.scalar zero
    if t.get_device().type != cpp.kDLCPU:
        zero = _zero_bits(t.type())
        with nogil:  # waits for the GPU in pinned and managed memory
            fill_on_device(t, zero)
        return wrap(t)
    with nogil:
        memset(t.data(), 0, t.nbytes())
    return wrap(t)


def full(shape, fill_value, *, dtype=None, device=None):
    """A new C-contiguous array filled with ``fill_value``; the dtype defaults
    to that of the value (bool, int64, float64 or complex128)."""
    fill_value = _scalar_once(fill_value)
    cdef DType dt = _scalar_dtype(fill_value) if dtype is None else as_dtype(dtype)
    # Checked before any memory is asked for.
    cdef cpp.scalar value = _element_value(dt.value, fill_value)
    cdef cpp.tensor t = _allocate(shape, dt, device, "full")
    cdef int64_t n = t.size()
    if n == 0:
        return wrap(t)
    if t.get_device().type != cpp.kDLCPU:
        with nogil:  # waits for the GPU in pinned and managed memory
            fill_on_device(t, value)
        return wrap(t)
    with nogil:
        cpp.fill(dt.value, t.data(), n, value)
    return wrap(t)
