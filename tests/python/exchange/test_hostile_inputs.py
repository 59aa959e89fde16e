"""Hostile Python inputs (issue 23): objects that answer differently each time
they are read, and every name Python code can reach in dlbridge's extension
modules called with arguments it does not expect.

dlbridge reads each input once (a key, a shape, an interface's dict and its
tuples, a scalar's __index__), checks what it read, and uses only that. The
answers dlbridge must never see are ones that used to write past fixed-size
buffers, make arrays of 65 axes, read past an array, or give wrong data.
No call may crash: the last test runs every reachable callable in a child
process, which also runs under ASan + UBSan (tests/run asan-python)."""
import array
import importlib
import importlib.machinery
import itertools
import operator
import os
import pickle
import pkgutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import dlbridge
import dlbridge._array
from messages import exactly
from paths import HELPERS

pytestmark = pytest.mark.numpy_jax  # NumPy's or JAX's arrays and dtypes as inputs: the floor stage runs it again


class Shifting(tuple):
    """A tuple whose iteration gives each of `answers` in turn (the last from
    then on). Its len() and indexing give the last answer's, which dlbridge
    must never read: it copies a tuple by iterating it once."""

    def __new__(cls, *answers):
        made = super().__new__(cls, answers[0])
        made.answers = answers
        made.reads = 0
        return made

    def __iter__(self):
        answer = self.answers[min(self.reads, len(self.answers) - 1)]
        self.reads += 1
        return iter(answer)

    def __len__(self):
        return len(self.answers[-1])

    def __getitem__(self, i):
        return self.answers[-1][i]


class ShiftingList(list):
    """Shifting's list."""

    def __init__(self, *answers):
        super().__init__(answers[0])
        self.answers = answers
        self.reads = 0

    __iter__ = Shifting.__iter__
    __len__ = Shifting.__len__
    __getitem__ = Shifting.__getitem__


class Flipping:
    """An integer whose __index__ gives each of `values` in turn (the last
    from then on); an exception among them is raised."""

    def __init__(self, *values):
        self.values = values
        self.reads = 0

    def __index__(self):
        value = self.values[min(self.reads, len(self.values) - 1)]
        self.reads += 1
        if isinstance(value, BaseException):
            raise value
        return value


class FlippingFloat:
    """Flipping's float: __float__ only."""

    __init__ = Flipping.__init__
    __float__ = Flipping.__index__


class Liar(int):
    """An int that compares equal to, and within, anything."""

    __eq__ = __le__ = __ge__ = __lt__ = lambda self, other: True
    __ne__ = __gt__ = lambda self, other: False
    __hash__ = int.__hash__


class LyingStr(str):
    """A str whose slices, comparisons and hash lie."""

    __getitem__ = lambda self, i: "?"
    __eq__ = lambda self, other: False
    __hash__ = lambda self: 0


# ---------------------------------------------------------------------------
# Keys: Array.__getitem__


# The key a tuple subclass gives when first iterated, and what it gives after.
KEY_ANSWERS = {
    "65-Nones-later": ((0,), (None,) * 65),  # used to write past the 64-entry stack arrays
    "2000-Nones-later": ((0,), (None,) * 2000),
    "a-65th-axis-later": ((None,) * 63, (None,) * 64),  # used to make a 65-axis array
    "more-ints-later": ((0,), (0, 0, 0)),  # used to read extents past the array's one axis
    "an-empty-key-later": ((1, None), ()),
    "two-Ellipses-later": ((slice(None, None, -1),), (Ellipsis, Ellipsis)),
}


@pytest.mark.parametrize("first, later", list(KEY_ANSWERS.values()), ids=list(KEY_ANSWERS))
def test_a_key_is_iterated_once(first, later):
    n = np.arange(3.0)
    key = Shifting(first, later)
    got = dlbridge.asarray(n)[key]
    assert key.reads == 1
    assert got.shape == n[first].shape and got.tolist() == n[first].tolist()


