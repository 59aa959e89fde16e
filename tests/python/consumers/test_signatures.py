"""dlbridge.annotate and the stub writer (python -m dlbridge stubs), on
Python functions; tests/python/consumers/test_cython_consumers.py and
test_consumer_template.py run them on compiled Cython modules."""
import inspect
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
