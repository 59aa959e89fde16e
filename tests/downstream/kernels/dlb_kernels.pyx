# cython: language_level=3, boundscheck=False, wraparound=False
"""dlb_kernels: the two kernels of the glue comparison written with
dlbridge's Cython API: a float32-or-float64 corner detector returning a new
array like its input, and an in-place H x W x 3 uint8 brightener. Code
between `begin kernel` and `end kernel` is the same loop in every version
(benchmarks/arguments/); the rest is glue."""
from libc.float cimport DBL_MAX

from dlbridge cimport cpp, wrap_like

ctypedef fused real:
    float
    double

ctypedef cpp.view[float, cpp.ndim2, cpp.c_contig, cpp.ro, cpp.cpu] image32
ctypedef cpp.view[double, cpp.ndim2, cpp.c_contig, cpp.ro, cpp.cpu] image64
ctypedef cpp.view[unsigned char, cpp.shape[cpp.any, cpp.any, cpp.extent3], cpp.cpu] rgb


cdef void moravec(cpp.view[real, cpp.ndim2, cpp.c_contig, cpp.ro, cpp.cpu] image, cpp.tensor& result,
                  Py_ssize_t w) noexcept nogil:
    cdef real* out = <real*>result.data()
    cdef Py_ssize_t rows = image.shape(0), cols = image.shape(1), r, c, br, bc, mr, mc
    cdef double total, least, d
    # begin kernel
    for r in range(w + 1, rows - w - 1):
        for c in range(w + 1, cols - w - 1):
            least = DBL_MAX
            for br in range(r - 1, r + 2):
                for bc in range(c - 1, c + 2):
                    if br == r and bc == c:
                        continue
                    total = 0
                    for mr in range(-w, w + 1):
                        for mc in range(-w, w + 1):
                            d = image(r + mr, c + mc) - image(br + mr, bc + mc)
                            total += d * d
                    least = min(least, total)
            out[r * cols + c] = <real>least
    # end kernel


def corner_moravec(image, Py_ssize_t window_size=1):
    """Moravec corner measure of a 2-D float32 or float64 C-contiguous host
    image, as a new array of its dtype and of its library."""
    if window_size < 0:
        raise ValueError(f"corner_moravec(): window_size must be >= 0, got {window_size}")
    cdef cpp.array_argument[image32, image64] arg = cpp.array_argument[image32, image64](image, "corner_moravec", "image")
    cdef cpp.tensor out = cpp.zeros_like(arg)
    with nogil:
        if arg.holds[image32]():
            moravec(arg.get[image32](), out, window_size)
        else:
            moravec(arg.get[image64](), out, window_size)
    return wrap_like(out, image)


def brighten_(image):
    """Doubles the brightness of an H x W x 3 uint8 host image in place."""
    cdef cpp.array_argument[rgb] arg = cpp.array_argument[rgb](image, "brighten_", "image")
    cdef rgb v = arg.view()
    cdef Py_ssize_t y, x, ch
    with nogil:
        # begin kernel
        for y in range(v.shape(0)):
            for x in range(v.shape(1)):
                for ch in range(3):
                    v.data()[y * v.stride(0) + x * v.stride(1) + ch * v.stride(2)] = min(255, 2 * v(y, x, ch))
        # end kernel
