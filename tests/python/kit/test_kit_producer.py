"""The conformance kit's producer clauses (dlbridge.testing._producer).

Seeded producers (kit_seeded_producers.py), each with one bug, must fail
exactly the clause meant for it and pass or be n/a on every other clause of
the module; dlbridge passes all of them; each real library's verdicts are
recorded with its own words for each failure (docs/compatibility.md).
Only this module's clauses are looked at: the other kit modules have tests
of their own.
"""
import threading
import warnings

import pytest

import kit_seeded_producers as seeded
import peers
from dlbridge.testing import FAIL, NOT_APPLICABLE, PASS, WARN, check, check_producer, clauses, libraries
from dlbridge.testing import _producer

# The seeded deprecated_dlpack's warning, which every clause sets off.
pytestmark = [pytest.mark.filterwarnings("ignore:__dlpack__ is deprecated:DeprecationWarning"),
              pytest.mark.numpy_jax]  # the kit on NumPy and JAX subjects: the floor stage runs it again

MINE = [c.id for c in clauses("producer") if c.check.__module__ == _producer.__name__]
NO_GIL = "producer.deleter.no-gil"
SOURCES = {"DLPack Python specification", "dlpack.h", "array API standard"}
# Where no CUDA driver answers, a CPU label cannot be checked against the memory.
UNASKED = {} if isinstance(_producer._memory_kind(0), tuple) else {
    "producer.device.memory": (NOT_APPLICABLE, "the kit cannot ask what memory it is")}
# Where the factory offers no array DLPack cannot carry.
NONE_UNEXPORTABLE = {"producer.unexportable": (NOT_APPLICABLE, "unexportable")}


def verdicts(results) -> dict:
    """clause id -> (verdict, observed), for this module's clauses."""
    return {r.clause: (r.verdict, r.observed) for r in results if r.clause in MINE}


def assert_verdicts(found: dict, expected: dict) -> None:
    """Each clause of `expected` ({id: (verdict, words in the observation)})
    has that verdict, with those words; every other clause passes."""
    assert set(found) == set(MINE)
    for clause_id, (verdict, observed) in found.items():
        want, words = expected.get(clause_id, UNASKED.get(clause_id, (PASS, "")))
        assert (verdict, words in observed) == (want, True), (clause_id, verdict, observed)


def test_every_clause_cites_its_source():
    for c in clauses("producer"):
        if c.id in MINE:
            assert c.id.startswith("producer.") and c.title and c.cites and c.tier == "cpu", c
            assert c.source in SOURCES, c


def test_dlbridge_passes_every_clause():
    assert_verdicts(verdicts(check_producer(libraries.dlbridge_array, only=MINE)), NONE_UNEXPORTABLE)


@pytest.mark.peers_only
def test_the_seeded_producer_without_a_bug_passes_every_clause():
    assert_verdicts(verdicts(check_producer(seeded.correct, only=MINE)), {})


@pytest.mark.peers_only
def test_any_strides_of_an_empty_array_pass():
    """No clause demands particular strides for an empty array (NumPy 2.4
    changed the ones it exports)."""
    assert_verdicts(verdicts(check_producer(seeded.zero_strides_when_empty, only=MINE)), {
        "producer.unexportable": (NOT_APPLICABLE, "the factory declines unexportable[3]")})


