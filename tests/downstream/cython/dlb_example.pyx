# cython: language_level=3
"""dlb_example: a Cython package built on dlbridge's C level.

The example of docs/cython-guide.md; tests/python/consumers/test_cython_consumers.py
builds it against the installed dlbridge and exchanges arrays with NumPy and
PyTorch through it.
"""
from cpython.ref cimport Py_INCREF
from libc.math cimport sqrt
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uintptr_t
from libcpp.optional cimport optional

from dlbridge cimport Array, cpp, wrap, wrap_like
from dlbridge.cpp cimport raise_python_error

import dlbridge

# -- Several dtypes ---------------------------------------------------------------
# One 2-D image, float32 or float64: C-contiguous, read-only access, host memory.
ctypedef cpp.view[float, cpp.ndim2, cpp.c_contig, cpp.ro, cpp.cpu] image32
ctypedef cpp.view[double, cpp.ndim2, cpp.c_contig, cpp.ro, cpp.cpu] image64

# One kernel for both: a fused type over the two view types.
ctypedef fused image_view:
    image32
    image64


cdef void image_sum_kernel(const image_view& image, double* total) noexcept nogil:
    cdef int64_t i, j
    for i in range(image.shape(0)):
        for j in range(image.shape(1)):
            total[0] += image(i, j)


@dlbridge.annotate(x=cpp.describe_kernels(image_sum_kernel[image32], image_sum_kernel[image64]))
def image_sum(x):
    """The sum of a 2-D float32 or float64 C-contiguous host array."""
    # TypeError("image_sum(): argument 'x': expected float32 or float64, got int32"), ...
    cdef double total = 0
    cpp.visit(x, "image_sum", "x", image_sum_kernel[image32], image_sum_kernel[image64], &total)
    return total


# A new array: the kernel's second view is its output, a new array of the
# input's shape and device and of that view's dtype (zero bits).
ctypedef fused real:
    float
    double


cdef void scaled_kernel(cpp.view[real, cpp.ndim2, cpp.c_contig, cpp.ro, cpp.cpu] image,
                        cpp.view[real, cpp.ndim2, cpp.c_contig, cpp.cpu] out, double factor) noexcept nogil:
    cdef int64_t i, j, cols = image.shape(1)
    for i in range(image.shape(0)):
        for j in range(cols):
            out.data()[i * cols + j] = <real>(factor * image(i, j))


def image_scaled(x, double factor):
    """factor * x, a new array of x's dtype, returned like x (an ndarray for
    an ndarray, a torch.Tensor for a tensor, ...)."""
    return cpp.visit_new(x, "image_scaled", "x", scaled_kernel[float], scaled_kernel[double], factor)


# A kernel that can fail: `except -1`, and the exception raised with the GIL.
cdef int roots_kernel(cpp.view[real, cpp.ndim1, cpp.ro, cpp.cpu] x,
                      cpp.view[real, cpp.ndim1, cpp.c_contig, cpp.cpu] out) except -1 nogil:
    cdef int64_t i
    for i in range(x.shape(0)):
        if x(i) < 0:
            with gil:
                raise ValueError(f"roots(): x[{i}] is negative: {x(i)}")
        out.data()[i] = sqrt(x(i))
    return 0


def roots(x):
    """The square root of each element of a 1-D float32 or float64 array;
    ValueError naming the first negative one."""
    return cpp.visit_new(x, "roots", "x", roots_kernel[float], roots_kernel[double])


# An output of another dtype than the input's: its view's.
ctypedef fused pixel:
    uint8_t
    uint16_t


cdef void halves_kernel(cpp.view[pixel, cpp.ndim1, cpp.ro, cpp.cpu] x,
                        cpp.view[float, cpp.ndim1, cpp.cpu] out) noexcept nogil:
    cdef int64_t i
    for i in range(x.shape(0)):
        out.data()[i * out.stride(0)] = x(i) / 2.0


def halves(x):
    """x / 2 as float32, for a 1-D uint8 or uint16 array."""
    return cpp.visit_new(x, "halves", "x", halves_kernel[uint8_t], halves_kernel[uint16_t])


cdef int minus_one_kernel(cpp.view[float, cpp.ndim1, cpp.ro, cpp.cpu] x) noexcept nogil:
    return -1


def minus_one(x):
    """A kernel that returns -1 with no exception set: SystemError."""
    cpp.visit(x, "minus_one", "x", minus_one_kernel)


