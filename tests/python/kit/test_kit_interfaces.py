"""The kit's clauses of the array interfaces, the buffer protocol and the C
exchange table (dlbridge.testing._interfaces and _exchange): their verdicts
on dlbridge and on the real libraries, and seeded producers, each with one
bug, that exactly the clause meant for that bug fails."""
from __future__ import annotations

import ctypes
import math
import re
from ctypes import CFUNCTYPE, c_int

import numpy as np
import pytest

import dlbridge
import kit_seeded_consumers
from dlbridge.testing import FAIL, NOT_APPLICABLE, PASS, check_consumer, check_producer, clauses, libraries
from dlbridge.testing._abi import (ALLOCATOR_ARGS, DLPackExchangeAPI, DLPackExchangeAPIHeader, DLPackVersion, Table,
                                   _api, _static_name)
from dlbridge.testing._gpu import unavailable as gpu_unavailable
from peers import ARRAY_API_STRICT_EXPORTS_A_BUFFER

pytestmark = pytest.mark.numpy_jax  # NumPy's or JAX's arrays and dtypes as inputs: the floor stage runs it again

MODULES = ("dlbridge.testing._interfaces", "dlbridge.testing._exchange")
OURS = [c.id for c in clauses("producer") if c.check.__module__ in MODULES]


def ids(group: str) -> list[str]:
    return [i for i in OURS if i.split(".")[1] == group]


ARRAY_INTERFACE, CUDA_ARRAY_INTERFACE = ids("array-interface"), ids("cuda-array-interface")
BUFFER, EXCHANGE = ids("buffer"), ids("exchange")


def verdicts(factory) -> dict[str, str]:
    return {r.clause: r.verdict for r in check_producer(factory, only=OURS)}


def results(factory) -> dict:
    return {r.clause: r for r in check_producer(factory, only=OURS)}


def expect(**groups: str) -> dict[str, str]:
    """Every clause of ours: those of the named groups with their verdict,
    the rest not applicable."""
    named = {"array_interface": ARRAY_INTERFACE, "cuda_array_interface": CUDA_ARRAY_INTERFACE, "buffer": BUFFER,
             "exchange": EXCHANGE}
    verdict = dict.fromkeys(OURS, NOT_APPLICABLE)
    for group, value in groups.items():
        verdict.update(dict.fromkeys(named[group], value))
    return verdict


def only_fails(factory, clause: str, *, also_not_applicable: tuple[str, ...] = ()) -> str:
    """Asserts that `clause` is the one clause of ours that fails on the
    factory; returns what it observed."""
    found = results(factory)
    failed = [i for i, r in found.items() if r.verdict == FAIL]
    assert failed == [clause], {i: found[i].observed for i in failed}
    for i in also_not_applicable:
        assert found[i].verdict == NOT_APPLICABLE, (i, found[i])
    return found[clause].observed


def test_clauses_are_registered_with_their_sources():
    assert len(OURS) == len(set(OURS)) == 29
    sources = {"NumPy array interface (v3)", "CUDA Array Interface (v3)", "Python buffer protocol (PEP 3118)",
               "dlpack.h"}
    for c in clauses("producer"):
        if c.id in OURS:
            assert c.source in sources and c.cites and c.tier == "cpu", c


# -- dlbridge and the real libraries -------------------------------------------------------

PEERS_ONLY = pytest.mark.peers_only


@pytest.mark.parametrize("factory, expected", [
    ("dlbridge_array", expect(array_interface=PASS, buffer=PASS, exchange=PASS)),
    pytest.param("numpy_array", expect(array_interface=PASS, buffer=PASS), marks=PEERS_ONLY),
    pytest.param("torch_tensor", expect(exchange=PASS), marks=[PEERS_ONLY, pytest.mark.needs_torch]),  # its table, slot by slot
    pytest.param("jax_array", expect(buffer=PASS), marks=PEERS_ONLY),
    # It hides NumPy's array interface, and its buffer where Python ignores its __buffer__.
    pytest.param("array_api_strict_array", expect(buffer=PASS if ARRAY_API_STRICT_EXPORTS_A_BUFFER else NOT_APPLICABLE),
                 marks=PEERS_ONLY),
    pytest.param("memoryview_of", expect(buffer=PASS) | {"producer.buffer.dlpack-agrees": NOT_APPLICABLE},
                 marks=PEERS_ONLY),
    pytest.param("array_array", expect(buffer=PASS) | {"producer.buffer.dlpack-agrees": NOT_APPLICABLE},
                 marks=PEERS_ONLY),
    pytest.param("bytes_of", expect(buffer=PASS) | {"producer.buffer.dlpack-agrees": NOT_APPLICABLE},
                 marks=PEERS_ONLY),
])
@pytest.mark.filterwarnings("ignore:Explicitly requested dtype")  # JAX makes int32 for int64, and says so
def test_verdicts_on_the_real_libraries(factory, expected):
    if gpu_unavailable() is None and factory in ("dlbridge_array", "torch_tensor", "jax_array"):
        pytest.skip("with a GPU, the CUDA array interface clauses check CUDA arrays (the GPU tier's tests)")
    assert verdicts(getattr(libraries, factory)) == expected


