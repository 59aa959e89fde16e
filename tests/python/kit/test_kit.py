"""The conformance kit's machinery (dlbridge.testing): the child-process
runner that turns a crash or a hang into the failing verdict of one clause,
`python -m dlbridge check` (report, JSON, exit status) and the pytest plugin.
The clauses themselves are tested in test_kit_<part>.py."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import dlbridge.testing
from dlbridge.testing import FAIL, NOT_APPLICABLE, PASS, SpecError, check, clauses
from processes import gone

DLBRIDGE = "dlbridge.testing.libraries:dlbridge_array"

# The first clauses of the producer side, which the tests of a subject that goes wrong run (check's
# `only`): enough for a clause that passes, one that goes wrong, and a new child going on after it.
FEW = [c.id for c in clauses("producer") if c.tier != "gpu"][:5]

# Factories that go wrong on their second call in a process (hangs: once): each clause calls its factory, so
# a clause that is not the first a child runs crashes or hangs, and the next child starts from the clause after it.
WRONG = """
import ctypes, os, time
from dlbridge.testing.libraries import dlbridge_array
calls = 0

def crashes(shape, dtype, **keywords):
    global calls
    calls += 1
    if calls == 2:
        ctypes.string_at(0)
    return dlbridge_array(shape, dtype, **keywords)

def hangs(shape, dtype, **keywords):
    # Once per test (a file beside this module says it did), so that the
    # children after it run the remaining clauses rather than time out again.
    global calls
    calls += 1
    hung = os.path.join(os.path.dirname(__file__), "hung")
    if calls == 2 and not os.path.exists(hung):
        open(hung, "w").close()
        time.sleep(600)
    return dlbridge_array(shape, dtype, **keywords)

def exits(shape, dtype, **keywords):
    os._exit(3)

def declines(shape, dtype, **keywords):
    raise NotImplementedError("nothing today")

def forks_then_crashes(shape, dtype, **keywords):
    # The copy goes on through the clauses, as if nothing happened, while the original crashes.
    global calls
    calls += 1
    if calls == 2 and os.fork() != 0:
        ctypes.string_at(0)
    return dlbridge_array(shape, dtype, **keywords)

def ends_quietly(shape, dtype, **keywords):
    global calls
    calls += 1
    if calls == 2:
        os._exit(0)
    return dlbridge_array(shape, dtype, **keywords)

class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no message")

class NotAnException(BaseException):
    pass

def raises_unprintable(shape, dtype, **keywords):
    raise Unprintable()

def raises_base_exception(shape, dtype, **keywords):
    raise NotAnException("from the factory")

def raises_a_long_message(shape, dtype, **keywords):
    raise ValueError("x" * (50 << 20))

def raises_a_lone_surrogate(shape, dtype, **keywords):
    raise ValueError("bad \\udc80 byte")

not_callable = 42
"""

# A module that forks a helper at import, as a library starting a server or a
# multiprocessing pool would: the helper inherits every pipe, writes its pid
# into HELPER_PID, and outlives its parent unless its process group is ended.
FORKS_AT_IMPORT = """
import ctypes, os, time
from dlbridge.testing.libraries import dlbridge_array
if os.fork() == 0:
    with open(os.environ["HELPER_PID"], "a") as file:
        file.write(f"{os.getpid()}\\n")
    time.sleep(600)
    os._exit(0)

def crashes(shape, dtype, **keywords):
    ctypes.string_at(0)

def works(shape, dtype, **keywords):
    return dlbridge_array(shape, dtype, **keywords)
"""


@pytest.fixture
def seeded(tmp_path, monkeypatch, deliberate_crashes):
    (tmp_path / "kit_wrong.py").write_text(WRONG)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def clause_options(ids):
    """python -m dlbridge check's options that run these clauses only."""
    return [option for i in ids for option in ("--clause", i)]


def run(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600)


def test_dlbridge_passes_every_applicable_clause():
    for side, spec in (("producer", DLBRIDGE), ("consumer", "dlbridge.testing.libraries:dlbridge_from_dlpack")):
        results = check(side, spec)
        assert [r.clause for r in results] == [c.id for c in clauses(side)]
        assert [r for r in results if r.verdict == FAIL] == []