cdef extern from "Python.h":
    int gil_held "PyGILState_Check"() nogil


cdef void gil_kernel(cpp.view[float, cpp.ndim1, cpp.ro, cpp.cpu] x, int* held) noexcept nogil:
    held[0] = gil_held()


def gil_held_in_kernel(x):
    """Whether a cpp.visit kernel ran with the GIL (it must not)."""
    cdef int held = -1
    cpp.visit(x, "gil_held_in_kernel", "x", gil_kernel, &held)
    return held


def image_sum_of_any(x):
    """image_sum of anything that converts without loss: another memory
    order, a dtype float64 holds exactly (int32 and narrower), a list."""
    cdef double total = 0
    cpp.visit(x, "image_sum_of_any", "x", cpp.copy_if_needed, image_sum_kernel[image32], image_sum_kernel[image64],
              &total)
    return total


# One argument for both, taken apart from any kernel: the array's dtype picks the view.
ctypedef cpp.array_argument[image32, image64] image_argument


def image_seen(x, bint convert=False):
    """What an image argument sees: (data address, dtype bits, view index)."""
    cdef image_argument image
    if convert:
        image = image_argument(x, "image_seen", "x", cpp.copy_if_needed)
    else:
        image = image_argument(x, "image_seen", "x")
    cdef uintptr_t address
    if image.index() == 0:
        address = <uintptr_t>image.get[image32]().const_data()
    else:
        address = <uintptr_t>image.get[image64]().const_data()
    return address, image.dtype().bits, image.index()


# Three dtypes: 1-D int8, int16 or int32, any strides.
ctypedef cpp.view[int8_t, cpp.ndim1, cpp.ro, cpp.cpu] ints8
ctypedef cpp.view[int16_t, cpp.ndim1, cpp.ro, cpp.cpu] ints16
ctypedef cpp.view[int32_t, cpp.ndim1, cpp.ro, cpp.cpu] ints32

ctypedef fused ints_view:
    ints8
    ints16
    ints32


cdef void int_sum_kernel(const ints_view& v, int64_t* total) noexcept nogil:
    cdef int64_t i
    for i in range(v.shape(0)):
        total[0] += v(i)


def int_sum(x):
    """The sum of a 1-D int8, int16 or int32 host array."""
    cdef int64_t total = 0
    cpp.visit(x, "int_sum", "x", int_sum_kernel[ints8], int_sum_kernel[ints16], int_sum_kernel[ints32], &total)
    return total


def image_argument_description():
    """What image_argument demands, in dlb::describe's words (bytes)."""
    return image_argument.describe()


def get_the_other_view(x):
    """get[W]() of the view the argument does not hold: RuntimeError."""
    cdef image_argument image = image_argument(x, "get_the_other_view", "x")
    if image.holds[image32]():
        image.get[image64]()
    else:
        image.get[image32]()


# -- Typed views ----------------------------------------------------------------
# A view type spelled in Cython: dlb::view<float, dlb::ndim<2>, dlb::c_contig,
# dlb::ro, dlb::cpu>. 2-D float32, C-contiguous, read-only access, host memory.
ctypedef cpp.view[float, cpp.ndim2, cpp.c_contig, cpp.ro, cpp.cpu] rows_view

# Writable (no cpp.ro), host memory, any strides.
ctypedef cpp.view[float, cpp.ndim2, cpp.cpu] matrix_view

# 1-D float64, read-only access, host memory, any strides.
ctypedef cpp.view[double, cpp.ndim1, cpp.ro, cpp.cpu] vector_view

# A view type spelled in C++, for what Cython cannot spell (dlb::shape<...>
# has non-type template arguments): N x 3 float64 points, host memory.
cdef extern from *:
    """
    #include <dlbridge/view.hpp>
    using points3_view = dlb::view<const double, dlb::shape<dlb::any_extent, 3>, dlb::cpu>;
    """
    cdef cppclass points3_view:
        int64_t shape(int32_t)
        double operator()(int64_t, int64_t)
        @staticmethod
        cpp.requirements demands()

