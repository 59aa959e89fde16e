"""Threads: concurrent exchanges and copies, releases on foreign threads, and
the GIL released during large copies.

Eight threads import, view, export and copy for at least ten seconds, and
hand what they make to each other, so the last reference to most tensors goes
on a thread other than the one that imported it. Every hand-built tensor's
deleter must have run exactly once when all is done. Deleters are also called
from a thread Python has never seen. Large copies must let other Python
threads run.
"""
import collections
import ctypes
import queue
import random
import sys
import threading
import time

import numpy as np
import pytest
import torch

import dlbridge
from dlbridge.testing._abi import Consumed, ManagedTensor, Producer, stray_deleter_calls

THREADS = 8
SECONDS = 10.0
SLOTS = 256  # hand-built tensors, reused once released
BIG = 1 << 18  # float64 elements: 2 MiB, well above the size whose copies release the GIL


class Slot:
    """A hand-built tensor imported over and over: it is free again once its
    deleter has run as many times as it was imported."""

    def __init__(self, index):
        self.values = [float(index * 100 + i) for i in range(12)]
        self.managed = ManagedTensor(self.values, shape=(3, 4))
        self.imports = 0
        self.foreign_releases = 0
        self.importers = []

    def settle(self):
        """Counts the releases since the last call; True when the slot is free."""
        calls = self.managed.deleter_calls
        released = self.managed.deleter_threads[:]
        del self.managed.deleter_threads[:len(released)]
        for importer, releaser in zip(self.importers, released):
            self.foreign_releases += importer != releaser
        del self.importers[:len(released)]
        return calls == self.imports


class Pool:
    def __init__(self):
        self.slots = [Slot(i) for i in range(SLOTS)]
        self.free = queue.SimpleQueue()
        self.busy = collections.deque()
        self.lock = threading.Lock()
        for slot in self.slots:
            self.free.put(slot)

    def take(self, inbox, deadline):
        """A free slot, or None once the deadline has passed."""
        while time.monotonic() < deadline:
            try:
                return self.free.get_nowait()
            except queue.Empty:
                drop(inbox, THREADS)  # what others handed this thread may be what keeps slots busy
                self.recycle()
        return None

    def give(self, slot):
        with self.lock:
            self.busy.append(slot)

    def recycle(self):
        with self.lock:
            for _ in range(len(self.busy)):
                slot = self.busy.popleft()
                if slot.settle():
                    self.free.put(slot)
                else:
                    self.busy.append(slot)
        time.sleep(0)  # let the holders drop what they hold


def drop(inbox, count):
    """Drops up to `count` things from a thread's inbox (made by another thread)."""
    for _ in range(count):
        try:
            inbox.get_nowait()
        except queue.Empty:
            return


def test_eight_threads_exchange_and_copy_concurrently():
    pool = Pool()
    # Each thread hands what it makes to the next one, which drops it.
    inboxes = [queue.SimpleQueue() for _ in range(THREADS)]
    big = np.arange(BIG, dtype=np.float64)
    big_torch = torch.arange(BIG, dtype=torch.float64)
    stray = len(stray_deleter_calls)
    iterations = [0] * THREADS
    errors = []
    deadline = time.monotonic() + SECONDS
    start = threading.Barrier(THREADS)

    def work(index):
        rng = random.Random(index)
        start.wait()
        try:
            inbox, next_inbox = inboxes[index], inboxes[(index + 1) % THREADS]
            while (slot := pool.take(inbox, deadline)) is not None:
                slot.importers.append(threading.get_ident())
                slot.imports += 1
                x = dlbridge.from_dlpack(Producer(slot.managed))
                pool.give(slot)
                view = x.T[::-1]
                made = [x, view, np.from_dlpack(view), torch.from_dlpack(x), dlbridge.from_dlpack(view),
                        view.__dlpack__(max_version=(1, 3)), x.__dlpack__()]
                expected = np.array(slot.values).reshape(3, 4).T[::-1]
                assert view.copy().tolist() == expected.tolist()
                assert np.array_equal(np.from_dlpack(dlbridge.from_dlpack(view, copy=True)), expected)
                if iterations[index] % 16 == 0:  # large copies, which release the GIL
                    copied = dlbridge.from_dlpack(big if rng.random() < 0.5 else big_torch).copy()
                    assert copied.data_ptr != big.ctypes.data
                    assert np.array_equal(np.from_dlpack(copied), big)
                    made.append(copied)
                rng.shuffle(made)
                for item in made:
                    next_inbox.put(item)
                count = len(made)
                del x, view, made
                drop(inbox, count)  # about as many as were handed on, so inboxes stay short
                iterations[index] += 1
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for inbox in inboxes:  # the main thread drops what is left
        drop(inbox, sys.maxsize)
    pool.recycle()
    imports = sum(slot.imports for slot in pool.slots)
    foreign = sum(slot.foreign_releases for slot in pool.slots)
    print(f"iterations per thread: {iterations} (total {sum(iterations)}); {imports} imports, "
          f"{foreign} released on another thread")
    assert all(n > 0 for n in iterations)
    assert [slot.managed.deleter_calls for slot in pool.slots] == [slot.imports for slot in pool.slots]
    assert imports == sum(iterations)
    assert foreign > imports // 2  # by design nearly all; the importer rarely drops last
    assert stray_deleter_calls[stray:] == []


