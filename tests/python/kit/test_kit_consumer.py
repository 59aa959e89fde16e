"""The conformance kit's consumer clauses (dlbridge.testing._consumer): the
hostile-producer zoo and the read-back of a consumer's result; seeded
consumers with one bug each, each caught by exactly the clause meant to
catch it; dlbridge's own consumer passing every clause; and the verdicts of
the real libraries, each recorded with the library's own words."""
import ctypes
import gc

import numpy as np
import pytest

import dlbridge
import kit_seeded_consumers as seeded
from dlbridge.testing import FAIL, NOT_APPLICABLE, PASS, WARN, check, check_consumer, clauses
from dlbridge.testing import _consumer as kit
from dlbridge.testing import _exchange
from dlbridge.testing import libraries
from dlbridge.testing._abi import FLAG_READ_ONLY, Consumed, Table, capsule_name, delete
from dlbridge.testing._model import Failed
from peers import ARRAY_API_STRICT_EXPORTS_A_BUFFER, JAX_COPY_TRUE_SHARES

# Only this module's clauses: the other modules' consumer clauses are theirs to test.
IDS = [c.id for c in clauses("consumer") if c.check.__module__ == kit.__name__]


def verdicts(results):
    return {r.clause: r for r in results if r.clause in IDS}


def test_the_clauses_are_these():
    assert IDS == ["consumer.import.values", "consumer.import.0-d", "consumer.import.zero-copy", "consumer.request.max-version",
                   "consumer.request.stream", "consumer.retry.legacy-producer", "consumer.retry.device-copy",
                   "consumer.strides.null", "consumer.legacy-refused", "consumer.legacy-answer", "consumer.strides.honoured",
                   "consumer.byte-offset",
                   "consumer.version.major-2", "consumer.dtype.unknown-code", "consumer.dtype.lanes",
                   "consumer.empty.null-data", "consumer.read-only", "consumer.device.absent",
                   "consumer.copy.true", "consumer.copy.false", "consumer.device.cpu", "consumer.capsule.raw", "consumer.deleter.released", "consumer.deleter.once"]
    for c in clauses("consumer"):
        if c.id in IDS:
            assert c.source in ("DLPack Python specification", "dlpack.h", "array API standard"), c.id
            assert c.cites and c.title and c.tier == "cpu", c.id


# -- the zoo's tensors and the read-back -------------------------------------------------------


@pytest.mark.parametrize("case", [kit.BASELINE, kit.MATRIX, kit.SCALAR, kit.TRANSPOSED, kit.ZERO, kit.NEGATIVE,
                                  kit.OFFSET, kit.NULL_STRIDES, kit.NULL_STRIDES.smaller, kit.NULL_STRIDES_LEGACY,
                                  kit.NULL_STRIDES_LEGACY.smaller, kit.LEGACY, kit.EMPTY, kit.EMPTY.smaller,
                                  kit.READ_ONLY],
                         ids=lambda case: case.name)
def test_each_case_holds_what_it_expects(case):
    """Read by the kit's own ABI reading (not by any consumer): the expected
    values are what the hand-built tensor holds, and data is 256-aligned."""
    managed = case.managed(case.versioned)
    tensor = Consumed(managed.capsule())
    assert tensor.read(ctypes.c_float) == list(case.expected)
    assert tensor.shape == case.shape and tensor.strides == case.strides
    if not case.null_data:
        assert (tensor.tensor.data - case.first * 4) % 256 == 0
    tensor.release()
    assert managed.deleter_calls == 1


def test_a_producer_answers_max_version_as_the_array_api_recommends():
    producer = kit.ZooProducer(kit.BASELINE)
    names = [capsule_name(producer.__dlpack__(**keywords))
             for keywords in ({}, {"max_version": (0, 8)}, {"max_version": (1, 0)}, {"stream": None})]
    assert names == [b"dltensor", b"dltensor", b"dltensor_versioned", b"dltensor"]
    assert capsule_name(kit.ZooProducer(kit.LEGACY).__dlpack__(max_version=(1, 3))) == b"dltensor"
    lent = [managed for managed, _ in producer.lent]
    del producer
    gc.collect()
    assert [m.deleter_calls for m in lent] == [1, 1, 1, 1]  # unconsumed: the producer's destructor


