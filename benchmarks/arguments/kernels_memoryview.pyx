# cython: language_level=3, boundscheck=False, wraparound=False
"""The two kernels of the glue comparison (benchmarks/arguments.py) written
with Cython typed memoryviews, as an extension author would without
dlbridge: a float32-or-float64 corner detector returning a new ndarray, and
an in-place H x W x 3 uint8 brightener. Code between `begin kernel` and
`end kernel` is the same loop in every version; the rest is glue."""
import numpy as np

from libc.float cimport DBL_MAX

ctypedef fused real:
    float
    double


def corner_moravec(const real[:, ::1] image, Py_ssize_t window_size=1):
    if window_size < 0:
        raise ValueError(f"corner_moravec(): window_size must be >= 0, got {window_size}")
    cdef Py_ssize_t rows = image.shape[0], cols = image.shape[1], w = window_size
    cdef real[:, ::1] out = np.zeros((rows, cols), dtype=np.float32 if real is float else np.float64)
    cdef Py_ssize_t r, c, br, bc, mr, mc
    cdef double total, least, d
    with nogil:
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
                                d = image[r + mr, c + mc] - image[br + mr, bc + mc]
                                total += d * d
                        least = min(least, total)
                out[r, c] = <real>least
        # end kernel
    return np.asarray(out)


def brighten_(unsigned char[:, :, :] image):
    if image.shape[2] != 3:
        raise ValueError(f"brighten_(): image must have 3 channels, got {image.shape[2]}")
    cdef Py_ssize_t y, x, ch
    with nogil:
        # begin kernel
        for y in range(image.shape[0]):
            for x in range(image.shape[1]):
                for ch in range(3):
                    image[y, x, ch] = min(255, 2 * image[y, x, ch])
        # end kernel