# -- deleters on threads Python has never seen ----------------------------------------------

_libc = ctypes.CDLL(None)  # a CDLL call releases the GIL while it runs
_libc.pthread_create.argtypes = [ctypes.POINTER(ctypes.c_ulong), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
_libc.pthread_join.argtypes = [ctypes.c_ulong, ctypes.c_void_p]


def call_on_a_native_thread(function, argument):
    """Runs function(argument) on a new pthread that has no Python thread state
    (a DLPack deleter has the shape of a thread routine: one pointer in)."""
    thread = ctypes.c_ulong()
    assert _libc.pthread_create(ctypes.byref(thread), None, function, argument) == 0
    assert _libc.pthread_join(thread, None) == 0


@pytest.mark.parametrize("max_version", [(1, 3), None], ids=["versioned", "legacy"])
def test_export_deleter_called_from_a_native_thread_releases_the_producer(max_version):
    # The export holds the memory of a NumPy array whose last reference goes
    # with it: dropping it needs the GIL, which the deleter must take itself.
    source = np.arange(10.0)
    before = sys.getrefcount(source)
    x = dlbridge.from_dlpack(source)
    consumed = Consumed(x.__dlpack__(max_version=max_version))
    del x
    assert sys.getrefcount(source) == before + 1
    call_on_a_native_thread(consumed.managed.deleter, consumed.address)
    assert sys.getrefcount(source) == before


def test_the_last_reference_to_a_hand_built_import_dropped_from_a_native_thread():
    managed = ManagedTensor(range(6), shape=(2, 3))
    x = dlbridge.from_dlpack(Producer(managed))
    consumed = Consumed(x.T.__dlpack__(max_version=(1, 3)))
    del x
    assert managed.deleter_calls == 0
    call_on_a_native_thread(consumed.managed.deleter, consumed.address)
    assert managed.deleter_calls == 1
    assert managed.deleter_threads[0] != threading.get_ident()


# -- the GIL during large copies ----------------------------------------------------------


class Counter:
    """A Python thread that counts while it can run. It holds the GIL only for
    one step at a time and sleeps in between, so the main thread always gets
    the GIL back at once; with a switch interval far longer than any call here
    the main thread, in turn, keeps the GIL until it blocks or releases it. So
    the count moves during a call only if that call released the GIL."""

    def __enter__(self):
        self.count = 0
        self.stop = False
        self.interval = sys.getswitchinterval()
        sys.setswitchinterval(30.0)
        self.thread = threading.Thread(target=self.run)
        self.thread.start()
        return self

    def run(self):
        while not self.stop:
            self.count += 1
            time.sleep(0.0002)

    def __exit__(self, *exc):
        self.stop = True
        self.thread.join()
        sys.setswitchinterval(self.interval)

    def moves_during(self, call, attempts=10):
        """True if the count moved during one of `attempts` calls."""
        for _ in range(attempts):
            before = self.count
            call()
            if self.count != before:
                return True
        return False


class OldProducer:
    """A producer that ignores copy=True (as DLPack < 1.0 producers do), so the
    consumer has to copy."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(max_version=(1, 3))

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


LARGE = (2048, 4096)  # 64 MiB of float64, a transposed copy


@pytest.mark.parametrize("copy", [
    pytest.param(lambda a: a.copy(), id="copy()"),
    pytest.param(lambda a: a.__dlpack__(max_version=(1, 3), copy=True), id="__dlpack__(copy=True)"),
    pytest.param(lambda a: dlbridge.asarray(a, dtype="float32"), id="asarray(dtype=)"),
    pytest.param(lambda a: dlbridge.asarray(a, copy=True), id="asarray(copy=True)"),
    pytest.param(lambda a: dlbridge.from_dlpack(OldProducer(a), copy=True), id="from_dlpack(copy=True)"),
])
def test_large_copies_let_other_python_threads_run(copy):
    a = dlbridge.zeros(LARGE).T
    copy(a)  # the first copy maps its memory in; time it not
    with Counter() as counter:
        assert counter.moves_during(lambda: copy(a))


def test_the_counter_stands_still_while_the_gil_is_held():
    # The check above can fail: a call that holds the GIL throughout leaves
    # the count where it was, every time.
    def hold_the_gil():
        total = 0
        for i in range(200_000):
            total += i
    with Counter() as counter:
        assert not counter.moves_during(hold_the_gil, attempts=5)
