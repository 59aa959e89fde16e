cimport dlbridge.cpp as cpp


cdef class Array:
    cdef cpp.tensor t
    cdef object __weakref__

    cdef cpp.tensor _copy_tensor(self) except *


# Wraps a C++ tensor as a Python Array (moving it).
cdef Array wrap(cpp.tensor& t)
