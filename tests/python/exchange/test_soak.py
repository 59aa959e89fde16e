"""Soak: a million exchanges into dlbridge and a million out of it.

Each direction runs 1,000,000 exchanges spread over every producer or
consumer at hand, after a warm-up, and then checks that resident memory grew
by less than 1 MiB, that no reference count drifted, and that every
producer's deleter ran exactly once per exchange. Deleters are counted where
they can be: the hand-built tensors count their own calls; NumPy's deleter
drops one reference to its array (sys.getrefcount), PyTorch's one use of its
tensor (Tensor._use_count); dlbridge's own export deleter drops one reference
to the memory, which a hand-built counting tensor underneath reveals (its
deleter runs once, when the last one goes, and not before).
"""
import gc
import resource
import sys
import time

import numpy as np
import pytest
import torch

import dlbridge
from dlbridge.testing._abi import ManagedTensor, Producer, stray_deleter_calls

pytestmark = pytest.mark.unsanitized(reason="under ASan, freed memory waits in its quarantine, so RSS grows")

EXCHANGES = 1_000_000
WARM_UP = 20_000
MIB = 1 << 20


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def snapshot(watched):
    """Live objects, reference counts and resident memory, in that order: the
    list gc.get_objects() builds must not fall between two RSS readings."""
    gc.collect()
    objects = len(gc.get_objects())
    refs = {name: sys.getrefcount(obj) for name, obj in watched.items()}
    return objects, refs, rss_bytes()


def soak(step, per_step, watched):
    """Runs step() for EXCHANGES exchanges (per_step each) after a warm-up,
    and checks that nothing leaked."""
    for _ in range(WARM_UP // per_step):
        step()
    objects, refs, rss = snapshot(watched)
    start = time.perf_counter()
    for _ in range(EXCHANGES // per_step):
        step()
    seconds = time.perf_counter() - start
    objects_after, refs_after, rss_after = snapshot(watched)
    print(f"{EXCHANGES} exchanges in {seconds:.1f} s; RSS {rss} -> {rss_after} bytes ({rss_after - rss:+d}); "
          f"live objects {objects} -> {objects_after}")
    assert rss_after - rss < MIB, f"resident memory grew by {rss_after - rss} bytes"
    assert refs_after == refs
    assert objects_after <= objects, f"{objects_after - objects} more live objects"


def test_a_million_imports_into_dlbridge():
    numpy_source = np.arange(16.0).reshape(4, 4)
    torch_source = torch.arange(16.0).reshape(4, 4)
    versioned = ManagedTensor(range(6), shape=(2, 3))
    legacy = ManagedTensor(range(6), shape=(3, 2), strides=(1, 3), versioned=False)
    torch_uses = torch_source._use_count()

    def step():
        # Four producers; each array is dropped at once, so each producer's
        # deleter must run before the next step.
        dlbridge.from_dlpack(numpy_source)
        dlbridge.from_dlpack(torch_source)
        dlbridge.from_dlpack(Producer(versioned))
        dlbridge.from_dlpack(Producer(legacy))
        # The counting deleter also notes the calling thread; that record is
        # the test's, not a leak.
        versioned.deleter_threads.clear()
        legacy.deleter_threads.clear()

    watched = {"numpy source": numpy_source, "torch source": torch_source, "versioned": versioned, "legacy": legacy}
    stray = len(stray_deleter_calls)
    soak(step, 4, watched)
    steps = (WARM_UP + EXCHANGES) // 4
    assert versioned.deleter_calls == steps
    assert legacy.deleter_calls == steps
    assert torch_source._use_count() == torch_uses
    assert stray_deleter_calls[stray:] == []


def test_a_million_exports_out_of_dlbridge():
    # The exported memory belongs to a hand-built tensor: every export holds a
    # reference to it, so its deleter runs exactly when the last export and
    # the array have gone, and only if each export's deleter ran once.
    managed = ManagedTensor(range(12), shape=(3, 4))
    source = dlbridge.from_dlpack(Producer(managed))
    view = source.T[::2]

    def step():
        # Five consumers: NumPy, PyTorch, dlbridge itself, and capsules
        # dropped unconsumed (versioned and legacy), whose destructors call
        # the deleter.
        np.from_dlpack(source)
        torch.from_dlpack(view)
        dlbridge.from_dlpack(view)
        source.__dlpack__(max_version=(1, 3))
        view.__dlpack__()

    soak(step, 5, {"source": source, "view": view})
    assert managed.deleter_calls == 0
    assert np.from_dlpack(view).tolist() == [[0.0, 4.0, 8.0], [2.0, 6.0, 10.0]]
    del source, view
    assert managed.deleter_calls == 1