def test_an_index_is_read_once():
    a = dlbridge.asarray(np.arange(5.0))
    i = Flipping(1, 10**6)
    assert a[i].item() == 1.0 and i.reads == 1
    j = Flipping(4, TypeError("read twice"))
    assert a[None, j].tolist() == [4.0] and j.reads == 1
    start, stop = Flipping(1, 0), Flipping(4, 5)
    assert a[start:stop].tolist() == [1.0, 2.0, 3.0] and start.reads == stop.reads == 1


def test_transpose_and_item_read_their_arguments_once():
    a = dlbridge.asarray(np.arange(6.0).reshape(2, 3))
    axes = ShiftingList([1, 0], [0, 0, 0])
    assert a.transpose(axes).shape == (3, 2) and axes.reads == 1
    axis = Flipping(1, 7)
    assert a.transpose(axis, 0).shape == (3, 2) and axis.reads == 1
    flat, row = Flipping(4, 99), Flipping(1, -99)
    assert a.item(flat) == 4.0 and a.item(row, 0) == 3.0 and flat.reads == row.reads == 1


# ---------------------------------------------------------------------------
# Shapes: empty, zeros, full and pickles


@pytest.mark.parametrize("make", [dlbridge.empty, dlbridge.zeros, lambda shape: dlbridge.full(shape, 1.0)],
                         ids=["empty", "zeros", "full"])
def test_a_shape_is_read_once(make):
    shape = Shifting((2, 3), (2**40, 2**40))
    assert make(shape).shape == (2, 3) and shape.reads == 1
    listed = ShiftingList([2, 3], [-1])
    assert make(listed).shape == (2, 3) and listed.reads == 1
    extent = Flipping(2, -1)
    assert make((extent, 3)).shape == (2, 3) and extent.reads == 1


def test_a_shape_list_changed_while_it_is_read():
    shape = [2, None, 4]

    class Clearing:
        def __index__(self):
            shape.clear()  # the read stops here: what it saw is the shape
            return 3

    shape[1] = Clearing()
    assert dlbridge.zeros(shape).shape == (2, 3)
    shape = [2, None]

    class Growing:
        def __index__(self):
            shape.extend([1] * 100)
            return 3

    shape[1] = Growing()
    with pytest.raises(ValueError, match=exactly("zeros: expected ndim <= 64, got 102")):
        dlbridge.zeros(shape)


def test_a_pickled_shape_is_read_once():
    shape = Shifting((2,), (2**40,))
    a = dlbridge._array._from_pickle(bytes(16), "float64", shape, False)
    assert a.shape == (2,) and a.tolist() == [0.0, 0.0] and shape.reads == 1


# ---------------------------------------------------------------------------
# Nested sequences and fill values


def test_a_scalar_in_a_sequence_is_read_once():
    value = Flipping(1, 2**70)
    assert dlbridge.asarray([value, 2]).tolist() == [1, 2] and value.reads == 1
    real = FlippingFloat(0.5, 1j)
    assert dlbridge.asarray([[real]]).tolist() == [[0.5]] and real.reads == 1


def test_a_nested_list_changed_while_it_is_read():
    rows = [[None, 2], [3, 4]]

    class Replacing:
        def __index__(self):
            rows[:] = [[9] * 1000]  # the outer list was read before
            return 1

    rows[0][0] = Replacing()
    assert dlbridge.asarray(rows).tolist() == [[1, 2], [3, 4]]
    rows = [[None, 2], [3, 4]]

    class Lengthening:
        def __index__(self):
            rows[1].append(5)  # read after this: a ragged sequence
            return 1

    rows[0][0] = Lengthening()  # read before the second row, which is read as it is then
    with pytest.raises(ValueError, match=exactly("asarray: ragged nested sequence: axis 1 has lengths 2 and 3")):
        dlbridge.asarray(rows)


@pytest.mark.parametrize("dtype, value, want", [("int8", Flipping(1, 300), 1), ("int64", Flipping(1, 2**70), 1),
                                                ("float4_e2m1fn", FlippingFloat(1.0, 6.0), 1.0),
                                                ("float64", FlippingFloat(0.5, 1j), 0.5)])
def test_a_fill_value_is_read_once(dtype, value, want):
    assert dlbridge.full(4, value, dtype=dtype).tolist() == [want] * 4 and value.reads == 1


