# cython: language_level=3
"""my_kernels: a kernel that takes any library's array through dlbridge."""
from libc.stdint cimport int64_t

from dlbridge cimport cpp

import dlbridge

# What the argument must be: 1-D float64, read-only access, host memory, any strides.
ctypedef cpp.view[double, cpp.ndim1, cpp.ro, cpp.cpu] vector


@dlbridge.annotate(x=cpp.describe(vector.demands()))
def total(x):
    """The sum of the elements of x (NumPy, PyTorch, JAX, dlbridge, a buffer)."""
    cdef cpp.array_argument[vector] arg = cpp.array_argument[vector](x, "total", "x")
    cdef vector v = arg.view()
    cdef double sum = 0
    cdef int64_t i
    with nogil:
        for i in range(v.shape(0)):
            sum += v(i)
    return sum