def test_an_old_producer_refuses_the_keywords_it_predates():
    producer = kit.ZooProducer(kit.BASELINE, accepts=("stream",))
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_version'"):
        producer.__dlpack__(stream=None, max_version=(1, 0))
    assert capsule_name(producer.__dlpack__(stream=None)) == b"dltensor"
    assert producer.calls == [{"stream": None, "max_version": (1, 0)}, {"stream": None}]
    assert not hasattr(kit.DevicelessZooProducer(kit.BASELINE), "__dlpack_device__")


@pytest.mark.parametrize("read_only", [False, True])
def test_read_back_of_a_numpy_array(read_only):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)[:, ::-1]
    a.flags.writeable = not read_only
    got = kit.read_back(a)
    assert (got.via, got.shape, got.dtype, got.values) == ("__dlpack__", (2, 3), "float32", [2, 1, 0, 5, 4, 3])
    assert got.address == a.__array_interface__["data"][0]
    assert (got.writable, got.writable_from) == (not read_only, "its buffer")


def test_read_back_through_the_buffer_protocol():
    view = memoryview(bytes(range(6))).cast("B", (2, 3))
    got = kit.read_back(view)
    assert (got.via, got.shape, got.dtype, got.values) == ("its buffer", (2, 3), "uint8", [0, 1, 2, 3, 4, 5])
    assert (got.writable, got.writable_from) == (False, "its buffer")
    writable = bytearray(b"\x01\x02")
    got = kit.read_back(writable)
    assert got.writable and got.address == ctypes.addressof(ctypes.c_char.from_buffer(writable))


def test_read_back_through_dlpack_alone_takes_writability_from_the_flags():
    a = dlbridge.asarray([1.0, 2.0])

    class Only:  # __dlpack__ and no buffer
        def __dlpack__(self, **keywords):
            return a.__dlpack__(**keywords)

    got = kit.read_back(Only())
    assert (got.values, got.writable, got.writable_from) == ([1.0, 2.0], True, "its DLPack flags")


def test_the_exchange_table_of_the_zoo_lends_what_dunder_dlpack_lends():
    producer = kit.ExchangeZooProducer(kit.READ_ONLY)
    table = Table(type(producer).__dlpack_c_exchange_api__)
    assert table.address == type(producer).__c_dlpack_exchange_api__
    tensor = table.managed(producer)
    assert (tensor.flags, tensor.version.major, tensor.dl_tensor.ndim) == (FLAG_READ_ONLY, 1, 1)
    assert producer.table_calls == 1
    delete(tensor)
    assert producer.lent[0][0].deleter_calls == 1


def test_the_zoo_table_refuses_to_make_tensors_or_objects():
    """The allocator says why through SetError (it may run without the GIL)."""
    table = Table(kit.ExchangeZooProducer.__dlpack_c_exchange_api__)
    status, address, errors = _exchange._allocate(table, (2,), "float32", (1, 0))
    assert (status, address, errors.calls) == (-1, 0, [("BufferError", "the kit's zoo table serves imports only")])
    out = ctypes.c_void_p()
    assert (table.to_object(None, ctypes.byref(out)), out.value) == (-1, None)


def test_read_back_of_what_cannot_be_read_fails_naming_both_ways():
    with pytest.raises(Failed, match="the result, a list, cannot be read back: memoryview\\(\\) raised TypeError"):
        kit.read_back([1, 2])


# -- seeded bugs: each caught by exactly its clause --------------------------------------------


@pytest.mark.peers_only
def test_the_reference_consumer_passes_every_clause():
    results = verdicts(check_consumer(seeded.reference, only=IDS))
    assert {c: r.verdict for c, r in results.items()} == dict.fromkeys(IDS, PASS), \
        [r for r in results.values() if r.verdict != PASS]


