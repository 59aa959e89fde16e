# cython: language_level=3, boundscheck=False, wraparound=False
"""The Cython routes of benchmarks/arguments.py: each argument route takes
one 2-D float64 C-contiguous host array and returns the low bit of its first
element's address, so that every route has to reach the data; each return
route (return_*) makes a new array and returns it to the NumPy caller."""
cimport numpy as cnp
from libc.stdint cimport int64_t, uintptr_t

from dlbridge cimport Array, cpp, wrap_like
# dlbridge's own check of a PyTorch tensor's state (requires grad, conjugate
# and negative bits), which the converter runs on each torch argument: timed
# alone for the TVM FFI rows. (Not an API: dlbridge's private seam.)
from dlbridge._array cimport _torch_state_checked

import dlbridge
import numpy as np

cnp.import_array()

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


def torch_state_checks(x):
    """The torch state checks the converter runs on a real float tensor."""
    return _torch_state_checked(x, False, True)


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


# Returning a new 1-element float64 array to a NumPy caller (issue 24): each
# route takes the NumPy input x, makes the array, writes its element and
# returns it as a numpy.ndarray.

def return_wrap_like(x):
    """dlbridge from Cython: a tensor returned like x (an ndarray for an ndarray)."""
    cdef int64_t n = 1
    cdef cpp.tensor t = cpp.tensor.empty(cpp.extents_t(&n, 1), cpp.dtype_of[double]())
    (<double*>t.data())[0] = 1.0
    return wrap_like(t, x)


def return_np_empty(x):
    """NumPy from Cython as scikit-image writes it: np.empty."""
    cdef cnp.ndarray a = np.empty(1)
    (<double*>a.data)[0] = 1.0
    return a


def return_pyarray_empty(x):
    """NumPy from Cython through its C API: PyArray_EMPTY."""
    cdef cnp.npy_intp n = 1
    cdef cnp.ndarray a = cnp.PyArray_EMPTY(1, &n, cnp.NPY_FLOAT64, 0)
    (<double*>a.data)[0] = 1.0
    return a