# The C++ half: dlb_example.hpp.
cdef extern from "dlb_example.hpp" namespace "example" nogil:
    ctypedef cpp.view[float, cpp.ndim1, cpp.cuda] cuda_vector "example::cuda_vector"
    cpp.tensor row_sums_kernel "example::row_sums"(const rows_view&) except +raise_python_error
    cpp.tensor grid_kernel "example::grid"(int64_t, int64_t) except +raise_python_error
    cuda_vector cuda_vector_at(uintptr_t, int64_t, int32_t)
    void count_release(void*) noexcept
    int64_t releases_c "example::releases"() noexcept


# The arguments: any framework's array seen through a view type, for the
# length of the call, without a copy and without a Python object in between.
ctypedef cpp.array_argument[rows_view] rows_argument
ctypedef cpp.array_argument[matrix_view] matrix_argument
ctypedef cpp.array_argument[points3_view] points3_argument
ctypedef cpp.array_argument[vector_view] vector_argument


@dlbridge.annotate(x=cpp.describe(rows_view.demands()))  # for inspect.signature, help() and stubs
def row_sums(x):
    """Row sums of a 2-D float32 C-contiguous host array, as a new float32
    dlbridge Array made in C++. TypeError names the unmet constraint."""
    # TypeError("row_sums(): argument 'x': expected float32, got float64"), ...
    cdef rows_argument rows = rows_argument(x, "row_sums", "x")
    cdef cpp.tensor out
    with nogil:
        out = row_sums_kernel(rows.view())
    return wrap(out)


@dlbridge.annotate(x=cpp.describe(matrix_view.demands()))
def scale_(x, float factor):
    """Multiplies a 2-D float32 host array by `factor` in place (any strides)
    and returns x. Read-only data is refused."""
    cdef matrix_argument arg = matrix_argument(x, "scale_", "x")
    cdef matrix_view m = arg.view()  # a view is small: copy it; arg keeps the memory
    cdef float* p = m.data()
    cdef int64_t i, j
    with nogil:
        for i in range(m.shape(0)):
            for j in range(m.shape(1)):
                p[i * m.stride(0) + j * m.stride(1)] *= factor  # strides count elements
    return x


@dlbridge.annotate(points=cpp.describe(points3_view.demands()))
def norms(points):
    """Euclidean norms of N x 3 float64 points, as a list."""
    cdef points3_argument arg = points3_argument(points, "norms", "points")
    cdef points3_view v = arg.view()
    return [sqrt(v(i, 0) * v(i, 0) + v(i, 1) * v(i, 1) + v(i, 2) * v(i, 2)) for i in range(v.shape(0))]


@dlbridge.annotate(x=cpp.describe(vector_view.demands()), y=cpp.describe(vector_view.demands()))
def dot(x, y):
    """The dot product of two 1-D float64 host arrays of the same length."""
    cdef vector_argument x_arg = vector_argument(x, "dot", "x")
    cdef vector_argument y_arg = vector_argument(y, "dot", "y")
    cdef vector_view u = x_arg.view(), v = y_arg.view()
    if u.shape(0) != v.shape(0):
        raise ValueError(f"dot(): x has {u.shape(0)} elements, y has {v.shape(0)}")
    cdef double total = 0
    cdef int64_t i
    for i in range(u.shape(0)):
        total += u(i) * v(i)
    return total


def explain(x):
    """None if x fits rows_view, else what is wrong with it (no exception):
    dlb::check with the view type's demands."""
    cdef Array a = dlbridge.asarray(x)
    cdef optional[cpp.import_error] error = cpp.check(a.t.dltensor(), a.t.readonly(), rows_view.demands())
    if not error.has_value():
        return None
    return error.value().message().decode()


def explain_vector(x, int64_t length):
    """The same with requirements written by hand: a writable 1-D float64
    array of `length` elements, anywhere."""
    cdef Array a = dlbridge.asarray(x)
    cdef int64_t extents[1]
    extents[0] = length
    cdef cpp.requirements r
    r.type = cpp.dtype(cpp.kDLFloat, 64, 1)
    r.ndim = 1
    r.shape = cpp.extents_t(extents, 1)
    r.writable = True
    cdef optional[cpp.import_error] error = cpp.check(a.t.dltensor(), a.t.readonly(), r)
    if not error.has_value():
        return None
    return (error.value().field.data()[:error.value().field.size()].decode(), error.value().axis,
            error.value().message().decode())