def test_a_fill_value_without_a_dtype_is_read_once():
    value = Flipping(5, 2**70)
    a = dlbridge.full(2, value)
    assert a.dtype == "int64" and a.tolist() == [5, 5] and value.reads == 1


# ---------------------------------------------------------------------------
# The array interfaces


def producer(attribute, *answers):
    """An object whose `attribute` property gives each of `answers` in turn
    (the last from then on); `reads` counts the reads."""

    class Producer:
        reads = 0

        def read(self):
            answer = answers[min(self.reads, len(answers) - 1)]
            self.reads += 1
            return answer

    setattr(Producer, attribute, property(Producer.read))
    return Producer()


def interface(owner, **fields):
    described = {"shape": owner.shape, "typestr": owner.dtype.str, "data": (owner.ctypes.data, False),
                 "version": 3}
    described.update(fields)
    return described


@pytest.fixture
def host():
    return np.arange(12, dtype=np.int16).reshape(3, 4)


@pytest.mark.parametrize("later", [{}, None, {"data": None}], ids=["empty-dict", "None", "no-data-tuple"])
def test_an_array_interface_is_read_once(host, later):
    obj = producer("__array_interface__", interface(host), later)
    a = dlbridge.asarray(obj)
    assert obj.reads == 1 and a.tolist() == host.tolist() and a.data_ptr == host.ctypes.data


def test_a_cuda_array_interface_is_read_once(host):
    obj = producer("__cuda_array_interface__", interface(host), [])
    a = dlbridge.asarray(obj)  # dlbridge labels host memory described this way cuda:0 and never reads it
    assert obj.reads == 1 and a.shape == (3, 4) and a.data_ptr == host.ctypes.data


class LyingDict(dict):
    """A dict whose methods say it holds nothing."""

    get = lambda self, key, default=None: default
    __getitem__ = lambda self, key: None
    __contains__ = lambda self, key: False


@pytest.mark.parametrize("attribute", ["__array_interface__", "__cuda_array_interface__"])
def test_an_interface_dict_is_read_by_its_entries(host, attribute):
    a = dlbridge.asarray(producer(attribute, LyingDict(interface(host))))
    assert a.shape == (3, 4) and a.data_ptr == host.ctypes.data


@pytest.mark.parametrize("attribute", ["__array_interface__", "__cuda_array_interface__"])
@pytest.mark.parametrize("field", ["shape", "strides", "data", "typestr"])
def test_interface_fields_are_read_once(host, attribute, field):
    """A tuple subclass whose later answers are a shape far past the memory,
    strides of another length, a NULL pointer; a typestr whose slices lie."""
    fields = {"shape": Shifting((3, 4), (2**40, 4)), "strides": Shifting((8, 2), (8, 2, 2)),
              "data": Shifting((host.ctypes.data, False), (0, True)), "typestr": LyingStr("<i2")}
    a = dlbridge.asarray(producer(attribute, interface(host, **{field: fields[field]})))
    assert a.shape == (3, 4) and a.strides == (4, 1) and a.data_ptr == host.ctypes.data
    assert a.dtype == "int16" and a.readonly is False


# ---------------------------------------------------------------------------
# Devices, dtypes and the arguments of __dlpack__


def test_dl_device_is_compared_as_read():
    a = dlbridge.zeros(3)
    with pytest.raises(BufferError, match=exactly("cannot export an array on cpu to device (1, 1): "
                                                  "the CPU is device 0")):
        a.__dlpack__(dl_device=(1, Liar(1)), max_version=(1, 3))
    # Only exact tuples are read: a subclass could iterate otherwise.
    with pytest.raises(TypeError, match="^max_version must be a"):
        a.__dlpack__(max_version=Shifting((1, 3), (0, 0)))
    with pytest.raises(TypeError, match="^dl_device must be a"):
        a.__dlpack__(dl_device=Shifting((1, 0), (2, 0)))


def test_device_parts_are_read_as_they_are():
    with pytest.raises(ValueError, match=exactly("device id must be an integer in [0, 2**31), got 1099511627776")):
        dlbridge.Device((1, Liar(2**40)))
    assert dlbridge.Device(LyingStr("cuda"), 1) == "cuda:1"
    assert dlbridge.Device(LyingStr("cuda:1")) == "cuda:1"
    assert dlbridge.DType(Shifting((2, 32), (99, 99))) == "float32"


