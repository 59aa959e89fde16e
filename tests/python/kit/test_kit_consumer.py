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
from dlbridge.testing import libraries
from dlbridge.testing._abi import Consumed, capsule_name
from dlbridge.testing._model import Failed
from peers import ARRAY_API_STRICT_EXPORTS_A_BUFFER

# Only this module's clauses: the other modules' consumer clauses are theirs to test.
IDS = [c.id for c in clauses("consumer") if c.check.__module__ == kit.__name__]


def verdicts(results):
    return {r.clause: r for r in results if r.clause in IDS}


def test_the_clauses_are_these():
    assert IDS == ["consumer.import.values", "consumer.import.zero-copy", "consumer.request.max-version",
                   "consumer.request.stream", "consumer.retry.legacy-producer", "consumer.retry.device-copy",
                   "consumer.strides.null", "consumer.legacy-answer", "consumer.strides.honoured",
                   "consumer.byte-offset",
                   "consumer.version.major-2", "consumer.dtype.unknown-code", "consumer.dtype.lanes",
                   "consumer.empty.null-data", "consumer.read-only", "consumer.device.absent",
                   "consumer.capsule.raw", "consumer.deleter.released", "consumer.deleter.once"]
    for c in clauses("consumer"):
        if c.id in IDS:
            assert c.source in ("DLPack Python specification", "dlpack.h", "array API standard"), c.id
            assert c.cites and c.title and c.tier == "cpu", c.id


# -- the zoo's tensors and the read-back -------------------------------------------------------


@pytest.mark.parametrize("case", [kit.BASELINE, kit.TRANSPOSED, kit.ZERO, kit.NEGATIVE, kit.OFFSET,
                                  kit.NULL_STRIDES, kit.NULL_STRIDES_LEGACY, kit.LEGACY, kit.EMPTY, kit.READ_ONLY],
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
    "writable_read_only": ("consumer.read-only", "the result shares the producer's memory and its buffer is "
                                                 "writable"),
    "no_retry": ("consumer.retry.legacy-producer", "__dlpack__(max_version=(1, 3)); from_dlpack raised TypeError: "
                                                   "__dlpack__() got an unexpected keyword argument 'max_version'"),
    "leaks": ("consumer.deleter.released", "float32[2, 3] imported: 0;"),
    "frees_twice": ("consumer.deleter.once", "float32[2, 3] imported: 2;"),
}

# Seeded departures from what is recommended, not required: each warns exactly its clause.
SEEDED_WARNINGS = {
    "value_error_on_major_2": ("consumer.version.major-2", "refused with ValueError: cannot import: DLPack major "
                                                           "version 2 (BufferError is recommended)"),
    "clears_the_destructor": ("consumer.import.zero-copy", "a copy"),
    "value_error_on_legacy_answers": ("consumer.legacy-answer", "refused (ValueError: a legacy capsule answered to "
                                                                "max_version (1, 3)); the consumer cannot import"),
}


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
    assert {c: r.verdict for c, r in results.items() if r.verdict != PASS} == {clause_id: WARN}
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
    assert "imported as float32[1099511627776], expected float32[2, 3]" in result.observed


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
    assert "read-only on the producer's memory" in results["consumer.read-only"].observed
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
        "consumer.read-only": (PASS, "flag ignored"),
        "consumer.device.absent": (PASS, "refused: AttributeError: 'DevicelessZooProducer' object has no attribute "
                                         "'__dlpack_device__'"),
        "consumer.capsule.raw": (WARN, "taken, values right, without a DeprecationWarning"),
    },
    "jax_from_dlpack": {
        "consumer.request.max-version": (FAIL, "__dlpack__(stream=None): no max_version"),
        "consumer.strides.honoured": (WARN, "transposed strides (1, 2): values right; zero strides (0, 1): refused "
                                            "(JaxRuntimeError: UNIMPLEMENTED: Only DLPack tensors with trivial "
                                            "(compact) striding are supported"),
        "consumer.version.major-2": (NOT_APPLICABLE, "the consumer asks for no versioned tensor"),
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