SEEDED = {
    "ignores_byte_offset": ("consumer.byte-offset", "byte_offset 16: imported holding [-1.0, -2.0, -3.0, -4.0, "),
    "ignores_strides": ("consumer.strides.honoured",
                        "transposed strides (1, 2): imported holding [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]"),
    "writable_read_only": ("consumer.read-only", "the result shares the producer's read-only memory and its "
                                                 "buffer is writable"),
    "leaks": ("consumer.deleter.released", "float32[6] imported: 0;"),
    "frees_twice": ("consumer.deleter.once", "float32[6] imported: 2;"),
    "index_error_on_0_d": ("consumer.import.0-d", "0-d float32: raised IndexError: tuple index out of range: a fault "
                                                  "of the consumer's own, not a refusal"),
    "shares_on_copy_true": ("consumer.copy.true", "float32[6], copy=True: the result shares the producer's memory"),
    "copies_on_copy_false": ("consumer.copy.false", "float32[6], copy=False: the result is a copy"),
    "value_error_when_a_copy_is_needed": ("consumer.copy.false", "float32[6] from a producer that refuses "
                                          "copy=False, copy=False: refused with ValueError: cannot import without a "
                                          "copy: copy=False: this producer's data must be copied to be exchanged, "
                                          "not BufferError"),
}

# Seeded consumers that import nothing, or not what they say: each clause
# that would have passed on the kit's own reading of the producer fails.
@pytest.mark.peers_only
@pytest.mark.parametrize("name, words", [
    ("returns_the_producer", "float32[6]: the consumer returned the producer it was given, not an array of its own"),
    ("forwards_to_the_producer", "float32[6]: reading the result back called the producer's __dlpack__ again: the "
                                 "result holds the producer, not an array of its own")])
def test_a_consumer_that_imports_nothing_passes_nothing(name, words):
    results = verdicts(check_consumer(getattr(seeded, name), only=IDS))
    assert [c for c, r in results.items() if r.verdict == PASS] == []
    assert words in results["consumer.import.values"].observed


@pytest.mark.peers_only
def test_a_refusal_by_a_consumer_that_imports_nothing_passes_no_refusal_clause():
    results = verdicts(check_consumer(seeded.refuses_everything, only=IDS))
    for c in ("consumer.version.major-2", "consumer.dtype.unknown-code", "consumer.dtype.lanes",
              "consumer.strides.honoured"):
        assert results[c].verdict == NOT_APPLICABLE, results[c]
        assert "but so is a plain float32[6] (BufferError: this consumer imports nothing" in results[c].observed
    assert results["consumer.import.values"].verdict == FAIL


@pytest.mark.peers_only
def test_strides_kept_for_export_but_not_used_are_caught_by_the_buffer():
    """The result's own __dlpack__ gives the zoo's values back; its buffer,
    a second route to the same array, does not."""
    results = verdicts(check_consumer(seeded.stores_strides_it_cannot_use, only=IDS))
    assert {c for c, r in results.items() if r.verdict != PASS} == {"consumer.strides.honoured"}
    assert "transposed strides (1, 2): the result's __dlpack__ reads float32[2, 3] holding [0.0, 2.0, 4.0, 1.0, " \
           "3.0, 5.0], its buffer float32[2, 3] holding [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]: they disagree" in \
        results["consumer.strides.honoured"].observed


@pytest.mark.peers_only
def test_a_consumer_of_1_d_arrays_says_so_and_passes():
    """pyarrow's arrays are 1-D: with dlpack_ndims = (1,) each case comes in
    its 1-D form, and what has none is noted or not applicable."""
    results = verdicts(check_consumer(seeded.one_d_only, only=IDS))
    assert {c: r.verdict for c, r in results.items() if r.verdict != PASS} == {"consumer.import.0-d": NOT_APPLICABLE}
    assert "float32[2, 3]: the consumer takes no 2-d array (dlpack_ndims [1])" in \
        results["consumer.import.values"].observed
    assert "NULL strides in a DLPack 1.0 float32[6] (lent as version 1.0): values right" in \
        results["consumer.strides.null"].observed