def test_a_factory_that_makes_another_dtype_is_taken_at_its_word():
    # JAX without 64-bit types makes int32 for int64; its buffer's format
    # says int32, as its DLPack export does: not the interface's fault.
    def narrowing(shape, dtype, *, read_only=False):
        return libraries.numpy_array(shape, {"int64": "int32", "float64": "float32"}.get(dtype, dtype))
    found = results(narrowing)
    for clause in ("producer.buffer.format", "producer.array-interface.typestr"):
        assert found[clause].verdict == PASS
        assert found[clause].observed.endswith("(not checked: asked for int64, the factory made int32; asked for "
                                               "float64, the factory made float32)")


# -- seeded bugs: __array_interface__ ------------------------------------------------------


class Interfaced:
    """A dlbridge array behind a wrapper whose __array_interface__ is the
    array's, changed by `doctor`; DLPack goes to the array."""

    def __init__(self, array, doctor):
        self.array, self.doctor = array, doctor

    @property
    def __array_interface__(self):
        return self.doctor(dict(self.array.__array_interface__), self.array)

    def __dlpack__(self, **keywords):
        return self.array.__dlpack__(**keywords)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def interfaced(doctor):
    def factory(shape, dtype, *, read_only=False):
        return Interfaced(libraries.dlbridge_array(shape, dtype, read_only=read_only), doctor)
    return factory


def _swapped(typestr: str) -> str:
    return typestr if typestr[0] == "|" else (">" if typestr[0] == "<" else "<") + typestr[1:]


@pytest.mark.parametrize("doctor, clause, observed", [
    # the seeded bug: writable, says the data tuple of read-only data
    (lambda d, a: d | {"data": (d["data"][0], False)}, "producer.array-interface.data",
     re.compile(r"data \(0x[0-9a-f]+, False\) of read-only data: says writable")),
    (lambda d, a: d | {"version": 2}, "producer.array-interface.version", "version 2"),
    (lambda d, a: d | {"typestr": _swapped(d["typestr"])}, "producer.array-interface.typestr",
     "typestr of the int16 array: '>i2' says the other byte order for 2-byte elements in little-endian memory"),
    (lambda d, a: d | {"typestr": d["typestr"].replace("<", "|")}, "producer.array-interface.typestr",
     "typestr of the int16 array: '|i2' says byte order not relevant for 2-byte elements in little-endian memory"),
    (lambda d, a: d | {"shape": list(d["shape"])}, "producer.array-interface.shape",
     "shape [2, 3] of a [2, 3] array: not a tuple of ints"),
    (lambda d, a: d | {"strides": (4, 12)}, "producer.array-interface.strides",
     "strides (4, 12) of a [2, 3] float32 array, whose DLPack export has byte strides (12, 4)"),
    (lambda d, a: d | {"data": (0, False)} if a.size else d, "producer.array-interface.data",
     "data (0, False) of an array of 6 elements: a NULL pointer"),
], ids=["writable-claim", "version", "byte-order", "not-relevant-order", "shape-list", "strides", "null-data"])
def test_seeded_array_interface_bugs(doctor, clause, observed):
    seen = only_fails(interfaced(doctor), clause)
    assert observed.fullmatch(seen) if isinstance(observed, re.Pattern) else seen == observed, seen


def test_the_seeded_array_interface_is_otherwise_right():
    assert verdicts(interfaced(lambda d, a: d)) == expect(array_interface=PASS)


