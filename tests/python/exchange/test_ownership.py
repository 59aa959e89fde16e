"""Who keeps memory alive across DLPack exchanges, and for how long.

A producer must live exactly as long as some dlbridge array, view or export
still refers to its memory; then it must be released exactly once, on
whichever thread drops the last reference, and repeated exchanges must not
leak references or memory."""
import gc
import os
import resource
import subprocess
import sys
import textwrap
import threading
import tracemalloc
import weakref

import numpy as np
import pytest
import torch

import dlbridge
from dlbridge.testing._abi import ManagedTensor, Producer
from exporters import CudaInterface, RawBuffer
from peers import numpy_from_dlpack_writable

pytestmark = pytest.mark.numpy_jax  # exchanges with NumPy or JAX: the floor stage runs it again (conftest.py)


class Owned(np.ndarray):
    """A NumPy array type that can be weakly referenced."""


def owned(n=8):
    source = np.arange(float(n)).view(Owned)
    return source, weakref.ref(source)


def collect():
    gc.collect()


# -- imports keep the producer --------------------------------------------------


def test_producer_lives_while_the_array_lives():
    source, alive = owned()
    a = dlbridge.from_dlpack(source)
    del source
    collect()
    assert alive() is not None
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    del a
    collect()
    assert alive() is None


def test_producer_lives_while_any_view_lives():
    source, alive = owned(12)
    a = dlbridge.from_dlpack(source)
    views = [a[2:5], a[::-3], a[None, 4:], a[7], a.T]
    del source, a
    for expected in ([2.0, 3.0, 4.0], [11.0, 8.0, 5.0, 2.0], [[4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]], 7.0):
        collect()
        assert alive() is not None
        assert views[0].tolist() == expected
        del views[0]
    collect()
    assert alive() is not None
    del views[0]
    collect()
    assert alive() is None


def test_views_of_views_keep_the_producer():
    source, alive = owned(16)
    v = dlbridge.from_dlpack(source.reshape(4, 4))[1:][:, ::2].T[0]
    del source
    collect()
    assert alive() is not None
    assert v.tolist() == [4.0, 8.0, 12.0]
    del v
    collect()
    assert alive() is None


def test_chained_dlbridge_imports_keep_the_producer():
    source, alive = owned()
    a = dlbridge.from_dlpack(source)
    b = dlbridge.from_dlpack(a)
    c = dlbridge.from_dlpack(b[1:])
    del source, a, b
    collect()
    assert alive() is not None
    assert c.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    del c
    collect()
    assert alive() is None


def test_copy_releases_the_producer_at_once():
    source, alive = owned()
    a = dlbridge.from_dlpack(source, copy=True)
    del source
    collect()
    assert alive() is None
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]


# -- exports keep the memory -----------------------------------------------------


def test_numpy_export_keeps_a_dlbridge_allocation_alive():
    a = dlbridge.full((1000,), 7.5)
    n = np.from_dlpack(a)
    assert n.ctypes.data == a.data_ptr
    del a
    collect()
    churn = [dlbridge.full((1000,), -1.0) for _ in range(50)]  # reuse freed memory, if any
    assert (n == 7.5).all()
    assert n.flags.writeable is numpy_from_dlpack_writable(True, n.size)
    if n.flags.writeable:
        n[:] = 1.0  # still writable memory of ours
        assert (n == 1.0).all()
    del churn


def test_torch_export_keeps_a_dlbridge_allocation_alive():
    a = dlbridge.full((1000,), 3, dtype="int32")
    t = torch.from_dlpack(a)
    assert t.data_ptr() == a.data_ptr
    del a
    collect()
    churn = [dlbridge.full((1000,), -1, dtype="int32") for _ in range(50)]
    assert bool((t == 3).all())
    t += 1
    assert bool((t == 4).all())
    del churn


