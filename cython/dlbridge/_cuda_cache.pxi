# Included by _array.pyx; uses from it: _release_cuda_cache (dlbridge/cuda/arrays.hpp).
# Handing the device memory dlbridge's pools keep back to the driver.
from libc.stdint cimport uint64_t


def release_cuda_cache():
    """Gives the CUDA device memory dlbridge keeps for its next allocations,
    and no array uses, back to the driver, on every GPU; returns how many bytes
    that was. dlbridge's cache is its own: ``torch.cuda.empty_cache()`` (or
    CuPy's ``free_all_blocks()``) does not release it, nor this one theirs.
    First waits for all work queued on the GPUs to finish; do not call it while
    another thread captures a CUDA graph. An allocation that finds a GPU out
    of memory releases the cache itself and tries once more. Returns 0 where
    no GPU is usable (nothing is cached), or dlbridge was built without CUDA."""
    cdef uint64_t released
    with nogil:
        released = _release_cuda_cache()
    return released