def test_array_interface_data_as_a_buffer_or_the_objects_own_buffer():
    # NumPy's other forms of data: a buffer object, or None for the object's
    # own buffer (with offset).
    def as_buffer(d, a):
        return d | {"data": memoryview(a)}
    found = results(interfaced(as_buffer))
    assert {i: found[i].verdict for i in ARRAY_INTERFACE} == dict.fromkeys(ARRAY_INTERFACE, PASS)
    assert "data memoryview (read-only True) at offset 0 of the read-only array" in \
        found["producer.array-interface.data"].observed
    # without a buffer of its own, data=None cannot be read
    observed = only_fails(interfaced(lambda d, a: d | {"data": None}), "producer.array-interface.data",
                          also_not_applicable=("producer.array-interface.values",))
    assert observed.startswith("data absent: x's own buffer, which exports no buffer")


# -- seeded bugs: __cuda_array_interface__ (metadata, on host memory) --------------------


class CudaLike:
    """NumPy data in Fortran order, described by a __cuda_array_interface__
    (which the kit checks as metadata, not reading the memory) changed by
    `doctor`, and exported by __dlpack__."""

    def __init__(self, array, doctor):
        self.array, self.doctor = array, doctor

    @property
    def __cuda_array_interface__(self):
        ai = self.array.__array_interface__
        honest = {"version": 3, "shape": ai["shape"], "typestr": ai["typestr"], "strides": ai["strides"],
                  "data": (ai["data"][0] if self.array.size else 0, ai["data"][1]), "stream": None}
        return self.doctor(honest)

    def __dlpack__(self, **keywords):
        return self.array.__dlpack__(**keywords)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def cuda_like(doctor):
    def factory(shape, dtype, *, read_only=False):
        made = np.array(np.arange(math.prod(shape)).astype(dtype).reshape(shape), order="F")
        made.flags.writeable = not read_only
        return CudaLike(made, doctor)
    return factory


@pytest.mark.parametrize("doctor, clause, observed", [
    # the seeded bug (Warp's crash): Fortran-order data, strides None
    (lambda d: d | {"strides": None}, "producer.cuda-array-interface.strides",
     "strides None (C order) of a [2, 3] float32 array, whose DLPack export has byte strides (4, 8)"),
    (lambda d: {k: v for k, v in d.items() if k != "strides"}, "producer.cuda-array-interface.strides",
     "strides absent (C order) of a [2, 3] float32 array, whose DLPack export has byte strides (4, 8)"),
    (lambda d: d | {"stream": 0}, "producer.cuda-array-interface.stream", "stream 0: 0 is disallowed"),
    (lambda d: d | {"stream": "1"}, "producer.cuda-array-interface.stream", "stream '1': neither None nor an int"),
    (lambda d: d | {"version": 2}, "producer.cuda-array-interface.version", "version 2"),
    (lambda d: d | {"mask": np.ones(3)}, "producer.cuda-array-interface.mask",
     "mask ndarray: neither None nor an object with __cuda_array_interface__"),
    (lambda d: d | {"data": (d["data"][0], int(d["data"][1]))}, "producer.cuda-array-interface.data",
     re.compile(r"data \(\d+, 0\): not an \(address, read-only bool\) pair")),
    (lambda d: d | {"data": (8, False)} if d["shape"] == (0,) else d, "producer.cuda-array-interface.data",
     "data (8, False) of an empty array: not 0"),
], ids=["strides-none", "strides-absent", "stream-0", "stream-str", "version-2", "mask", "flag-int", "empty-data"])
def test_seeded_cuda_array_interface_bugs(doctor, clause, observed):
    seen = only_fails(cuda_like(doctor), clause)
    assert observed.fullmatch(seen) if isinstance(observed, re.Pattern) else seen == observed, seen


def test_the_seeded_cuda_array_interface_is_otherwise_right():
    found = results(cuda_like(lambda d: d))
    assert {r: v.verdict for r, v in found.items()} == expect(cuda_array_interface=PASS)
    assert found["producer.cuda-array-interface.strides"].observed == \
        "strides (4, 8), as the DLPack export lays out the [2, 3] float32 array"
    assert found["producer.cuda-array-interface.stream"].observed == "stream None"


# -- seeded bugs: the buffer protocol -----------------------------------------------------

