"""dlbridge.annotate and the stub writer (python -m dlbridge stubs), on
Python functions; tests/python/consumers/test_cython_consumers.py and
test_consumer_template.py run them on compiled Cython modules."""
import inspect
import os
import subprocess
import sys
import types

import pytest

import dlbridge
from dlbridge._signatures import stub_text

ROWS = "float32[*, *] C-contiguous cpu read-only"


def kernel(x, y, /, factor=2.0, *, out=None):
    return x


def test_annotate_returns_the_function_with_the_demands_as_annotations():
    def f(x, y, scale=1.0):
        return x
    assert dlbridge.annotate(x=ROWS, y=b"float64[*] writable")(f) is f
    assert f.__annotations__ == {"x": ROWS, "y": "float64[*] writable"}
    assert str(inspect.signature(f)) == f"(x: '{ROWS}', y: 'float64[*] writable', scale=1.0)"
    dlbridge.annotate(scale="a note")(f)  # a second decorator adds to the first's
    assert list(f.__annotations__) == ["x", "y", "scale"]


@pytest.mark.parametrize("call, message", [
    (lambda: dlbridge.annotate(z=ROWS)(kernel), "annotate(): kernel() has no argument 'z'; its arguments are x, y, factor, out"),
    (lambda: dlbridge.annotate(x=3), "annotate(): argument 'x': expected the demands as str or bytes "
                                     "(cpp.describe(...)), got int"),
    (lambda: dlbridge.annotate(x=ROWS)(len), "annotate(): cannot annotate len, a builtin_function_or_method: "
                                             "a Cython function must be compiled with binding=True (Cython 3's default)"),
])
def test_annotate_refuses_what_it_cannot_do(call, message):
    with pytest.raises(TypeError) as e:
        call()
    assert str(e.value) == message


def test_stub_text_annotates_array_arguments_and_keeps_the_rest():
    module = types.ModuleType("kernels")
    module.kernel = dlbridge.annotate(x=ROWS, y="(float32 | float64)[*] cpu writable")(kernel)
    module.plain = lambda a, b=3: a
    module.plain.__name__ = "plain"
    module.Class, module.constant, module._private = type("Class", (), {}), 3, kernel
    assert stub_text(module) == "\n".join([
        "# Stubs for kernels, written by `python -m dlbridge stubs kernels`.",
        "# An array argument's annotation says what it demands (dlbridge.annotate).",
        "from typing import Annotated, Any",
        "",
        f"def kernel(x: Annotated[Any, '{ROWS}'], y: Annotated[Any, '(float32 | float64)[*] cpu writable'], /, "
        "factor=..., *, out=...): ...",
        "def plain(a, b=...): ...",
        "def __getattr__(name: str) -> Any: ...",
        ""])


def test_stubs_cli_refuses_a_module_it_cannot_import(tmp_path):
    result = subprocess.run([sys.executable, "-m", "dlbridge", "stubs", "no_such_module_here", "-o", str(tmp_path)],
                            capture_output=True, text=True)
    assert result.returncode == 2, result
    assert result.stderr.splitlines()[-1] == ("python -m dlbridge stubs: error: cannot import no_such_module_here: "
                                              "No module named 'no_such_module_here'")
    assert list(tmp_path.iterdir()) == []


def stubs(module_dir, name, out):
    """python -m dlbridge stubs NAME -o OUT, with module_dir first on the path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(module_dir), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "dlbridge", "stubs", name, "-o", str(out)],
                          capture_output=True, text=True, env=env)


HOSTILE_MODULES = {
    "an __all__ holding an int": ("__all__ = ['f', 3]\ndef f(x): pass\n",
                                  "its __all__ holds 3, a int, not a str"),
    "a raising __signature__": ("class F:\n    @property\n    def __signature__(self): raise RuntimeError('boom')\n"
                                "    def __call__(self): pass\nf = F()\n",
                                "describing f raised RuntimeError: boom"),
    "an __all__ that raises": ("class All:\n    def __iter__(self): raise ValueError('no')\n__all__ = All()\n",
                               "its __all__ is not a list of names: ValueError: no"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_MODULES))
def test_stubs_cli_leaves_the_existing_file_whole_where_it_cannot_describe(case, tmp_path):
    source, reason = HOSTILE_MODULES[case]
    (tmp_path / "hostile_mod.py").write_text(source)
    out = tmp_path / "out"
    out.mkdir()
    (out / "hostile_mod.pyi").write_text("kept\n")
    result = stubs(tmp_path, "hostile_mod", out)
    assert result.returncode == 1, result
    assert result.stderr == (f"python -m dlbridge stubs: cannot write {out / 'hostile_mod.pyi'} for hostile_mod: "
                             f"{reason}; no file was written\n")
    assert (out / "hostile_mod.pyi").read_text() == "kept\n"
    assert sorted(p.name for p in out.iterdir()) == ["hostile_mod.pyi"]  # no temporary file left


def test_stubs_cli_replaces_a_file_but_never_follows_a_link(tmp_path):
    (tmp_path / "plain_mod.py").write_text("def f(x, y=2): pass\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "plain_mod.pyi").write_text("old\n")
    os.chmod(out / "plain_mod.pyi", 0o640)
    result = stubs(tmp_path, "plain_mod", out)
    assert result.returncode == 0, result
    assert result.stdout == f"{out / 'plain_mod.pyi'}\n"
    assert "def f(x, y=...): ..." in (out / "plain_mod.pyi").read_text()
    assert os.stat(out / "plain_mod.pyi").st_mode & 0o777 == 0o640  # the file's mode is kept
    target = tmp_path / "elsewhere.txt"
    target.write_text("someone else's\n")
    (out / "plain_mod.pyi").unlink()
    (out / "plain_mod.pyi").symlink_to(target)
    result = stubs(tmp_path, "plain_mod", out)
    assert result.returncode == 1, result
    assert result.stderr == (f"python -m dlbridge stubs: cannot write {out / 'plain_mod.pyi'} for plain_mod: "
                             f"{out / 'plain_mod.pyi'} is a symbolic link; not replaced (remove it, or write "
                             f"elsewhere with -o); no file was written\n")
    assert target.read_text() == "someone else's\n" and (out / "plain_mod.pyi").is_symlink()


def test_stubs_leave_out_names_that_are_not_python_names(tmp_path):
    (tmp_path / "odd_names.py").write_text(
        "__all__ = ['f', 'class', 'g\\nimport os', 'h-i']\n"
        "def f(x): pass\n"
        "globals()['class'] = globals()['g\\nimport os'] = globals()['h-i'] = f\n"
        "__name__ = 'odd\\nnames'\n")
    result = stubs(tmp_path, "odd_names", tmp_path)
    assert result.returncode == 0, result
    assert result.stderr.splitlines() == [
        "python -m dlbridge stubs: left out 'class': not a Python name",
        "python -m dlbridge stubs: left out 'g\\nimport os': not a Python name",
        "python -m dlbridge stubs: left out 'h-i': not a Python name"]
    text = (tmp_path / "odd_names.pyi").read_text()
    assert text.splitlines() == [
        "# Stubs for odd names, written by `python -m dlbridge stubs odd names`.",
        "# An array argument's annotation says what it demands (dlbridge.annotate).",
        "from typing import Annotated, Any",
        "",
        "def f(x): ...",
        "def __getattr__(name: str) -> Any: ..."]
