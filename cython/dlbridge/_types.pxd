cimport dlbridge.cpp as cpp


cdef class DType:
    cdef cpp.dtype value


cdef class Device:
    cdef cpp.device value


cdef DType dtype_from_cpp(cpp.dtype t)
cdef Device device_from_cpp(cpp.device d)
cpdef DType as_dtype(object spec)
cpdef Device as_device(object spec)
