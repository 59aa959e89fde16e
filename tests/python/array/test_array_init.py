"""The Array object's lifecycle, as plain Python code can drive it.

An Array's memory is set once (by Array.__init__ or by the function that
made it) and never changes: calling __init__ again is refused, whatever the
thread, because NumPy views, memoryviews and exports point into it. An
Array that never got memory (made with Array.__new__, or by a subclass whose
__init__ skips Array.__init__) is refused by every method, property and
exchange route with one clear error, never read at a NULL address."""
import copy
import operator
import pickle
import threading

import numpy as np
import pytest
import torch

import dlbridge
from messages import exactly

pytestmark = pytest.mark.numpy_jax  # NumPy's or JAX's arrays and dtypes as inputs: the floor stage runs it again


def holds_no_array(kind="Array"):
    return exactly(f"this {kind} holds no array: it was made by {kind}.__new__ without Array.__init__ "
                   f"(a subclass's __init__ must call it)")


# -- __init__ a second time ------------------------------------------------------

REINIT = ("Array.__init__ was called on an initialised {}: an Array's memory never changes once it has some "
          "(views and exports point into it); make a new Array instead")


@pytest.mark.parametrize("make", [
    lambda: dlbridge.zeros(4),
    lambda: dlbridge.asarray(np.arange(4.0)),
    lambda: dlbridge.Array([1.0, 2.0, 3.0, 4.0]),
    lambda: dlbridge.asarray(np.arange(8.0))[::2],
], ids=["zeros", "asarray", "Array()", "view"])
def test_init_again_is_refused_and_changes_nothing(make):
    a = make()
    seen_by_numpy, seen_by_memoryview = np.asarray(a), memoryview(a)
    before = (a.data_ptr, a.shape, a.strides, a.tolist())
    for args, kwargs in [(([9.0, 9.0],), {}), ((np.zeros(100),), {"copy": True}), ((a,), {}), ((0,), {}),
                         (([1, 2],), {"dtype": "int8"})]:
        with pytest.raises(ValueError, match=exactly(REINIT.format("Array"))):
            a.__init__(*args, **kwargs)
        with pytest.raises(ValueError, match=exactly(REINIT.format("Array"))):
            dlbridge.Array.__init__(a, *args, **kwargs)
    assert (a.data_ptr, a.shape, a.strides, a.tolist()) == before
    seen_by_numpy[...] = 5.0  # still a's memory, still alive
    assert a.tolist() == [5.0] * 4 and seen_by_memoryview.tolist() == [5.0] * 4


def test_init_again_from_another_thread_during_a_copy_is_refused():
    # The copy releases the GIL; the other thread's __init__ must neither free
    # the memory under it nor change what the array is.
    a = dlbridge.asarray(np.arange(1 << 23, dtype=np.float64))
    refused, stop = [], threading.Event()

    def reinit():
        while not stop.is_set():
            try:
                a.__init__(np.zeros(3))
            except ValueError:
                refused.append(1)

    thread = threading.Thread(target=reinit)
    thread.start()
    try:
        for _ in range(5):
            c = a.copy()
            assert c.shape == (1 << 23,) and float(c[12345]) == 12345.0 and float(c[-1]) == (1 << 23) - 1
    finally:
        stop.set()
        thread.join()
    assert refused and a.shape == (1 << 23,)


