from libc.stdint cimport uint64_t
from libcpp.optional cimport optional

cimport dlbridge.cpp as cpp


cdef object export_capsule(const cpp.tensor& t, bint versioned, uint64_t flags)
cdef cpp.tensor import_capsule(object capsule, bint* copied) except *
cdef object call_dlpack(object producer, object stream, object copy)
cdef optional[cpp.DLDevice] dlpack_device(object producer) except *