@pytest.mark.peers_only
def test_a_consumer_declines_a_case_with_not_implemented_error():
    results = verdicts(check_consumer(seeded.declines_two_d, only=IDS))
    assert [c for c, r in results.items() if r.verdict != PASS] == []
    assert "float32[2, 3]: the consumer declines it (NotImplementedError: this consumer's arrays have no second " \
           "axis)" in results["consumer.import.values"].observed
    assert "float32[0] with NULL data" in results["consumer.empty.null-data"].observed


def test_a_function_without_copy_or_device_is_not_asked_with_them():
    results = verdicts(check_consumer(lambda x: libraries.dlbridge_from_dlpack(x),
                                      only=["consumer.copy.true", "consumer.copy.false", "consumer.device.cpu"]))
    assert {r.verdict for r in results.values()} == {NOT_APPLICABLE}
    assert "the FUNCTION takes no copy keyword" in results["consumer.copy.true"].observed
    assert "the FUNCTION takes no device keyword" in results["consumer.device.cpu"].observed


@pytest.mark.parametrize("value", [(), ("1",), (65,), 1, [True], "12"])
def test_dlpack_ndims_that_names_no_dimensions_is_a_spec_error(value):
    def function(x):
        return x
    function.dlpack_ndims = value
    with pytest.raises(dlbridge.testing.SpecError, match=r"function.dlpack_ndims: expected numbers of dimensions "
                                                         r"from 0 to 64 \(such as \(1,\)\), got"):
        check_consumer(function)


def test_a_function_whose_attributes_raise_is_a_spec_error_or_has_no_keywords():
    class Hostile:
        def __call__(self, x):
            return libraries.dlbridge_from_dlpack(x)

        def __getattr__(self, name):
            raise RuntimeError(f"no {name} here")

    with pytest.raises(dlbridge.testing.SpecError, match=r"Hostile.dlpack_ndims: reading it raised RuntimeError: "
                                                         r"no dlpack_ndims here"):
        check_consumer(Hostile())

    class NoSignature:
        def __call__(self, x, *, copy=None):
            return libraries.dlbridge_from_dlpack(x, copy=copy)

        @property
        def __signature__(self):
            raise RuntimeError("no signature")

    [result] = check_consumer(NoSignature(), only=["consumer.copy.true"])
    assert (result.verdict, result.observed) == (NOT_APPLICABLE, "the FUNCTION has no signature to show a copy "
                                                 "keyword (FUNCTION(producer, *, copy=None) passes it to its "
                                                 "from_dlpack)")


# Seeded departures from what is recommended, not required: each warns exactly its clause.
SEEDED_WARNINGS = {
    "value_error_on_major_2": ("consumer.version.major-2", "refused with ValueError: cannot import: DLPack major "
                                                           "version 2 (BufferError is recommended)"),
    "clears_the_destructor": ("consumer.import.zero-copy", "a copy"),
    "refuses_0_d": ("consumer.import.0-d", "0-d float32: refused (BufferError: this consumer's arrays have at least "
                                           "one axis): the consumer imports no such tensor"),
    "no_retry": ("consumer.retry.legacy-producer", "__dlpack__(max_version=(1, 3)); from_dlpack raised TypeError: "
                                                   "__dlpack__() got an unexpected keyword argument 'max_version'"),
    "copies_for_a_device": ("consumer.device.cpu", "float32[6], device=\"cpu\": values right, a copy"),
    "value_error_on_legacy_answers": ("consumer.legacy-answer", "refused (ValueError: a legacy capsule answered to "
                                                                "max_version (1, 3)); the consumer cannot import"),
}


@pytest.mark.peers_only
def test_a_consumer_that_never_asks_for_max_version_cannot_import_from_a_producer_that_requires_it():
    results = verdicts(check_consumer(seeded.legacy_call_only, only=IDS))
    assert {c: r.verdict for c, r in results.items() if r.verdict in (WARN, FAIL)} == {
        "consumer.request.max-version": WARN, "consumer.legacy-refused": WARN}
    assert "__dlpack__(): refused (BufferError: this producer exports versioned tensors only: pass " \
           "max_version=(1, 0) or newer); the consumer cannot import from a producer that refuses the legacy call" \
        in results["consumer.legacy-refused"].observed