def describe(x):
    """The C-level description of an array: its DLTensor and the tensor's
    own shape and strides."""
    cdef Array a = dlbridge.asarray(x)
    cdef cpp.DLTensor dl = a.t.dltensor()
    cdef cpp.extents_t shape = a.t.shape()
    cdef cpp.extents_t strides = a.t.strides()
    return {
        "data": <uintptr_t>dl.data,
        "device": (<int>dl.device.device_type, dl.device.device_id),
        "ndim": dl.ndim,
        "dtype": (dl.dtype.code, dl.dtype.bits, dl.dtype.lanes),
        "shape": tuple([dl.shape[i] for i in range(dl.ndim)]),
        "strides": tuple([dl.strides[i] for i in range(dl.ndim)]),
        "byte_offset": dl.byte_offset,
        "tensor_shape": tuple([shape[i] for i in range(shape.size())]),
        "tensor_strides": tuple([strides[i] for i in range(strides.size())]),
        "readonly": a.t.readonly(),
        "use_count": a.t.use_count(),
    }


def grid(int64_t rows, int64_t cols):
    """A new rows x cols float32 array (0, 1, 2, ... in C order), made and
    filled in C++, returned as a dlbridge Array."""
    cdef cpp.tensor t = grid_kernel(rows, cols)
    return wrap(t)


# -- Returning arrays like the input -------------------------------------------
def negated(x):
    """-x for a 1-D float64 array x, as a new array of x's kind: an ndarray
    for an ndarray, a torch.Tensor for a tensor, a JAX array for a JAX array,
    a dlbridge Array for anything else."""
    cdef vector_argument arg = vector_argument(x, "negated", "x")
    cdef vector_view v = arg.view()
    cdef cpp.tensor out = cpp.zeros_like(v)  # C order, v's shape, dtype and device
    cdef double* w = <double*>out.data()
    cdef int64_t i
    with nogil:
        for i in range(v.shape(0)):
            w[i] = -v(i)
    return wrap_like(out, x)


def filled(int64_t rows, int64_t cols, double value, like):
    """A new rows x cols float32 array of `value`, as an array of like's kind."""
    cdef int64_t shape[2]
    shape[0], shape[1] = rows, cols
    cdef cpp.tensor t = cpp.tensor.full(cpp.extents_t(shape, 2), cpp.dtype_of[float](),
                                        cpp.scalar.from_real(value))
    return wrap_like(t, like)


def counts(int64_t n, like):
    """A new array of n int32 zeros, as an array of like's kind."""
    cdef cpp.tensor t = cpp.tensor.zeros(cpp.extents_t(&n, 1), cpp.dtype_of[int32_t]())
    return wrap_like(t, like)


def rewrapped_like(Array a, like):
    """a's memory (shared) as an array of like's kind: every dtype's route."""
    cdef cpp.tensor t = a.t
    return wrap_like(t, like)


def bytes_view(bytes data):
    """A read-only 1-D uint8 Array on the memory of `data`, without a copy.
    The Array holds a reference to `data` until its memory is released."""
    cdef int64_t n = len(data)
    Py_INCREF(data)  # given back by cpp.release_object(data), exactly once
    cdef cpp.tensor t = cpp.tensor.adopt(<void*><const char*>data, cpp.dtype(cpp.kDLUInt, 8, 1),
                                         cpp.device(cpp.kDLCPU, 0), cpp.extents_t(&n, 1), cpp.extents_t(),
                                         True, cpp.release_object, <void*>data)
    return wrap(t)


def cuda_vector_at_address(uintptr_t address, int64_t n, int32_t device_id=0):
    """An Array on memory at `address` on CUDA device `device_id` (which
    nothing here reads), made through a dlb::cuda view: labelled cuda, never
    cpu."""
    cdef cpp.tensor t = cpp.adopt_view(cuda_vector_at(address, n, device_id), count_release, NULL)
    return wrap(t)


def cuda_zeros_like(uintptr_t address, int64_t n):
    """zeros_like of a dlb::cuda view (of memory at `address`, never read):
    new memory on that GPU, or BufferError where dlbridge cannot allocate there."""
    cdef cpp.tensor t = cpp.zeros_like(cuda_vector_at(address, n, 0))
    return wrap(t)


def releases():
    """How many times the release of cuda_vector_at_address arrays has run."""
    return releases_c()


def copy_threads():
    """The most threads this module's CPU copies use (cpp.copy_threads):
    dlbridge's setting, dlbridge.set_copy_threads()."""
    return cpp.copy_threads()
