cimport dlbridge.cpp as cpp


# Both never change once made (__init__ runs once): arrays share them.
cdef class DType:
    cdef cpp.dtype value
    cdef bint initialised


cdef class Device:
    cdef cpp.device value
    cdef bint initialised


cdef DType dtype_from_cpp(cpp.dtype t)
cdef Device device_from_cpp(cpp.device d)
cpdef DType as_dtype(object spec)
cpdef Device as_device(object spec)