@pytest.mark.peers_only
def test_a_consumer_that_refuses_legacy_answers_fails_no_other_clause():
    """pyarrow refuses a legacy capsule answered to max_version whatever its
    strides: consumer.legacy-answer says so, not consumer.strides.null."""
    results = verdicts(check_consumer(seeded.refuses_legacy_answers, only=IDS))
    assert [c for c, r in results.items() if r.verdict != PASS] == []
    assert "the consumer cannot import from a producer that answers" in results["consumer.legacy-answer"].observed
    assert "refused, as every legacy answer (consumer.legacy-answer)" in results["consumer.strides.null"].observed


@pytest.mark.peers_only
@pytest.mark.parametrize("name", SEEDED)
def test_a_seeded_bug_fails_exactly_its_clause(name):
    clause_id, words = SEEDED[name]
    results = verdicts(check_consumer(getattr(seeded, name), only=IDS))
    failed = {c: r.observed for c, r in results.items() if r.verdict == FAIL}
    assert list(failed) == [clause_id], failed
    assert words in failed[clause_id]
    assert all(r.verdict == PASS for c, r in results.items() if c != clause_id)


@pytest.mark.peers_only
@pytest.mark.parametrize("name", SEEDED_WARNINGS)
def test_a_seeded_departure_warns_exactly_its_clause(name):
    clause_id, words = SEEDED_WARNINGS[name]
    results = verdicts(check_consumer(getattr(seeded, name), only=IDS))
    assert {c: r.verdict for c, r in results.items() if r.verdict in (WARN, FAIL)} == {clause_id: WARN}
    assert words in results[clause_id].observed


@pytest.mark.peers_only
def test_a_consumer_that_clears_the_destructor_instead_of_renaming_passes():
    """MLX's way: the zoo's capsules have a producer's destructor, which goes
    by the name, and a cleared destructor does nothing: the deleter runs once."""
    results = verdicts(check_consumer(seeded.clears_the_destructor, only=["consumer.deleter.once",
                                                                        "consumer.deleter.released"]))
    assert {c: r.verdict for c, r in results.items()} == {"consumer.deleter.once": PASS,
                                                          "consumer.deleter.released": PASS}
    assert "its destructor cleared instead" in results["consumer.deleter.once"].observed


@pytest.mark.peers_only
def test_a_result_that_claims_2_to_the_40_elements_fails_on_its_shape():
    """The kit reads the struct, not 2**40 values: the clause fails at once, on the shape."""
    [result] = check_consumer(seeded.claims_2_to_the_40_elements, only=["consumer.import.values"])
    assert result.verdict == FAIL
    assert "imported as float32[1099511627776], expected float32[6]" in result.observed


@pytest.mark.peers_only
def test_the_reference_consumer_passes_in_child_processes():
    """The path the real libraries take: the seeded module loads in the
    child (sys.path travels with it)."""
    results = verdicts(check("consumer", "kit_seeded_consumers:reference"))
    assert {c: r.verdict for c, r in results.items()} == dict.fromkeys(IDS, PASS)


# -- dlbridge ------------------------------------------------------------------------------------


def test_dlbridge_passes_every_clause():
    results = verdicts(check_consumer(libraries.dlbridge_from_dlpack, only=IDS))
    assert {c: r.verdict for c, r in results.items()} == dict.fromkeys(IDS, PASS), \
        [r for r in results.values() if r.verdict != PASS]
    assert "through the exchange table: read-only on the producer's memory (said by its buffer)" in \
        results["consumer.read-only"].observed
    assert "taken, values right, warning DeprecationWarning: from_dlpack: passing a raw DLPack capsule is " \
           "deprecated" in \
        results["consumer.capsule.raw"].observed


# -- the real libraries' verdicts, in child processes (some crash) -------------------------------