def test_dtypes_and_devices_never_change():
    a = dlbridge.zeros(2)
    with pytest.raises(ValueError, match=exactly("DType.__init__ was called on an initialised DType (float64): a "
                                                 "DType never changes once made; make a new one instead")):
        a.dtype.__init__("complex128")  # every float64 array's dtype: buffers used to be read as complex128
    assert a.dtype.itemsize == 8 and dlbridge.asarray(array.array("d", [1.0, 2.0])).tolist() == [1.0, 2.0]
    cpu = dlbridge._types.as_device("cpu")
    with pytest.raises(ValueError, match=exactly("Device.__init__ was called on an initialised Device (cpu): a "
                                                 "Device never changes once made; make a new one instead")):
        cpu.__init__("cuda")
    assert dlbridge.zeros(1, device="cpu").device == "cpu"
    made = dlbridge.DType.__new__(dlbridge.DType)  # not yet made: __init__ may run, once
    made.__init__("int8")
    assert made == "int8"
    with pytest.raises(ValueError, match="never changes"):
        made.__init__("int16")


class MyDType(dlbridge.DType):
    pass


@pytest.mark.parametrize("cls, what", [(dlbridge.DType, "dtype"), (MyDType, "dtype"), (dlbridge.Device, "device")])
def test_dtypes_and_devices_made_by_new_alone_are_refused(cls, what):
    # They used to act as float32 and cpu: empty(dtype=...) gave float32 garbage.
    made = cls.__new__(cls)
    message = exactly(f"this {cls.__name__} holds no {what}: it was made by {cls.__name__}.__new__ without "
                      f"{'DType' if what == 'dtype' else 'Device'}.__init__")
    keyword = "dtype" if what == "dtype" else "device"
    uses = [lambda: dlbridge.empty((2,), **{keyword: made}), lambda: dlbridge.zeros((2,), **{keyword: made}),
            lambda: dlbridge.asarray(np.ones(2), **{keyword: made}), lambda: dlbridge.asarray([1.0], **{keyword: made}),
            lambda: cls(made), lambda: pickle.dumps(made)]
    uses += [lambda name=name: getattr(made, name) for name in (
        ("code", "bits", "lanes", "itemsize", "name", "typestr") if what == "dtype" else ("type", "id", "name"))]
    for use in uses:
        with pytest.raises(ValueError, match=message):
            use()
    assert repr(made) == str(made) == f"<{cls.__name__} holding no {what}>"
    assert made == made and made != cls.__new__(cls) and hash(made) == hash(made)
    assert made != ("float32" if what == "dtype" else "cpu")


# ---------------------------------------------------------------------------
# What a subclass or a private helper could make dlbridge read


class Overriding(dlbridge.Array):
    """An Array whose description lies: dlbridge's repr, pickle and array
    interface read the array itself."""

    shape = property(lambda self: (10**6,))
    dtype = property(lambda self: dlbridge.DType("complex128"))
    readonly = property(lambda self: True)

    def copy(self):
        return dlbridge.asarray(np.arange(4.0))[::-1]  # used to be pickled from its last element on


def test_what_a_subclass_overrides_is_not_what_dlbridge_reads():
    a = Overriding(np.arange(8.0)[::2])
    assert repr(a) == "Array([0., 2., 4., 6.], dtype=float64)"
    assert pickle.loads(pickle.dumps(a)).tolist() == [0.0, 2.0, 4.0, 6.0]
    assert pickle.loads(pickle.dumps(a, protocol=2)).tolist() == [0.0, 2.0, 4.0, 6.0]
    assert a.__array_interface__["shape"] == (4,) and a.__array_interface__["typestr"] == "<f8"


def test_repr_reads_elements_through_item():
    # Packed arrays too: item() reads an element wherever it lies.
    a = dlbridge.full((2, 3), 1.5, dtype="float4_e2m1fn")
    assert a.item(1, 2) == 1.5 and a.item(5) == 1.5
    assert repr(a) == "Array([[1.5, 1.5, 1.5],\n       [1.5, 1.5, 1.5]], dtype=float4_e2m1fn)"