# (factory in kit_seeded_producers, the clause that must catch it, words of its observation)
SEEDED = [
    # the bug classes seen in the field (issue 25)
    ("buffer_only", "producer.methods",
     "_BufferOnly has no __dlpack__ and no __dlpack_device__, and no other way to export its data"),
    ("gpu_label_on_host_memory", "producer.device.consistent",
     "__dlpack_device__() returned (2, 0), the tensor of __dlpack__(max_version=(1, 3)) is on (1, 0)"),
    ("deprecated_dlpack", "producer.protocol.no-deprecation", "DeprecationWarning: __dlpack__ is deprecated"),
    ("byte_offset_counted_twice", "producer.struct.values", "(byte_offset 16, strides (3, 1)) reads [4.0, 5.0, "),
    ("value_error_for_device", "producer.dl-device.unsupported",
     "dl_device=(9, 0)) raised ValueError: unsupported device (9, 0), not BufferError"),
    ("read_only_unflagged", "producer.flags.read-only", "returned flags 0x0, without READ_ONLY"),
    ("is_copied_without_copy", "producer.flags.is-copied", "copy=None): the same data, IS_COPIED set"),
    ("null_strides_in_1_3", "producer.struct.strides", "returned NULL strides in a tensor of version (1, 3)"),
    ("deleter_twice", "producer.deleter.consumed", "dropped: its destructor called the deleter"),
    # one per clause beyond them, so that each can fail
    ("swallows_unknown_keywords", "producer.keywords.unknown", "returned a capsule: the keyword was ignored"),
    ("refuses_dl_device_cpu", "producer.keywords.dl-device-cpu",
     "dl_device=(1, 0)) raised BufferError: dl_device (1, 0) is not supported"),
    ("versioned_without_max_version", "producer.capsule.max-version-none",
     "__dlpack__(max_version=None) returned a 'dltensor_versioned' capsule"),
    ("versioned_for_0_x", "producer.capsule.max-version-0",
     "__dlpack__(max_version=(0, 8)) returned a 'dltensor_versioned' capsule"),
    ("version_2_for_1_3", "producer.struct.version", "returned a tensor of version (2, 3)"),
    ("copy_true_shares", "producer.copy.true", "copy=True) returned the array's own data"),
    ("copy_false_copies", "producer.copy.false", "copy=False) returned other memory"),
    ("cpu_device_id_1", "producer.device.valid", "returned (1, 1): device_id 1 on kDLCPU"),
    ("bool_as_uint8", "producer.struct.shape-dtype", "dtype (code, bits, lanes) (1, 8, 1), not (2, 2), (6, 8, 1)"),
    ("padded_flag_on_whole_bytes", "producer.flags.subbyte-padded", "IS_SUBBYTE_TYPE_PADDED with bits 32"),
    ("destructor_never_deletes", "producer.deleter.unconsumed",
     "the deleter was never called, and the tensor still holds 1 reference(s) to the array (a leak)"),
    ("view_as_c_order", "producer.struct.views",
     "the transposed view (.T of float32[3, 2]): __dlpack__(max_version=(1, 3)) (byte_offset 0, strides (3, 1)) reads "
     "[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], not [0.0, 2.0, 4.0, 1.0, 3.0, 5.0]"),
    ("type_error_when_unexportable", "producer.unexportable",
     "_TypeErrorWhenUnexportable the factory made as unexportable: __dlpack__(max_version=(1, 3)) raised TypeError: "
     "DLPack has no strings, not BufferError"),
    ("deleter_keeps_the_array", "producer.deleter.refcount", "three exports consumed and released: the array's reference count went from"),
    # found by hand on real libraries (issue 35)
    ("capsule_without_destructor", "producer.deleter.unconsumed",
     "returned a capsule without a destructor: dropped unconsumed, its tensor's deleter never runs (a leak)"),
    ("read_only_as_legacy", "producer.flags.read-only",
     "returned a legacy \"dltensor\" capsule, which cannot say READ_ONLY: its consumer takes the data as writable"),
    ("copy_as_legacy", "producer.flags.is-copied",
     "copy=True): a copy, as a legacy \"dltensor\" capsule, which cannot set IS_COPIED"),
    ("cuda_label_on_host_memory", "producer.device.memory",
     "and the host reads the array's values at its data pointer: host memory"),
]


# Departures from what is recommended, not required: each warns exactly its clause.
SEEDED_WARNINGS = [
    ("refuses_1_0", "producer.capsule.max-version-1-0", "raised BufferError: max_version (1, 0) is older than 1.3: a "
                                                        "consumer that asks so cannot import"),
    ("refuses_1_99", "producer.capsule.max-version-1-99", "raised BufferError: max_version (1, 99) is newer"),
    ("refuses_2_0", "producer.capsule.max-version-2-0", "raised BufferError: max_version (2, 0) is not DLPack 1"),
    ("refuses_empty", "producer.struct.size-zero", "raised BufferError: an empty array has no data to export"),
]


@pytest.mark.peers_only
@pytest.mark.parametrize("factory, clause_id, words", SEEDED_WARNINGS, ids=[f for f, _, _ in SEEDED_WARNINGS])
def test_a_seeded_departure_warns_exactly_its_clause(factory, clause_id, words):
    found = verdicts(check_producer(getattr(seeded, factory), only=MINE))
    assert {c: v for c, (v, _) in found.items() if v in (WARN, FAIL)} == {clause_id: WARN}, found
    assert words in found[clause_id][1], found[clause_id]