# A struct format of the same size and another type, for each format.
LIES = {"?": "b", "b": "B", "B": "b", "h": "H", "H": "h", "i": "f", "I": "i", "q": "d", "Q": "q", "f": "i", "d": "q"}


def misformatted(shape, dtype, *, read_only=False):
    """A memoryview whose format names another type of the same size."""
    view = libraries.memoryview_of(shape, dtype)
    lying = view.cast("B").cast(LIES[view.format], shape)
    return lying.toreadonly() if read_only else lying


def test_seeded_buffer_with_the_wrong_format():
    observed = only_fails(misformatted, "producer.buffer.format", also_not_applicable=("producer.buffer.values",))
    assert observed == "buffer of the bool array: format 'b' describes int8"


# -- seeded bugs: the exchange table ------------------------------------------------------

DLBRIDGE_TABLE = DLPackExchangeAPI.from_address(Table(dlbridge.Array.__dlpack_c_exchange_api__).address)
KEPT: list = []  # tables and callbacks the seeded types point at, kept for the process


def table_like_dlbridges(**slots) -> DLPackExchangeAPI:
    table = DLPackExchangeAPI()
    ctypes.pointer(table)[0] = DLBRIDGE_TABLE
    for name, value in slots.items():
        setattr(table, name, value)
    KEPT.append(table)
    return table


def array_type(table, *, name: bytes = b"dlpack_exchange_api"):
    """A factory of dlbridge.Array subclasses publishing `table` in a
    capsule named `name` (dlbridge's slots take them, as Arrays)."""
    capsule = _api.PyCapsule_New(ctypes.addressof(table), _static_name(name), None)
    kind = type("Seeded", (dlbridge.Array,), {"__dlpack_c_exchange_api__": capsule, "__c_dlpack_exchange_api__": None})

    def factory(shape, dtype, *, read_only=False):
        return kind(libraries.dlbridge_array(shape, dtype, read_only=read_only))
    return factory


def cyclic_table() -> DLPackExchangeAPI:
    newer = table_like_dlbridges()
    older = DLPackExchangeAPIHeader(DLPackVersion(1, 2), ctypes.pointer(newer.header))
    KEPT.append(older)
    newer.header.prev_api = ctypes.pointer(older)
    return newer


_ALLOCATOR = CFUNCTYPE(c_int, *ALLOCATOR_ARGS)
_dlbridge_allocate = _ALLOCATOR(DLBRIDGE_TABLE.managed_tensor_allocator)


@_ALLOCATOR
def silent_allocator(prototype, out, context, set_error):
    """dlbridge's allocator, except that it fails without calling SetError
    where the byte size overflows."""
    t = prototype.contents
    if math.prod(t.shape[i] for i in range(t.ndim)) * t.dtype.bits // 8 >= 2 ** 63:
        return -1
    return _dlbridge_allocate(prototype, out, context, set_error)


CALLERS = {"managed_tensor_allocator": ("producer.exchange.allocator", "producer.exchange.error-return"),
           "managed_tensor_from_py_object_no_sync": ("producer.exchange.from-py-object", "producer.exchange.deleter"),
           "managed_tensor_to_py_object_no_sync": ("producer.exchange.to-py-object",),
           "current_work_stream": ("producer.exchange.current-work-stream",)}


def test_seeded_table_with_a_cyclic_prev_api_chain():
    table = cyclic_table()
    observed = only_fails(array_type(table), "producer.exchange.prev-api")
    assert observed == "Seeded.__dlpack_c_exchange_api__: the chain 1.3 -> 1.2 loops back to the 1.3 table at " \
                       f"{ctypes.addressof(table):#x}"


@pytest.mark.parametrize("slot", CALLERS)
def test_seeded_table_with_a_null_required_slot(slot):
    observed = only_fails(array_type(table_like_dlbridges(**{slot: None})), "producer.exchange.slots",
                          also_not_applicable=CALLERS[slot])
    assert observed == f"Seeded.__dlpack_c_exchange_api__: {slot} NULL"


def test_seeded_table_whose_error_return_sets_no_exception():
    KEPT.append(silent_allocator)
    table = table_like_dlbridges(managed_tensor_allocator=ctypes.cast(silent_allocator, ctypes.c_void_p).value)
    observed = only_fails(array_type(table), "producer.exchange.error-return")
    assert observed == "a 0x4000000000000000 x 4 float32 prototype: returned -1 without calling SetError"


