# Included by _array.pyx; uses from it: nothing.
# How many threads a CPU copy or cast may use (dlb::copy_threads in
# dlbridge/copy/threads.hpp): dlbridge._backend's copy state, which every
# dlbridge module uses.
import operator

cimport dlbridge.cpp as cpp

# More would only cost: each thread gets at least 4 MiB to copy.
cdef unsigned _max_copy_threads = 1024


def get_copy_threads():
    """The most threads a copy or cast on the CPU uses (``Array.copy``,
    ``asarray(x, copy=True)``, ``dtype=``, ``to_device("cpu")``): by default one
    per CPU this process may run on, at most 8. Copies of less than 8 MiB use
    one thread; larger ones get one thread per 4 MiB, up to this number."""
    return cpp.copy_threads()


def set_copy_threads(threads, /):
    """Sets the most threads a CPU copy or cast uses; ``None`` restores the
    default (``get_copy_threads``). Results are the same, to the bit,
    whatever the number. Raises TypeError for a non-integer and ValueError
    outside 1 to 1024."""
    if threads is None:
        cpp.set_copy_threads(0)
        return
    if isinstance(threads, bool) or not hasattr(type(threads), "__index__"):
        raise TypeError(f"set_copy_threads() takes an integer or None, got {type(threads).__name__}")
    n = operator.index(threads)
    if not 1 <= n <= _max_copy_threads:
        raise ValueError(f"set_copy_threads(): expected 1 to {_max_copy_threads} threads, got {n}")
    cpp.set_copy_threads(n)