@pytest.mark.peers_only
@pytest.mark.parametrize("factory, clause_id, words", SEEDED, ids=[factory for factory, _, _ in SEEDED])
def test_a_seeded_bug_fails_exactly_its_clause(factory, clause_id, words):
    found = verdicts(check_producer(getattr(seeded, factory), only=MINE))
    assert {c for c, (verdict, _) in found.items() if verdict == FAIL} == {clause_id}, found
    assert words in found[clause_id][1], found[clause_id]


@pytest.mark.peers_only
def test_value_error_where_copy_false_forbids_a_copy_fails_its_clause():
    """The array API names BufferError for copy=False where a copy is needed."""
    found = verdicts(check_producer(seeded.value_error_on_copy_false, only=["producer.dl-device.copy-false"]))
    verdict, observed = found["producer.dl-device.copy-false"]
    assert verdict == FAIL
    assert "copy=False) raised ValueError: copy=False, but (2, 0) needs a copy, not BufferError" in observed


@pytest.mark.peers_only
def test_a_deleter_that_needs_the_gil_crashes_only_its_clause(deliberate_crashes):
    # In child processes: the deleter called without the GIL takes its process down.
    found = verdicts(check("producer", "kit_seeded_producers:deleter_needs_gil"))
    assert {c for c, (verdict, _) in found.items() if verdict == FAIL} == {NO_GIL}, found
    assert found[NO_GIL][1].startswith("crashed: signal 11"), found[NO_GIL]
    assert verdicts(check_producer(seeded.correct, only=[NO_GIL]))[NO_GIL][0] == PASS


def test_a_producer_from_before_max_version_is_read_through_the_legacy_call():
    # __dlpack__(stream=None) only: refusing the newer keywords is what
    # fails; the struct is read through __dlpack__(), as a consumer does.
    found = verdicts(check_producer(seeded.legacy_only, only=MINE))
    refused = {"producer.keywords.max-version": "max_version", "producer.keywords.dl-device-none": "dl_device",
               "producer.keywords.dl-device-cpu": "dl_device", "producer.keywords.copy": "copy"}
    expected = {c: (FAIL, f"got an unexpected keyword argument '{keyword}'") for c, keyword in refused.items()}
    expected.update({c: (NOT_APPLICABLE, "(see producer.keywords.max-version)") for c in (
        "producer.capsule.max-version-0", "producer.capsule.max-version-1-0", "producer.capsule.max-version-1-99",
        "producer.capsule.max-version-2-0")})
    expected.update({c: (NOT_APPLICABLE, "(see producer.keywords.copy)") for c in (
        "producer.flags.is-copied", "producer.copy.true", "producer.copy.false")})
    expected.update({c: (NOT_APPLICABLE, "__dlpack__() returned a legacy \"dltensor\" capsule") for c in (
        "producer.struct.version", "producer.flags.subbyte-padded")})
    expected["producer.dl-device.unsupported"] = (NOT_APPLICABLE, "(see producer.keywords.dl-device-none)")
    expected["producer.dl-device.copy-false"] = (NOT_APPLICABLE, "and so does copy=None")
    expected["producer.flags.read-only"] = (PASS, "__dlpack__() raised BufferError: read-only data has no legacy")
    expected["producer.unexportable"] = (NOT_APPLICABLE, "the factory declines unexportable[3]")
    assert_verdicts(found, expected)
    assert found["producer.struct.values"][1] == ("right for float32[2, 3], float64[], int32[6], int64[2, 1, 3], "
                                                  "uint8[4], bool[2, 2], int8[5], uint64[2], float32[4], float64[3], "
                                                  "bool[3]")
    assert found["producer.device.consistent"] == (PASS, "both say (1, 0) (kDLCPU)")


def test_the_clauses_leave_no_warnings_filter_and_no_thread_behind():
    filters, threads = list(warnings.filters), threading.active_count()
    check_producer(seeded.deprecated_dlpack, only=MINE)
    assert (warnings.filters, threading.active_count()) == (filters, threads)


# -- the real libraries (docs/compatibility.md) --------------------------------------------------------------


def _numpy_expected() -> dict:
    if peers.NUMPY_DLPACK_DEVICE_BUFFER_ERROR:
        return {}
    return {"producer.dl-device.unsupported": (FAIL, "dl_device=(9, 0)) raised ValueError: unsupported device "
                                                     "requested, not BufferError"),
            "producer.dl-device.copy-false": (NOT_APPLICABLE, "raised ValueError: unsupported device requested, "
                                                              "and so does copy=None")}


