cimport dlbridge.cpp as cpp


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