@pytest.mark.parametrize("consumer", ["numpy", "torch"])
def test_exports_keep_the_original_producer_alive(consumer):
    source, alive = owned()
    a = dlbridge.from_dlpack(source)
    exported = np.from_dlpack(a[2:]) if consumer == "numpy" else torch.from_dlpack(a[2:])
    del source, a
    collect()
    assert alive() is not None
    assert exported.tolist() == [2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    del exported
    collect()
    assert alive() is None


def test_hand_built_tensor_outlives_dlbridge_through_numpy_and_torch():
    mt = ManagedTensor(range(4))
    producer = Producer(mt)
    a = dlbridge.from_dlpack(producer)
    n = np.from_dlpack(a)
    t = torch.from_dlpack(a)
    del a, producer
    collect()
    assert mt.deleter_calls == 0
    assert n.tolist() == [0.0, 1.0, 2.0, 3.0]
    del n
    collect()
    assert mt.deleter_calls == 0
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    del t
    collect()
    assert mt.deleter_calls == 1


# -- no leaks ---------------------------------------------------------------------


def _rss_bytes():
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize()


def _exchange(source):
    a = dlbridge.from_dlpack(source)                       # numpy -> dlbridge
    b = dlbridge.from_dlpack(a[1:])                        # dlbridge -> dlbridge (a view)
    n = np.from_dlpack(b)                                  # dlbridge -> numpy
    unconsumed = a.__dlpack__(max_version=(1, 3))          # dropped without a consumer
    legacy = b.__dlpack__()
    copied = dlbridge.from_dlpack(b, copy=True)
    return a, b, n, unconsumed, legacy, copied


@pytest.mark.unsanitized(reason="under ASan, freed memory waits in its quarantine, so RSS grows")
def test_no_reference_or_memory_leak_over_100000_exchanges():
    source = np.arange(64.0)
    for _ in range(2000):  # warm up allocators and caches
        _exchange(source)
    collect()
    refs = sys.getrefcount(source)
    rss = _rss_bytes()
    tracemalloc.start()
    try:
        traced = tracemalloc.get_traced_memory()[0]
        for _ in range(100_000):
            _exchange(source)
        collect()
        traced_growth = tracemalloc.get_traced_memory()[0] - traced
    finally:
        tracemalloc.stop()
    rss_growth = _rss_bytes() - rss
    assert sys.getrefcount(source) == refs
    assert traced_growth < 1 << 20, f"Python allocations grew by {traced_growth} bytes"
    assert rss_growth < 5 << 20, f"RSS grew by {rss_growth} bytes"


def test_no_deleter_leak_over_many_hand_built_imports():
    tensors = [ManagedTensor(range(4), shape=(2, 2)) for _ in range(2000)]
    for mt in tensors:
        producer = Producer(mt)
        a = dlbridge.from_dlpack(producer)
        v = a.T
        dlbridge.from_dlpack(v).__dlpack__(max_version=(1, 3))
    del producer, a, v
    collect()
    assert [mt.deleter_calls for mt in tensors] == [1] * len(tensors)


# -- threads ------------------------------------------------------------------------


def _drop_in_thread(holder):
    def run():
        holder.clear()
        collect()
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return thread.ident


@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "legacy"])
def test_last_reference_dropped_on_another_thread_calls_the_deleter_once(versioned):
    mt = ManagedTensor(range(6), shape=(2, 3), versioned=versioned)
    producer = Producer(mt)
    a = dlbridge.from_dlpack(producer)
    holder = [a[1], a.T]
    del a, producer
    collect()
    assert mt.deleter_calls == 0
    worker = _drop_in_thread(holder)
    collect()
    assert mt.deleter_calls == 1
    assert mt.deleter_threads == [worker]
    assert worker != threading.get_ident()


def test_numpy_producer_released_from_another_thread():
    source, alive = owned()
    a = dlbridge.from_dlpack(source)
    holder = [a, dlbridge.from_dlpack(a)[3:], np.from_dlpack(a)]
    del source, a
    collect()
    assert alive() is not None
    _drop_in_thread(holder)
    collect()
    assert alive() is None


def test_many_threads_dropping_views_of_one_tensor():
    mt = ManagedTensor(range(64))
    producer = Producer(mt)
    a = dlbridge.from_dlpack(producer)
    holders = [[a[i:], a[::-1]] for i in range(16)]
    del a, producer
    collect()
    barrier = threading.Barrier(len(holders))

    def run(holder):
        barrier.wait()
        for _ in range(200):  # also churn the reference count concurrently
            holder.append(holder[0][1:])
            holder.pop()
        holder.clear()

    threads = [threading.Thread(target=run, args=(h,)) for h in holders]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    collect()
    assert mt.deleter_calls == 1