@pytest.mark.parametrize("message", [b"", None], ids=["empty", "NULL"])
def test_a_table_whose_error_has_no_message_passes(message):
    """SetError with an empty or NULL message is conforming (dlpack.h asks
    for a call, not for words)."""
    @_ALLOCATOR
    def wordless_allocator(prototype, out, context, set_error):
        t = prototype.contents
        if math.prod(t.shape[i] for i in range(t.ndim)) * t.dtype.bits // 8 >= 2 ** 63:
            set_error(context, b"MemoryError", message)
            return -1
        return _dlbridge_allocate(prototype, out, context, set_error)
    KEPT.append(wordless_allocator)
    table = table_like_dlbridges(managed_tensor_allocator=ctypes.cast(wordless_allocator, ctypes.c_void_p).value)
    found = results(array_type(table))
    assert found["producer.exchange.error-return"].verdict == PASS, found["producer.exchange.error-return"]
    assert found["producer.exchange.error-return"].observed.endswith("SetError('MemoryError', '')")


def test_seeded_table_with_the_wrong_capsule_name():
    found = results(array_type(table_like_dlbridges(), name=b"dlpack_exchange"))
    assert found["producer.exchange.capsule"].verdict == FAIL
    assert found["producer.exchange.capsule"].observed == \
        "Seeded.__dlpack_c_exchange_api__ is a capsule named b'dlpack_exchange', not b'dlpack_exchange_api'"
    assert all(found[i].verdict == NOT_APPLICABLE for i in EXCHANGE if i != "producer.exchange.capsule")


def test_seeded_table_of_another_major_version():
    table = table_like_dlbridges()
    table.header.version = DLPackVersion(2, 0)
    observed = only_fails(array_type(table), "producer.exchange.version",
                          also_not_applicable=[i for i in EXCHANGE if i not in (
                              "producer.exchange.capsule", "producer.exchange.version", "producer.exchange.prev-api")])
    assert observed == "Seeded.__dlpack_c_exchange_api__: version 2.0, and no 1.x table down its prev_api chain"


def test_the_seeded_table_is_otherwise_right():
    # a copy of dlbridge's table, and one offering an older 1.x table too
    older = table_like_dlbridges()
    older.header.version = DLPackVersion(1, 2)
    newer = table_like_dlbridges()
    newer.header.prev_api = ctypes.pointer(older.header)
    for table in (table_like_dlbridges(), newer):
        assert verdicts(array_type(table)) == expect(array_interface=PASS, buffer=PASS, exchange=PASS)


# -- consumers of __array_interface__ ---------------------------------------------------------

CONSUMER_IDS = ["consumer.array-interface.strides-absent", "consumer.array-interface.strides-none",
                "consumer.array-interface.read-only"]


def consumer_verdicts(function) -> dict:
    return {r.clause: r for r in check_consumer(function, only=CONSUMER_IDS)}


@pytest.mark.parametrize("function", [kit_seeded_consumers.numpy_asarray, libraries.dlbridge_asarray],
                         ids=["numpy.asarray", "dlbridge.asarray"])
def test_array_interface_consumers_that_pass(function):
    found = consumer_verdicts(function)
    assert {c: r.verdict for c, r in found.items()} == dict.fromkeys(CONSUMER_IDS, PASS), found
    assert "read-only on the object's memory (said by its buffer)" in \
        found["consumer.array-interface.read-only"].observed


@pytest.mark.parametrize("name, clause, observed", [
    ("needs_strides", "consumer.array-interface.strides-absent", "raised KeyError: 'strides'"),
    ("ignores_the_read_only_flag", "consumer.array-interface.read-only",
     "data (address, True): the result shares the object's read-only memory and its buffer is writable")])
def test_seeded_array_interface_consumers(name, clause, observed):
    found = consumer_verdicts(getattr(kit_seeded_consumers, name))
    assert {c for c, r in found.items() if r.verdict == FAIL} == {clause}
    assert observed in found[clause].observed


def test_a_consumer_of_dlpack_alone_is_not_asked_about_the_array_interface():
    found = consumer_verdicts(libraries.numpy_from_dlpack)
    assert {r.verdict for r in found.values()} == {NOT_APPLICABLE}
    assert "the consumer does not import an __array_interface__ (with strides (12, 4) it raised" in \
        found["consumer.array-interface.read-only"].observed
