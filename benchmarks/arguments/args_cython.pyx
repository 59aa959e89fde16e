# cython: language_level=3, boundscheck=False, wraparound=False
"""The Cython routes of benchmarks/arguments.py: each function takes one 2-D
float64 C-contiguous host array and returns the low bit of its first
element's address, so that every route has to reach the data."""
cimport numpy as cnp
from libc.stdint cimport uintptr_t

from dlbridge cimport Array, cpp

import dlbridge

ctypedef cpp.view[double, cpp.ndim2, cpp.c_contig, cpp.ro, cpp.cpu] matrix_view
ctypedef cpp.array_argument[matrix_view] matrix_argument
ctypedef cpp.view[float, cpp.ndim2, cpp.c_contig, cpp.ro, cpp.cpu] matrix32_view
# float32 first: a float64 input is the second view tried.
ctypedef cpp.array_argument[matrix32_view, matrix_view] matrix_two_argument


def bare(x):
    """The baseline: a one-argument def function that does nothing."""
    return None


def converter(x):
    """dlbridge's argument converter (docs/cython-guide.md)."""
    cdef matrix_argument arg = matrix_argument(x, "converter", "x")
    return <uintptr_t>arg.view().const_data() & 1


def converter_two(x):
    """The converter taking float32 or float64 (the dtype picks the view)."""
    cdef matrix_two_argument arg = matrix_two_argument(x, "converter_two", "x")
    if arg.holds[matrix_view]():
        return <uintptr_t>arg.get[matrix_view]().const_data() & 1
    return <uintptr_t>arg.get[matrix32_view]().const_data() & 1


def typed_array(Array a):
    """Before the converter: a typed Array argument (refuses other producers)."""
    cdef matrix_view v = a.t.as_[matrix_view]()
    return <uintptr_t>v.const_data() & 1


def through_asarray(x):
    """Before the converter, as the Cython guide showed: asarray, then the view."""
    cdef Array a = dlbridge.asarray(x)
    cdef matrix_view v = a.t.as_[matrix_view]()
    return <uintptr_t>v.const_data() & 1


def memoryview_route(const double[:, ::1] x):
    """Cython's typed memoryview (the buffer protocol)."""
    return <uintptr_t>&x[0, 0] & 1


def cnp_route(cnp.ndarray[cnp.float64_t, ndim=2, mode="c"] x):
    """Cython's cnp.ndarray buffer argument (NumPy only)."""
    return <uintptr_t>x.data & 1