@pytest.mark.supervision
def test_a_crash_fails_the_clause_in_flight_and_the_rest_still_run(seeded):
    results = check("producer", "kit_wrong:crashes", only=FEW)
    assert [r.clause for r in results] == FEW
    assert results[0].verdict == PASS
    crashed = [r for r in results if r.observed.startswith("crashed")]
    said = "crashed: signal 11 (SIGSEGV); what it wrote on standard error:\nFatal Python error: Segmentation"
    assert crashed and all(r.verdict == FAIL and r.observed.startswith(said) for r in crashed)
    assert results[1] in crashed


@pytest.mark.supervision
def test_a_crash_is_told_under_its_clause_not_above_the_report(seeded):
    done = run("-m", "dlbridge", "check", "--producer", "kit_wrong:crashes", *clause_options(FEW))
    assert done.returncode == 1
    assert done.stderr == ""
    assert "        observed: crashed: signal 11 (SIGSEGV); what it wrote on standard error:\n" \
           "        Fatal Python error: Segmentation fault" in done.stdout


@pytest.mark.supervision
def test_a_copy_made_by_fork_speaks_for_nobody(seeded):
    results = check("producer", "kit_wrong:forks_then_crashes", only=FEW)
    assert [r.clause for r in results] == FEW  # one verdict each, the copy's ignored
    assert results[1].verdict == FAIL and results[1].observed.startswith("crashed: signal 11 (SIGSEGV)")


@pytest.mark.supervision
def test_a_child_that_ends_before_it_is_done_fails_the_clause_in_flight(seeded):
    results = check("producer", "kit_wrong:ends_quietly", only=FEW)
    assert results[0].verdict == PASS
    assert (results[1].verdict, results[1].observed) == (FAIL, "ended before it was done (exit status 0)")


@pytest.mark.parametrize("factory, observed", [
    ("raises_unprintable", "raised Unprintable: <its str() raised RuntimeError>"),
    ("raises_base_exception", "raised NotAnException: from the factory"),
])
@pytest.mark.supervision
def test_what_a_factory_raises_is_told_whatever_it_is(seeded, factory, observed):
    results = check("producer", f"kit_wrong:{factory}", only=FEW)
    assert (results[0].verdict, results[0].observed) == (FAIL, observed)


@pytest.mark.supervision
def test_a_message_of_any_size_is_read_at_once_and_cut(seeded):
    results = check("producer", "kit_wrong:raises_a_long_message", only=FEW)
    first = results[0].observed
    assert results[0].verdict == FAIL and first.startswith("raised ValueError: xxx")
    assert first.endswith(f"... ({(50 << 20) - (1 << 16) + len('raised ValueError: ')} characters more)")


@pytest.mark.supervision
def test_a_message_the_terminal_cannot_encode_is_still_printed(seeded):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), PYTHONIOENCODING="utf-8:strict")
    done = subprocess.run([sys.executable, "-m", "dlbridge", "check", "--producer", "kit_wrong:raises_a_lone_surrogate",
                           *clause_options(FEW)],
                          capture_output=True, text=True, env=env, timeout=600, errors="backslashreplace")
    assert done.returncode == 1, done.stderr
    assert "raised ValueError: bad \\udc80 byte" in done.stdout


@pytest.mark.supervision
def test_helpers_forked_at_import_neither_hold_the_verdict_nor_outlive_it(tmp_path, monkeypatch, deliberate_crashes):
    (tmp_path / "kit_forks.py").write_text(FORKS_AT_IMPORT)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("HELPER_PID", str(tmp_path / "helpers"))
    results = check("producer", "kit_forks:crashes", timeout=600, only=FEW)  # a helper holding the pipe would cost 600 s
    assert results[0].verdict == FAIL and results[0].observed.startswith("crashed: signal 11")
    assert [r for r in check("producer", "kit_forks:works", only=FEW) if r.verdict == FAIL] == []
    helpers = [int(pid) for pid in (tmp_path / "helpers").read_text().split()]
    assert len(helpers) > 2 and all(gone(pid) for pid in helpers)



def test_paths_of_any_type_and_length_reach_the_child(seeded, monkeypatch):
    import pathlib
    monkeypatch.syspath_prepend(str(seeded))
    monkeypatch.setattr(sys, "path", [pathlib.Path(seeded), *sys.path, *(f"/no/such/{i:0200}" for i in range(1000))])
    results = check("producer", DLBRIDGE)
    assert [r for r in results if r.verdict == FAIL] == []


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), "soon"])
def test_timeouts_must_be_positive_seconds(value):
    with pytest.raises(ValueError, match=f"^timeout: expected a positive number of seconds, got {value!r}$"):
        check("producer", DLBRIDGE, timeout=value)
    done = run("-m", "dlbridge", "check", "--producer", DLBRIDGE, "--timeout", str(value))
    assert done.returncode == 2
    assert done.stderr.endswith(
        f"python -m dlbridge check: error: argument --timeout: expected a positive number of seconds, got '{value}'\n")