def test_a_bytes_helper_made_by_new_has_no_buffer():
    helper = dlbridge._array._Bytes

    class Sub(helper):
        pass

    for made in (helper.__new__(helper), Sub()):
        with pytest.raises(BufferError, match=exactly("this _Bytes holds no array: only Array.__reduce_ex__ "
                                                      "makes one that does")):
            memoryview(made)


# ---------------------------------------------------------------------------
# Every reachable name, called with hostile arguments (in a child process)

# Every compiled module's module-level callables and classes; a new one
# must be added here, and so gets called below.
REACHABLE = {
    "dlbridge._array": {"Array", "DeviceType", "_Bytes", "_from_pickle", "empty", "full", "get_copy_threads",
                        "set_copy_threads", "zeros"},
    "dlbridge._backend": {"build_info", "release_cuda_cache"},
    "dlbridge._importers": {"_HeldBuffer", "_reads_ndarray_fields", "asarray", "from_dlpack"},
    "dlbridge._types": {"DType", "Device", "DeviceType", "as_device", "as_dtype"},
    "dlbridge._dlpack": set(),
}
MODULES = tuple(importlib.import_module(name) for name in REACHABLE)


def test_every_compiled_module_is_listed():
    extension = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    compiled = {f"dlbridge.{m.name}" for m in pkgutil.iter_modules(dlbridge.__path__)
                if m.module_finder.find_spec(m.name).origin.endswith(extension)}
    assert compiled == set(REACHABLE)


def reachable():
    """(module name, name, value) of every callable and class a module defines."""
    for module in MODULES:
        for name in dir(module):
            value = getattr(module, name)
            if callable(value) and getattr(value, "__module__", "").startswith("dlbridge"):
                yield module.__name__, name, value


def test_every_reachable_name_is_listed():
    found = {module: set() for module in REACHABLE}
    for module, name, _ in reachable():
        found[module].add(name)
    assert found == REACHABLE


class SkipsInit(dlbridge.Array):
    def __init__(self):
        pass


def hostile_values():
    helper = dlbridge._array._Bytes
    # No int from 2**31 to 2**61 alone: as a shape it could be allocated.
    return [
        None, True, 0, 1, -1, 3, 2**62, 2**63, 2**64, -2**63 - 1, 10**100, 1.5, float("nan"), 1j,
        "x", "float64", "cuda", b"", (), (1,), (-1,), (2, 2), (2**62,), (2**64,), (1, 2**63), (-2**40,),
        (2**40, -1), (None,) * 70, [], [1.0, 2.0], {}, {"data": (0, False)}, object(), slice(None, None, -1),
        Ellipsis, Flipping(1, 10**6, 2**63), Shifting((0,), (None,) * 100), Liar(1), LyingStr("cpu"),
        dlbridge.zeros(3), dlbridge.zeros(()), dlbridge.asarray(np.arange(6.0)[::-2]),
        dlbridge.Array.__new__(dlbridge.Array), SkipsInit(), dlbridge.DType.__new__(dlbridge.DType),
        dlbridge.Device.__new__(dlbridge.Device), helper.__new__(helper), np.zeros(2), np.float32(2),
        memoryview(b"abcdefgh"), bytearray(8),
    ]


def instances(cls):
    """Makers of instances of a dlbridge class: ordinary ones, made by
    __new__ alone, subclass instances, the shared ones."""
    if issubclass(cls, dlbridge.Array):
        return [lambda: dlbridge.zeros((2, 3)), lambda: dlbridge.asarray(np.arange(6.0)[::-2]),
                lambda: dlbridge.zeros(()), lambda: dlbridge.full(4, 1.0, dtype="float4_e2m1fn"),
                lambda: dlbridge.Array.__new__(dlbridge.Array), SkipsInit]
    if cls is dlbridge.DType:
        return [lambda: dlbridge.DType("float32"), lambda: cls.__new__(cls), lambda: dlbridge.zeros(1).dtype]
    if cls is dlbridge.Device:
        return [lambda: dlbridge.Device("cuda", 1), lambda: cls.__new__(cls),
                lambda: dlbridge._types.as_device("cpu")]
    if cls is dlbridge._array._Bytes:
        return [lambda: cls.__new__(cls), lambda: dlbridge.zeros(3).__reduce_ex__(5)[1][0].raw().obj]
    return []