# Each library's verdict on each clause: PASS unless listed; a failure with
# (a part of) what was observed, in the library's own words.
PEERS = {
    "numpy_from_dlpack": {
        "consumer.dtype.unknown-code": (PASS, "refused: RuntimeError: Unsupported dtype in DLTensor."),
        "consumer.dtype.lanes": (PASS, "refused: RuntimeError: Unsupported lanes in DLTensor dtype."),
        "consumer.capsule.raw": (PASS, "refused: AttributeError: 'PyCapsule' object has no attribute '__dlpack__'"),
    },
    "torch_from_dlpack": {
        # terminate called after throwing an instance of 'c10::Error': Storage size calculation
        # overflowed with sizes=[2, 3] and strides=[-3, 1]
        "consumer.strides.honoured": (FAIL, "crashed: signal 6 (SIGABRT); what it wrote on standard error:\n"
                                            "terminate called after throwing an instance of 'c10::Error'"),
        "consumer.version.major-2": (WARN, "refused with RuntimeError: unsupported DLPack capsule major version: 2. "
                                           "Maximum supported version: 1 (BufferError is recommended)"),
        "consumer.read-only": (WARN, "flag ignored: the result shares the producer's read-only memory and its own "
                                     "versioned export says writable"),
        "consumer.device.absent": (PASS, "refused: AttributeError: 'DevicelessZooProducer' object has no attribute "
                                         "'__dlpack_device__'"),
        "consumer.capsule.raw": (WARN, "taken, values right, without a DeprecationWarning"),
    },
    "jax_from_dlpack": {
        "consumer.request.max-version": (WARN, "__dlpack__(stream=None): no max_version"),
        # jnp.from_dlpack(a, copy=True) shares a's memory from JAX 0.8.1: a[0] = 42 shows in the JAX array.
        "consumer.copy.true": (FAIL, "float32[6], copy=True: the result shares the producer's memory "
                                     "(__dlpack__(stream=None))") if JAX_COPY_TRUE_SHARES else
                              (PASS, "float32[6], copy=True: a copy, values right (__dlpack__(stream=None)"),
        "consumer.strides.honoured": (WARN, "transposed strides (1, 2): values right; zero strides (0,): refused "
                                            "(JaxRuntimeError: UNIMPLEMENTED: Only DLPack tensors with trivial "
                                            "(compact) striding are supported"),
        "consumer.version.major-2": (NOT_APPLICABLE, "the consumer asks for no versioned tensor"),
        "consumer.legacy-refused": (WARN, "__dlpack__(stream=None): refused (BufferError: this producer exports "
                                          "versioned tensors only"),
        "consumer.legacy-answer": (NOT_APPLICABLE, "the consumer asks for no versioned tensor"),
        "consumer.read-only": (NOT_APPLICABLE, "the consumer asks for no versioned tensor"),
        "consumer.device.absent": (PASS, "refused: TypeError: The array passed to from_dlpack must have __dlpack__ "
                                         "and __dlpack_device__ methods."),
        "consumer.capsule.raw": (PASS, "refused: TypeError"),
    },
    "array_api_strict_from_dlpack": {  # NumPy's from_dlpack underneath
        # The kit reads what it made by its buffer where Python takes its __buffer__ (peers.py).
        "consumer.read-only": (PASS, "read-only on the producer's memory (said by its "
                                     f"{'buffer' if ARRAY_API_STRICT_EXPORTS_A_BUFFER else 'DLPack flags'})"),
        "consumer.capsule.raw": (PASS, "refused: AttributeError"),
    },
}


@pytest.mark.peers_only
@pytest.mark.numpy_jax
@pytest.mark.parametrize("function", [pytest.param(f, marks=pytest.mark.needs_torch) if f.startswith("torch") else f
                                      for f in PEERS])
def test_the_verdicts_of_the_real_libraries(function):
    results = verdicts(check("consumer", f"dlbridge.testing.libraries:{function}"))
    expected = PEERS[function]
    for c, r in results.items():
        verdict, words = expected.get(c, (PASS, ""))
        assert (r.verdict, words in r.observed) == (verdict, True), (c, r.observed)