@pytest.mark.peers_only
def test_numpy():
    assert_verdicts(verdicts(check_producer(libraries.numpy_array, only=MINE)), _numpy_expected())


@pytest.mark.peers_only
def test_array_api_strict():
    pytest.importorskip("array_api_strict")
    expected = _numpy_expected()  # its arrays are NumPy's
    expected["producer.flags.read-only"] = (NOT_APPLICABLE, "array-api-strict makes no read-only arrays")
    expected.update(NONE_UNEXPORTABLE)
    assert_verdicts(verdicts(check_producer(libraries.array_api_strict_array, only=MINE)), expected)


@pytest.mark.peers_only
def test_torch():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("the verdicts are recorded for torch without CUDA (the CPU wheel tests/requirements.txt installs)")
    assert_verdicts(verdicts(check_producer(libraries.torch_tensor, only=MINE)), {
        **NONE_UNEXPORTABLE,
        "producer.dl-device.unsupported": (FAIL, "dl_device=(2, 0)) raised NotImplementedError: Could not run "
                                                 "'aten::empty_strided' with arguments from the 'CUDA' backend"),
        "producer.dl-device.copy-false": (NOT_APPLICABLE, "raised ValueError: cannot move (i.e. copy=False) tensor "
                                                          "from cpu to cuda:0 without copying., and so does copy=None"),
        "producer.flags.read-only": (NOT_APPLICABLE, "PyTorch has no read-only tensors"),
        "producer.flags.is-copied": (FAIL, "__dlpack__(max_version=(1, 3), copy=True): a copy, IS_COPIED unset"),
    })


@pytest.mark.peers_only
def test_jax():
    jax = pytest.importorskip("jax")
    if jax.default_backend() != "cpu":
        pytest.skip("the verdicts are recorded for JAX on the CPU")
    legacy = "__dlpack__(max_version=(1, 3)) returned a legacy \"dltensor\" capsule"
    assert_verdicts(verdicts(check_producer(libraries.jax_array, only=MINE)), {
        **NONE_UNEXPORTABLE,
        "producer.dl-device.unsupported": (FAIL, "dl_device=(2, 0)) raised RuntimeError: Unknown backend cuda. "
                                                 "Available backends are ['cpu'], not BufferError"),
        "producer.dl-device.copy-false": (NOT_APPLICABLE, "raised RuntimeError: Unknown backend cuda"),
        "producer.struct.version": (NOT_APPLICABLE, legacy),
        # Immutable data, answered to max_version with a struct that cannot
        # say so: torch.from_dlpack(a)[0] = 42 writes into the JAX array.
        "producer.flags.read-only": (FAIL, legacy + ", which cannot say READ_ONLY"),
        "producer.flags.is-copied": (FAIL, "copy=True): a copy, as a legacy \"dltensor\" capsule, which cannot set "
                                           "IS_COPIED"),
        "producer.flags.subbyte-padded": (NOT_APPLICABLE, legacy),
        # JAX's capsule destructor calls its deleter function itself, not
        # through the struct's field, and its tensors hold no Python reference.
        "producer.deleter.unconsumed": (NOT_APPLICABLE, "the destructor does not call the struct's deleter field"),
        **{f"producer.capsule.max-version-{version}": (PASS, "a 'dltensor' capsule (another version, as the spec "
                                                             "allows; a versioned one is recommended)")
           for version in ("1-0", "1-99", "2-0")},
    })


@pytest.mark.peers_only
@pytest.mark.parametrize("factory, name", [(libraries.memoryview_of, "memoryview"), (libraries.array_array, "array"),
                                           (libraries.bytes_of, "bytes")])
def test_the_buffer_exporters(factory, name):
    # No DLPack at all: the buffer protocol is theirs (the kit's interface clauses).
    expected = {c: (NOT_APPLICABLE, f"{name} has no __dlpack__ (see producer.methods)") for c in MINE}
    expected["producer.methods"] = (NOT_APPLICABLE, f"{name} has no __dlpack__ and no __dlpack_device__: it exports "
                                                    f"through the buffer protocol only")
    expected["producer.device.valid"] = (NOT_APPLICABLE, f"{name} has no __dlpack_device__ (see producer.methods)")
    if name == "array":  # array.array is always writable
        expected["producer.flags.read-only"] = (NOT_APPLICABLE, "the factory declines")
    assert_verdicts(verdicts(check_producer(factory, only=MINE)), expected)
