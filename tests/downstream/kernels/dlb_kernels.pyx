# cython: language_level=3, boundscheck=False, wraparound=False
"""dlb_kernels: the two kernels of the glue comparison written with
dlbridge's Cython API: a float32-or-float64 corner detector returning a new
array like its input, and an in-place H x W x 3 uint8 brightener. Code
between `begin kernel` and `end kernel` is the same loop in every version
(benchmarks/arguments/); the rest is glue."""
from libc.float cimport DBL_MAX

from dlbridge cimport cpp

ctypedef fused real:
    float
    double


cdef void moravec(cpp.view[real, cpp.ndim2, cpp.c_contig, cpp.ro, cpp.cpu] image,
                  cpp.view[real, cpp.ndim2, cpp.c_contig, cpp.cpu] out, Py_ssize_t w) noexcept nogil:
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
            out.data()[r * cols + c] = <real>least
    # end kernel


def corner_moravec(image, Py_ssize_t window_size=1):
    """Moravec corner measure of a 2-D float32 or float64 C-contiguous host
    image, as a new array of its dtype and of its library."""
    if window_size < 0:
        raise ValueError(f"corner_moravec(): window_size must be >= 0, got {window_size}")
    return cpp.visit_new(image, "corner_moravec", "image", moravec[float], moravec[double], window_size)


cdef void brighten(cpp.view[unsigned char, cpp.shape[cpp.any, cpp.any, cpp.extent3], cpp.cpu] v) noexcept nogil:
    cdef Py_ssize_t y, x, ch
    # begin kernel
    for y in range(v.shape(0)):
        for x in range(v.shape(1)):
            for ch in range(3):
                v.data()[y * v.stride(0) + x * v.stride(1) + ch * v.stride(2)] = min(255, 2 * v(y, x, ch))
    # end kernel


def brighten_(image):
    """Doubles the brightness of an H x W x 3 uint8 host image in place."""
    cpp.visit(image, "brighten_", "image", brighten)