def test_threads_racing_to_initialise_one_array_leave_exactly_one_winner():
    for _ in range(20):
        a = dlbridge.Array.__new__(dlbridge.Array)
        outcomes, start = [], threading.Barrier(4)

        def init(value):
            start.wait()
            try:
                a.__init__(np.full(1 << 16, value))  # large enough to release the GIL in the copy
                outcomes.append(value)
            except ValueError:
                outcomes.append(None)

        threads = [threading.Thread(target=init, args=(float(i),)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners = [v for v in outcomes if v is not None]
        assert len(winners) == 1 and a.tolist() == [winners[0]] * (1 << 16)


def test_a_subclass_initialises_once_through_super():
    class Tagged(dlbridge.Array):
        def __init__(self, obj, tag):
            super().__init__(obj)
            self.tag = tag

    t = Tagged([1.0, 2.0], "x")
    assert t.tag == "x" and t.tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match=exactly(REINIT.format("Tagged"))):
        t.__init__([3.0], "y")
    assert t.tag == "x" and t.tolist() == [1.0, 2.0]


def test_an_array_made_by_new_can_be_initialised_once():
    a = dlbridge.Array.__new__(dlbridge.Array)
    a.__init__([1, 2, 3])
    assert a.tolist() == [1, 2, 3] and a.dtype == "int64"


# -- an Array that holds no memory -------------------------------------------------


class Skipping(dlbridge.Array):
    """A subclass whose __init__ forgets Array.__init__."""

    def __init__(self, *args):
        self.args = args


def uninitialised():
    return [("Array", dlbridge.Array.__new__(dlbridge.Array)), ("Skipping", Skipping([1.0, 2.0])),
            ("Skipping", Skipping.__new__(Skipping))]


# Every public method and property of Array, called as a user would; a new
# one must be added here (test_every_member_is_covered checks).
MEMBERS = {
    "shape": lambda a: a.shape, "strides": lambda a: a.strides, "dtype": lambda a: a.dtype,
    "device": lambda a: a.device, "ndim": lambda a: a.ndim, "size": lambda a: a.size,
    "itemsize": lambda a: a.itemsize, "nbytes": lambda a: a.nbytes, "readonly": lambda a: a.readonly,
    "data_ptr": lambda a: a.data_ptr, "T": lambda a: a.T, "transpose": lambda a: a.transpose(),
    "copy": lambda a: a.copy(), "tolist": lambda a: a.tolist(), "item": lambda a: a.item(),
    "to_device": lambda a: a.to_device("cpu"),
    "__len__": len, "__iter__": iter, "__bool__": bool, "__int__": int, "__float__": float,
    "__complex__": complex, "__index__": operator.index, "__getitem__": lambda a: a[0],
    "__dlpack__": lambda a: a.__dlpack__(), "__dlpack_device__": lambda a: a.__dlpack_device__(),
    "__array_interface__": lambda a: a.__array_interface__,
    "__cuda_array_interface__": lambda a: a.__cuda_array_interface__,
    "__reduce_ex__": lambda a: a.__reduce_ex__(5), "__copy__": copy.copy,
    "__deepcopy__": copy.deepcopy,
}
# Exchange routes through which other code reaches the array.
ROUTES = {
    "memoryview": memoryview, "np.asarray": np.asarray, "np.from_dlpack": np.from_dlpack,
    "torch.from_dlpack": torch.from_dlpack, "torch.as_tensor": torch.as_tensor,
    "dlbridge.asarray": dlbridge.asarray, "dlbridge.from_dlpack": dlbridge.from_dlpack,
    "dlbridge.Array": dlbridge.Array, "pickle.dumps": pickle.dumps,
    "pickle.dumps protocol 2": lambda a: pickle.dumps(a, protocol=2),
}


def test_every_member_is_covered():
    public = {name for name in dir(dlbridge.Array)
              if not name.startswith("_") or name in {"__len__", "__iter__", "__bool__", "__int__", "__float__",
                                                       "__complex__", "__index__", "__getitem__", "__dlpack__",
                                                       "__dlpack_device__", "__array_interface__",
                                                       "__cuda_array_interface__", "__reduce_ex__", "__copy__",
                                                       "__deepcopy__"}}
    assert public == set(MEMBERS)


@pytest.mark.parametrize("use", list(MEMBERS.values()) + list(ROUTES.values()), ids=list(MEMBERS) + list(ROUTES))
def test_an_array_holding_no_memory_is_refused_by(use):
    for kind, a in uninitialised():
        with pytest.raises(ValueError, match=holds_no_array(kind)):
            use(a)


def test_an_array_holding_no_memory_is_refused_as_a_consumer_argument():
    for kind, a in uninitialised():
        with pytest.raises(ValueError, match=holds_no_array(kind)):
            np.add(a, 1)
        with pytest.raises(ValueError, match=holds_no_array(kind)):
            torch.tensor(a)


def test_an_array_holding_no_memory_has_a_repr_and_compares_by_identity():
    for kind, a in uninitialised():
        assert repr(a) == f"<{kind} holding no array>" and str(a) == repr(a)
        assert a == a and a != dlbridge.zeros(1) and hash(a) == hash(a)


def test_a_skipping_subclass_keeps_its_own_state():
    s = Skipping(1, 2)
    assert s.args == (1, 2)
    s.__init__(3)
    assert s.args == (3,)  # its own __init__ runs each time; Array's never ran
    dlbridge.Array.__init__(s, [4.0])
    assert s.tolist() == [4.0]
