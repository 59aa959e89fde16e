"""get_copy_threads and set_copy_threads: how many threads a CPU copy or cast
may use, and that the number never changes a result.

Copies of 8 MiB and more are split among threads, one per 4 MiB at most:
the arrays here are 24 MiB, so three threads each copy a third of them.
"""
import numpy as np
import pytest

import dlbridge

MIB = 1 << 20


@pytest.fixture
def restore_threads():
    yield
    dlbridge.set_copy_threads(None)


def test_default_is_one_per_cpu_at_most_eight(restore_threads):
    import os
    default = dlbridge.get_copy_threads()
    assert default == min(len(os.sched_getaffinity(0)), 8)
    dlbridge.set_copy_threads(5)
    assert dlbridge.get_copy_threads() == 5
    dlbridge.set_copy_threads(np.int64(1))  # anything with __index__
    assert dlbridge.get_copy_threads() == 1
    dlbridge.set_copy_threads(None)
    assert dlbridge.get_copy_threads() == default


@pytest.mark.parametrize("bad, error, message", [
    (0, ValueError, "set_copy_threads(): expected 1 to 1024 threads, got 0"),
    (-3, ValueError, "set_copy_threads(): expected 1 to 1024 threads, got -3"),
    (1025, ValueError, "set_copy_threads(): expected 1 to 1024 threads, got 1025"),
    (2**70, ValueError, f"set_copy_threads(): expected 1 to 1024 threads, got {2**70}"),
    (2.0, TypeError, "set_copy_threads() takes an integer or None, got float"),
    ("4", TypeError, "set_copy_threads() takes an integer or None, got str"),
    (True, TypeError, "set_copy_threads() takes an integer or None, got bool"),
])
def test_bad_thread_counts_are_refused_and_change_nothing(bad, error, message, restore_threads):
    dlbridge.set_copy_threads(3)
    with pytest.raises(error) as info:
        dlbridge.set_copy_threads(bad)
    assert str(info.value) == message
    assert dlbridge.get_copy_threads() == 3


def _sources():
    """24 MiB arrays in the layouts the engine treats differently: contiguous,
    transposed (tiles, streaming stores past half a 32 MiB cache), reversed,
    a 4-d permutation, with gaps."""
    a = np.arange(6 * MIB, dtype=np.float32).reshape(2048, 3072)
    yield "contiguous", a
    yield "transposed", a.T
    yield "reversed", a[::-1, ::-1]
    yield "nchw->nhwc", a.reshape(8, 64, 96, 128).transpose(0, 2, 3, 1)
    yield "every other column", np.arange(12 * MIB, dtype=np.float32).reshape(2048, 6144)[:, ::2]


@pytest.mark.parametrize("name, source", list(_sources()), ids=[n for n, _ in _sources()])
def test_copies_and_casts_are_the_same_on_any_number_of_threads(name, source, restore_threads):
    d = dlbridge.from_dlpack(source)
    results = {}
    for threads in (1, 3, 8):
        dlbridge.set_copy_threads(threads)
        results[threads] = (np.asarray(d.copy()), np.from_dlpack(dlbridge.asarray(d, dtype="float64")))
    want = np.ascontiguousarray(source)
    for copied, cast in results.values():
        assert copied.tobytes() == want.tobytes()
        assert cast.tobytes() == want.astype(np.float64).tobytes()