def test_a_timeout_of_any_size_is_taken(seeded):
    assert [r for r in check("producer", DLBRIDGE, timeout=1e308) if r.verdict == FAIL] == []


@pytest.mark.supervision
def test_sigterm_ends_the_children_too(seeded, tmp_path):
    (tmp_path / "kit_waits.py").write_text(textwrap.dedent("""
        import os, time
        def waits(shape, dtype, **keywords):
            with open(os.environ["CHILD_PID"], "w") as file:
                file.write(str(os.getpid()))
            time.sleep(600)
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), *(p for p in sys.path if p)]),
               CHILD_PID=str(tmp_path / "child"))
    check_run = subprocess.Popen([sys.executable, "-m", "dlbridge", "check", "--producer", "kit_waits:waits"],
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        if (tmp_path / "child").exists() and (tmp_path / "child").read_text():
            break
        time.sleep(0.1)
    child = int((tmp_path / "child").read_text())
    check_run.terminate()
    assert check_run.wait(60) == -signal.SIGTERM
    assert gone(child)


@pytest.mark.supervision
def test_a_hang_fails_the_clause_after_its_timeout(seeded):
    results = check("producer", "kit_wrong:hangs", timeout=2, only=FEW)
    assert results[0].verdict == PASS
    assert (results[1].verdict, results[1].observed) == (FAIL, "timed out after 2 s")
    assert [r for r in results[2:] if r.verdict == FAIL] == []  # a new child went on from the clause after it


@pytest.mark.supervision
def test_an_exit_fails_the_clause(seeded):
    results = check("producer", "kit_wrong:exits", only=FEW)
    assert {(r.verdict, r.observed) for r in results} == {(FAIL, "crashed: exit status 3")}
    assert [r.clause for r in results] == FEW


@pytest.mark.supervision
def test_a_declined_case_is_not_applicable(seeded):
    import kit_wrong
    results = dlbridge.testing.check_producer(kit_wrong.declines)
    assert results and all(r.verdict == NOT_APPLICABLE for r in results)
    assert "the factory declines float32[2, 3]: nothing today" in results[0].observed


@pytest.mark.parametrize("spec, message", [
    ("kit_wrong", "expected MODULE:NAME, got 'kit_wrong'"),
    ("no_such_module:f", "cannot load no_such_module:f: ModuleNotFoundError: No module named 'no_such_module'"),
    ("kit_wrong:absent", "cannot load kit_wrong:absent: AttributeError: module 'kit_wrong' has no attribute 'absent'"),
    ("kit_wrong:not_callable", "kit_wrong:not_callable is int, not callable"),
])
@pytest.mark.supervision
def test_specs_that_do_not_load(seeded, spec, message):
    with pytest.raises(SpecError) as error:
        check("producer", spec)
    assert str(error.value) == message
    done = run("-m", "dlbridge", "check", "--producer", spec)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"python -m dlbridge check: {message}\n")


def test_check_refuses_an_unknown_side():
    with pytest.raises(ValueError, match="^expected side 'producer' or 'consumer', got 'both'$"):
        check("both", DLBRIDGE)


def test_only_the_clauses_named_run_in_the_reports_order():
    from dlbridge.testing.libraries import dlbridge_array
    assert [r.clause for r in check("producer", DLBRIDGE, only=[FEW[2], FEW[0]])] == [FEW[0], FEW[2]]
    assert [r.clause for r in check("producer", DLBRIDGE, only=FEW[1])] == [FEW[1]]  # one id
    assert [r.clause for r in dlbridge.testing.check_producer(dlbridge_array, only=(FEW[3],))] == [FEW[3]]
    done = run("-m", "dlbridge", "check", "--producer", DLBRIDGE, "--json", *clause_options([FEW[1], FEW[0]]))
    assert done.returncode == 0, done.stderr
    [subject] = json.loads(done.stdout)["subjects"]
    assert [r["clause"] for r in subject["results"]] == FEW[:2]


def test_a_clause_that_is_not_one_is_refused():
    from dlbridge.testing.libraries import dlbridge_array
    said = ("no producer clause 'producer.no_such_clause' (python -m dlbridge check's report and "
            "dlbridge.testing.clauses('producer') name each clause by its id)")
    with pytest.raises(ValueError) as error:
        check("producer", DLBRIDGE, only=[FEW[0], "producer.no_such_clause"])
    assert str(error.value) == said
    with pytest.raises(ValueError) as error:  # a consumer's clause is no producer's
        dlbridge.testing.check_producer(dlbridge_array, only=[clauses("consumer")[0].id])
    assert str(error.value).startswith(f"no producer clause {clauses('consumer')[0].id!r}")
    for only, name in ((5, "int"), ([["producer.methods"]], "list"), ((FEW[0], 5), "tuple")):
        with pytest.raises(TypeError) as error:
            check("producer", DLBRIDGE, only=only)
        assert str(error.value) == f"only: expected a clause id or an iterable of clause ids (str), got {name}"
    done = run("-m", "dlbridge", "check", "--producer", DLBRIDGE, "--clause", "producer.no_such_clause")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.endswith("python -m dlbridge check: error: argument --clause: no clause "
                                "'producer.no_such_clause' (the report names each clause by its id)\n")
    done = run("-m", "dlbridge", "check", "--producer", DLBRIDGE, "--consumer", "dlbridge.testing.libraries:"
               "dlbridge_from_dlpack", "--clause", FEW[0])
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.endswith("python -m dlbridge check: error: argument --clause: no consumer clause named, "
                                "and a --consumer is checked\n")


def test_the_report_names_each_clause_its_verdict_observation_and_sentence():
    done = run("-m", "dlbridge", "check", "--producer", DLBRIDGE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"producer {DLBRIDGE}\n")
    for c in clauses("producer"):
        assert f"  PASS  {c.id}: {c.title}" in done.stdout or f"  N/A   {c.id}: {c.title}" in done.stdout
    assert "        observed: " in done.stdout
    assert "        DLPack Python specification: \"" in done.stdout
    assert " passed, 0 warned, 0 failed, " in done.stdout


@pytest.mark.supervision
def test_json_and_the_exit_status_of_a_failure(seeded):
    done = run("-m", "dlbridge", "check", "--producer", "kit_wrong:crashes", "--json", *clause_options(FEW))
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["kit"] == f"dlbridge {dlbridge.__version__}"
    [subject] = report["subjects"]
    assert (subject["side"], subject["spec"]) == ("producer", "kit_wrong:crashes")
    assert set(subject["results"][0]) == {"clause", "verdict", "observed", "title", "source", "cites"}
    assert subject["summary"][FAIL] >= 1
    assert sum(subject["summary"].values()) == len(FEW)


def test_check_needs_a_subject():
    done = run("-m", "dlbridge", "check")
    assert done.returncode == 2
    assert "name a --producer MODULE:FACTORY, a --consumer MODULE:FUNCTION, or both" in done.stderr


# -- the pytest plugin ------------------------------------------------------------------


def pytest_run(tmp_path, *args):
    (tmp_path / "test_theirs.py").write_text("def test_their_own():\n    pass\n")
    return run("-m", "pytest", "-p", "dlbridge.testing", "-p", "no:cacheprovider", "-rs", "-v", *args,
               cwd=tmp_path)


def test_plugin_one_test_per_clause_beside_the_projects_own(tmp_path):
    done = pytest_run(tmp_path, "--dlpack-producer", DLBRIDGE)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "test_theirs.py::test_their_own PASSED" in done.stdout
    for c in clauses("producer"):
        assert f"dlpack::{c.id} PASSED" in done.stdout or f"dlpack::{c.id} SKIPPED" in done.stdout


@pytest.mark.supervision
def test_plugin_failures_show_the_observation_and_sentence(seeded, tmp_path):
    done = pytest_run(tmp_path, "--dlpack-producer", "kit_wrong:crashes", "-m", "dlpack")
    assert done.returncode == 1
    assert "test_their_own" not in done.stdout.replace("deselected", "")
    first = clauses("producer")[1]
    assert f"dlpack::{first.id} FAILED" in done.stdout
    assert "observed: crashed: signal 11 (SIGSEGV)" in done.stdout
    assert f"{first.source}: \"{first.cites}\"" in textwrap.dedent(done.stdout)


@pytest.mark.supervision
def test_plugin_skips_what_does_not_apply_with_the_reason(seeded, tmp_path):
    done = pytest_run(tmp_path, "--dlpack-producer", "kit_wrong:declines", "-m", "dlpack")
    assert "not applicable: the factory declines float32[2, 3]: nothing today" in done.stdout
    # ... and where nothing applies, nothing was checked: no pass.
    assert done.returncode == 1, done.stdout
    assert "dlbridge.testing: nothing was checked on producer kit_wrong:declines: no clause applied" in done.stdout


def test_plugin_a_warning_passes_with_a_kit_warning(tmp_path):
    # A refusal of a DLPack 2.0 tensor with ValueError: safe, where BufferError is recommended.
    done = pytest_run(tmp_path, "--dlpack-consumer", "kit_seeded_consumers:value_error_on_major_2", "-m", "dlpack")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "dlpack::consumer.version.major-2 PASSED" in done.stdout
    assert "KitWarning: consumer.version.major-2 on kit_seeded_consumers:value_error_on_major_2: DLPack 2.0 " \
           "float32[6]: refused with ValueError" in done.stdout


@pytest.mark.supervision
def test_nothing_checked_is_no_pass(seeded):
    done = run("-m", "dlbridge", "check", "--producer", "kit_wrong:declines")
    assert done.returncode == 3
    assert done.stderr == ("python -m dlbridge check: nothing was checked on producer kit_wrong:declines: no clause "
                           "applied (each observation says why; a factory that declines every case is no pass)\n")


@pytest.mark.parametrize("module, why", [
    ("import ctypes\nctypes.string_at(0)\n", "crashed: signal 11 (SIGSEGV)"),
    ("raise SystemExit(5)\n", "SystemExit: 5"),
])
@pytest.mark.supervision
def test_plugin_a_module_that_crashes_or_exits_at_import_is_a_usage_error(tmp_path, deliberate_crashes, module, why):
    (tmp_path / "kit_broken.py").write_text(module)
    done = pytest_run(tmp_path, "--dlpack-producer", "kit_broken:f")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "--dlpack-producer: " in done.stderr and why in done.stderr


def test_plugin_two_subjects_of_one_side_are_told_apart(tmp_path):
    done = pytest_run(tmp_path, "--dlpack-producer", DLBRIDGE, "--dlpack-producer",
                      "dlbridge.testing.libraries:memoryview_of", "-m", "dlpack", "--co")
    first = clauses("producer")[0].id
    assert f"{first}[{DLBRIDGE}]" in done.stdout
    assert f"{first}[dlbridge.testing.libraries:memoryview_of]" in done.stdout


def test_plugin_a_spec_that_does_not_load_is_a_usage_error(tmp_path):
    done = pytest_run(tmp_path, "--dlpack-consumer", "no_such_module:f")
    assert done.returncode == 4
    assert "--dlpack-consumer: cannot load no_such_module:f: ModuleNotFoundError" in done.stderr


def test_plugin_does_nothing_unasked(tmp_path):
    done = pytest_run(tmp_path)
    assert done.returncode == 0 and "dlpack::" not in done.stdout


@pytest.mark.parametrize("first", ["_consumer", "_interfaces", "_gpu", "_exchange"])
def test_the_clauses_are_in_one_order_whatever_module_is_imported_first(first):
    """The runner numbers clauses in the parent and runs them in a child: a
    subject's module that imports one kit module first must not reorder them."""
    script = (f"import dlbridge.testing.{first}\nfrom dlbridge.testing import clauses\n"
              "print([c.id for side in ('producer', 'consumer') for c in clauses(side)])")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == str([c.id for side in ("producer", "consumer") for c in clauses(side)])


def test_the_children_run_with_the_interpreters_options(tmp_path, monkeypatch):
    """-X, -W and the import flags reach the kit's children, read from sys
    and sys.flags (no private helper of CPython's)."""
    (tmp_path / "kit_options.py").write_text(textwrap.dedent("""
        import sys

        def factory(shape, dtype, *, read_only=False):
            if sys.flags.dont_write_bytecode and sys._xoptions.get("dlbridge_probe") == "1":
                raise NotImplementedError("the parent's -B and -X reached the child")
            raise ValueError(f"flags {sys.flags}, -X {sys._xoptions}")
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    script = "from dlbridge.testing import check; print(check('producer', 'kit_options:factory')[0].observed)"
    done = run("-B", "-X", "dlbridge_probe=1", "-c", script)
    assert "the parent's -B and -X reached the child" in done.stdout, done.stdout + done.stderr