KEYWORDS = ("dtype", "device", "copy", "stream", "max_version", "dl_device")
OPERATIONS = {"repr": repr, "str": str, "hash": hash, "bool": bool, "int": int, "float": float, "complex": complex,
              "operator.index": operator.index, "len": len, "list": list, "memoryview": memoryview,
              "pickle protocol 2": lambda x: pickle.dumps(x, protocol=2),
              "pickle protocol 5": lambda x: pickle.dumps(x, protocol=5)}


def call_everything(record):
    """Calls every reachable callable, every member of every class on every
    kind of instance, and every operation, with hostile arguments (#i is
    hostile_values()[i]). Before each call its description is written to the
    file `record`, so that a crash names it. Returns the number of calls."""
    values = hostile_values()
    every = range(len(values))
    few = every[::5]
    calls = 0

    def attempt(text, f, *args, **kwargs):
        nonlocal calls
        os.pwrite(record, text.encode().ljust(400)[:400], 0)
        calls += 1
        try:
            f(*args, **kwargs)
        except SystemError:  # a C function that failed without saying why
            raise
        except Exception:  # noqa: BLE001: any clean exception will do
            pass

    def described(picks):
        return ", ".join(f"#{i}" for i in picks)

    for module, name, f in reachable():
        label = f"{module}.{name}"
        for arity, pool in ((0, every), (1, every), (2, every), (3, few), (4, few[:5])):
            for picks in itertools.product(pool, repeat=arity):
                attempt(f"{label}({described(picks)})", f, *[values[i] for i in picks])
        prefixes = [(), (3,), ([1.0],), ((2, 2), 1.0)]
        for keyword, i, prefix in itertools.product(KEYWORDS, every, prefixes):
            attempt(f"{label}(*{prefix!r}, {keyword}=#{i})", f, *prefix, **{keyword: values[i]})
        if not isinstance(f, type):
            continue
        for i in every:
            attempt(f"{label}.__new__({name}, #{i})", f.__new__, f, values[i])
        members = sorted({member for k in f.__mro__ if k.__module__.startswith("dlbridge") for member in vars(k)})
        for (n, make), member in itertools.product(enumerate(instances(f)), members):
            attempt(f"{label} instance {n}: getattr(instance, {member!r})", lambda: getattr(make(), member))
            for picks in itertools.chain([()], ((i,) for i in every), itertools.product(few, repeat=2)):
                attempt(f"{label} instance {n}: instance.{member}({described(picks)})",
                        lambda: getattr(make(), member)(*[values[i] for i in picks]))
        for n, make in enumerate(instances(f)):
            for operation, use in OPERATIONS.items():
                attempt(f"{label} instance {n}: {operation}", lambda: use(make()))
            for i in every:
                attempt(f"{label} instance {n}: instance[#{i}]", lambda: make()[values[i]])
                attempt(f"{label} instance {n}: instance == #{i}", lambda: make() == values[i])
    return calls


def test_no_reachable_call_crashes():
    """Each call must end in a result or an exception (not SystemError); a
    crash fails the child process, whose record names the call."""
    with tempfile.NamedTemporaryFile() as record:
        # The child imports the helpers beside conftest.py, as pytest's workers do.
        helpers = os.pathsep.join(filter(None, [str(HELPERS), os.environ.get("PYTHONPATH")]))
        child = subprocess.run([sys.executable, __file__, record.name], capture_output=True, text=True,
                               env={**os.environ, "PYTHONPATH": helpers}, timeout=1200)
        last = record.read().decode().strip()
    legend = "\n".join(f"#{i}: {value!r}"[:200] for i, value in enumerate(hostile_values()))
    assert child.returncode == 0, (f"the call {last} crashed or failed:\n{child.stdout}\n{child.stderr[-4000:]}\n"
                                   f"where\n{legend}")
    assert int(child.stdout.split()[-1]) > 10_000


if __name__ == "__main__":
    print("calls:", call_everything(os.open(sys.argv[1], os.O_WRONLY)))