def test_arrays_alive_at_interpreter_exit_do_not_crash():
    # Arrays, views, exports and unconsumed capsules still alive at exit (one
    # held by a daemon thread that never finishes) are torn down, or leaked,
    # without touching a dead interpreter.
    code = textwrap.dedent("""
        import threading, time
        import numpy as np, torch, dlbridge
        src = np.arange(10.0)
        a = dlbridge.from_dlpack(src)
        keep = [dlbridge.from_dlpack(a)[2:], np.from_dlpack(a), torch.from_dlpack(a),
                a.__dlpack__(max_version=(1, 3)), a.__dlpack__()]
        def hold(x):
            time.sleep(60)
        threading.Thread(target=hold, args=(dlbridge.from_dlpack(src)[1:],), daemon=True).start()
        print("done")
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([p for p in sys.path if p]))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "done"
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr


# -- reference cycles through an Array are collected ----------------------------------
# Memory a Python object lends (__array_interface__, __cuda_array_interface__,
# the buffer protocol) is held through that object, and an Array shows the
# garbage collector the reference, so `o.a = dlbridge.asarray(o)` is collected
# as any Python cycle is (NumPy leaks it). Memory held by a foreign DLPack
# deleter cannot be followed: see docs/guide.md.


class Lender:
    """Lends a 1 MiB NumPy buffer through __array_interface__ and can hold
    attributes (so it can refer to the arrays made from it)."""

    def __init__(self):
        self.memory = np.arange(1 << 17, dtype=np.float64)
        self.__array_interface__ = self.memory.__array_interface__


def _cycle_kinds():
    class Buffer(RawBuffer):
        pass

    class Sub(dlbridge.Array):
        pass

    def interface(link):
        o = Lender()
        link(o, o)
        return o

    def cuda(link):
        o = CudaInterface(np.arange(8.0))
        link(o, o)
        return o

    def buffer(link):
        o = Buffer((4,), (8,))
        link(o, o)
        return o

    def subclass(link):
        o = Lender()
        o.sub = Sub(o)
        link(o, o.sub)
        return o

    return {"__array_interface__": interface, "__cuda_array_interface__": cuda, "buffer": buffer,
            "Array subclass": subclass}


CYCLE_KINDS = _cycle_kinds()
LINKS = {
    "array": lambda o, src: setattr(o, "a", dlbridge.asarray(src)),
    "view": lambda o, src: setattr(o, "v", dlbridge.asarray(src)[::2]),
    "view of a view": lambda o, src: setattr(o, "v", dlbridge.asarray(src)[1:][::-1][None]),
    "transpose": lambda o, src: setattr(o, "t", dlbridge.asarray(src).T),
    "list of arrays": lambda o, src: setattr(o, "many", [dlbridge.asarray(src), dlbridge.asarray(src)[:1]]),
    "Array()": lambda o, src: setattr(o, "a", dlbridge.Array(src)),
}


@pytest.mark.parametrize("link", list(LINKS.values()), ids=list(LINKS))
@pytest.mark.parametrize("kind", list(CYCLE_KINDS.values()), ids=list(CYCLE_KINDS))
def test_a_cycle_through_an_array_is_collected(kind, link):
    alive = [weakref.ref(kind(link)) for _ in range(5)]
    collect()
    assert [ref() for ref in alive] == [None] * 5


def test_a_hundred_1_mib_cycles_are_freed():
    # The case: 100 cycles held 100 MiB for good.
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(100):
            o = Lender()
            o.a = dlbridge.asarray(o)
            o.view = o.a[::-1]
        del o
        collect()
        assert tracemalloc.get_traced_memory()[0] - before < 2 << 20
    finally:
        tracemalloc.stop()


def test_an_array_reachable_from_outside_keeps_its_cycle():
    o = Lender()
    a = dlbridge.asarray(o)
    o.a, o.v = a, a[::2]
    alive = weakref.ref(o)
    del o
    collect()
    assert alive() is not None
    assert a.tolist()[:3] == [0.0, 1.0, 2.0] and alive().v.tolist()[:2] == [0.0, 2.0]
    del a
    collect()
    assert alive() is None


def test_a_cycle_whose_memory_is_exported_lives_while_the_export_lives():
    o = Lender()
    o.a = dlbridge.asarray(o)
    t, n = torch.from_dlpack(o.a), np.from_dlpack(o.a[1:])
    alive = weakref.ref(o)
    del o
    collect()
    assert alive() is not None and t[5].item() == 5.0 and n[4] == 5.0
    del t, n
    collect()
    assert alive() is None


def test_finalizers_in_a_cycle_see_working_arrays():
    seen = []

    class Finalising(Lender):
        def __del__(self):
            seen.append((self.a.tolist()[:2], self.a[::-1].shape))

    o = Finalising()
    o.a = dlbridge.asarray(o)
    del o
    collect()
    assert seen == [([0.0, 1.0], (1 << 17,))]


def test_arrays_that_cannot_be_in_a_cycle_cost_the_collector_nothing():
    # Only Arrays whose memory a Python object holds are tracked, and only
    # where the collector can follow that object: an ndarray takes no part in
    # collection, so no cycle through one can be found.
    assert not gc.is_tracked(dlbridge.zeros(3))
    assert not gc.is_tracked(dlbridge.from_dlpack(np.arange(3.0)))
    assert not gc.is_tracked(dlbridge.asarray(np.arange(3.0)))
    assert not gc.is_tracked(dlbridge.asarray(np.arange(3.0))[::-1])
    assert not gc.is_tracked(dlbridge.asarray([1.0, 2.0])[::-1])
    assert gc.is_tracked(dlbridge.asarray(Lender()))
