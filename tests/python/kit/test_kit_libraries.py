"""The conformance kit (dlbridge.testing) on every library it is run against,
and the report of it in docs/compatibility.md.

tools/compatibility.py runs the kit, in child processes, on dlbridge, NumPy,
PyTorch, JAX, array-api-strict, pyarrow, MLX and Apache TVM FFI (producer
and consumer each), on Python's
buffer exporters (producers) and on tests/downstream/nanobind_arrays, an
extension built here with nanobind alone (its `make` and `consume`, through
kit_nanobind.py). Each library's verdict on each clause is asserted by the
test file of the clause's module (test_kit_<part>.py); here: that every
clause has a verdict on every subject, that dlbridge fails none, that no
library crashes the kit except where recorded below, and that the committed
section of docs/compatibility.md is what the command prints.
"""
import importlib
import importlib.util
import sys

import numpy as np
import pytest

from dlbridge.testing import FAIL, clauses

from paths import ROOT
from peers import numpy_from_dlpack_writable

# The kit on every library: dlbridge's own verdicts are checked by test_kit_producer.py and
# test_kit_consumer.py (test_dlbridge_passes_every_clause), which the sanitized run keeps.
pytestmark = [pytest.mark.peers_only, pytest.mark.numpy_jax]




def _tool():
    spec = importlib.util.spec_from_file_location("compatibility", ROOT / "tools" / "compatibility.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


compatibility = _tool()

# (subject, clause id) -> why: the clauses on which a library crashes or hangs
# the kit's child process (the kit records a failing verdict and goes on).
# Version-dependent ones go through tests/python/peers.py. Only the entries
# of clauses the kit has are expected.
EXPECTED_DEATHS = {
    ("PyTorch", "consumer.strides.honoured"):
        "torch 2.13.0 aborts on negative strides (c10::Error 'Storage size calculation overflowed' thrown "
        "through torch.from_dlpack: std::terminate)",
}
# How the kit's runner words a child that died or hung in a clause (dlbridge.testing._runner).
DEATHS = ("crashed", "the process exited", "timed out after")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The folder nanobind_arrays is installed into, built at -O0 (the kit's
    verdicts are on what nanobind does, not on how fast; its compile time is
    what optimization costs). Not sanitized under tests/run's asan-python
    stage: it holds nanobind's code and none of dlbridge's, as the other
    libraries the kit runs on."""
    pytest.importorskip("nanobind")
    pytest.importorskip("mesonpy")
    return compatibility.build_nanobind(tmp_path_factory.mktemp("nanobind_arrays"), "-Doptimization=0")


@pytest.fixture(scope="module")
def report(built):
    return compatibility.collect(built)


@pytest.fixture
def ext(built, monkeypatch):
    monkeypatch.syspath_prepend(str(built))
    return importlib.import_module("nanobind_arrays")


# -- the extension ----------------------------------------------------------------

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
          "float64", "complex64", "complex128"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_make_gives_nanobinds_own_array_of_the_kits_values(ext, dtype):
    made = ext.make((2, 3), dtype)
    assert type(made).__module__ + "." + type(made).__qualname__ == "nanobind.nb_ndarray"
    seen = np.from_dlpack(made)
    np.testing.assert_array_equal(seen, np.arange(6).astype(dtype).reshape(2, 3), strict=True)
    assert seen.flags.writeable == numpy_from_dlpack_writable(True, 6)
    assert not np.from_dlpack(ext.make((2, 3), dtype, read_only=True)).flags.writeable


def test_make_wraps_and_rounds_as_numpy_astype(ext):
    for dtype, count in (("int8", 300), ("uint16", 70000), ("float16", 70000), ("float32", 1 << 25)):
        with np.errstate(over="ignore"):  # float16 from 65520 on: inf
            expected = np.arange(count).astype(dtype)
        np.testing.assert_array_equal(np.from_dlpack(ext.make((count,), dtype)), expected)


def test_make_declines_what_it_does_not_make_and_refuses_bad_arguments(ext):
    import kit_nanobind
    with pytest.raises(NotImplementedError, match="^nanobind_arrays makes no bfloat16 arrays$"):
        ext.make((2,), "bfloat16")
    with pytest.raises(NotImplementedError, match="^nanobind holds at most 128 dimensions, not 129$"):
        ext.make((1,) * 129, "int8")
    with pytest.raises(NotImplementedError, match="^nanobind_arrays makes host arrays only, not cuda$"):
        kit_nanobind.factory((2,), "int8", device="cuda")
    for arguments in (((-1,), "int8"), ("ab", "int8"), ((2,), 3), (2, "int8")):
        with pytest.raises(TypeError, match="^make\\(\\): incompatible function arguments"):
            ext.make(*arguments)
    with pytest.raises(MemoryError):
        ext.make((1 << 40, 1 << 40), "int8")


def test_consume_shares_memory_and_keeps_writability(ext):
    source = np.arange(6.0).reshape(2, 3)
    taken = ext.consume(source.T)
    assert type(taken).__qualname__ == "nb_ndarray"
    seen = np.from_dlpack(taken)
    np.testing.assert_array_equal(seen, source.T, strict=True)
    assert np.shares_memory(seen, source)
    assert seen.flags.writeable == numpy_from_dlpack_writable(True, 6)
    source.flags.writeable = False
    assert not np.from_dlpack(ext.consume(source)).flags.writeable


# -- the kit on every library -------------------------------------------------------


def test_every_clause_has_a_verdict_on_every_subject(report):
    installed = [s for s in compatibility.SUBJECTS if s.distribution is None or report.versions[s.distribution]]
    assert report.ran() == installed
    assert {s.name for s in installed} >= {"dlbridge", "nanobind", "memoryview", "array.array", "bytes"}
    for s in installed:
        for side in compatibility.SIDES:
            if s.spec(side):
                assert [r.clause for r in report.results[s.name, side]] == [c.id for c in clauses(side)]


def test_dlbridge_fails_no_clause(report):
    for side in compatibility.SIDES:
        assert [r for r in report.results["dlbridge", side] if r.verdict == FAIL] == []


def test_no_library_crashes_the_kit_unless_recorded(report):
    died = {(name, r.clause): r.observed for (name, _), results in report.results.items()
            for r in results if r.verdict == FAIL and r.observed.startswith(DEATHS)}
    ids = {c.id for side in compatibility.SIDES for c in clauses(side)}
    ran = {s.name for s in report.ran()}  # PyTorch is not installed in tests/run's versions stage
    assert set(died) == {key for key in EXPECTED_DEATHS if key[1] in ids and key[0] in ran}, died


def test_the_committed_report_is_what_the_command_prints(report):
    committed = compatibility.section(compatibility.DOC.read_text())
    printed = compatibility.render(report)
    written_with, running_with = committed.partition("\n")[0], printed.partition("\n")[0]
    if written_with != running_with:
        # Only where the versions are not tests/constraints.txt's (bash tests/run --newest), or a GPU is usable.
        pytest.skip(f"docs/compatibility.md's kit report was run with other versions (\"{written_with}\") "
                    f"than these (\"{running_with}\"): bash tests/run installs those")
    assert printed == committed, "docs/compatibility.md's kit report is out of date: python tools/compatibility.py --write"


def test_write_replaces_the_section_between_the_markers_only():
    text = f"# Title\n\nbefore\n{compatibility.BEGIN}\nold\nlines\n{compatibility.END}\nafter\n"
    written = compatibility.replace_section(text, "new")
    assert written == f"# Title\n\nbefore\n{compatibility.BEGIN}\nnew\n{compatibility.END}\nafter\n"
    assert compatibility.section(written) == "new"
    with pytest.raises(ValueError, match="^no <!-- kit-report:begin --> ... <!-- kit-report:end --> in the"):
        compatibility.replace_section("# Title\n", "new")


def test_observations_are_quoted_on_one_line_without_the_addresses_of_one_run():
    words = compatibility._words
    assert words("refused:\n  <capsule at 0x7f3a12345678>") == "`refused: <capsule at 0x...>`"
    assert words("flags 0x1") == "`flags 0x1`"
    assert words("named `x`") == "`` named `x` ``"
    long = words("x" * (compatibility.QUOTED + 50))
    assert long == f"`{'x' * compatibility.QUOTED} ...`"
