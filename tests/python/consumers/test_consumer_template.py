"""The consumer template (tests/downstream/template): a fresh copy builds
against the INSTALLED dlbridge with pip, its function takes arrays from every
producer and shows its demands; docs/cython-guide.md quotes its files whole."""
import os
import re
import subprocess
import sys
import textwrap

import pytest

import dlbridge
from paths import DOCS, DOWNSTREAM, ROOT

TEMPLATE = DOWNSTREAM / "template"
GUIDE = DOCS / "cython-guide.md"
DEMANDS = "float64[*] cpu read-only"


@pytest.fixture
def target(consumer_template):
    """A copy of the template, built once per run (conftest.py): the folder it is installed in."""
    return consumer_template


def run(target, code, *args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(target), os.environ.get("PYTHONPATH")) if p)
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_template_takes_every_producer_and_names_what_it_refuses(target):
    run(target, """
        import jax
        import jax.numpy as jnp
        import numpy as np
        import torch
        import dlbridge
        import my_kernels
        jax.config.update("jax_enable_x64", True)  # JAX makes float32 by default
        a = np.arange(6.0)
        for x in (a, a[::-2], torch.from_numpy(a), dlbridge.asarray(a), memoryview(a), jnp.asarray(a)):
            assert my_kernels.total(x) == float(np.asarray(x).sum()), type(x)
        for x, unmet in ((np.zeros(3, np.float32), "expected float64, got float32"),
                         (np.zeros((2, 2)), "expected ndim 1, got 2")):
            try:
                my_kernels.total(x)
            except TypeError as e:
                assert str(e) == "total(): argument 'x': " + unmet, e
            else:
                raise AssertionError("no TypeError")
    """)


def test_template_shows_its_demands(target, tmp_path):
    out = run(target, """
        import inspect, pydoc, my_kernels
        print(inspect.signature(my_kernels.total))
        print(pydoc.render_doc(my_kernels.total, renderer=pydoc.plaintext).splitlines()[2])
    """)
    assert out.splitlines() == [f"(x: '{DEMANDS}')", f"total(x: '{DEMANDS}')"]
    run(target, "import sys\nfrom dlbridge.__main__ import main\nsys.exit(main(sys.argv[1:]))",
        "stubs", "my_kernels", "-o", str(tmp_path))
    stub = (tmp_path / "my_kernels.pyi").read_text()
    assert f"def total(x: Annotated[Any, '{DEMANDS}']): ..." in stub.splitlines(), stub


def test_template_depends_on_the_installed_minor_series():
    major, minor = dlbridge.__version__.split(".")[:2]
    text = (TEMPLATE / "pyproject.toml").read_text()
    assert re.findall(r'"dlbridge([^"]*)"', text) == [f">={major}.{minor},<{major}.{int(minor) + 1}"] * 2


def test_guide_quotes_the_template_whole():
    """The guide's blocks marked "whole: tests/downstream/template/<file>" are that file, entire."""
    blocks = re.findall(r"<!-- whole: (tests/downstream/template/[\w.]+) -->\n```\w+\n(.*?)```", GUIDE.read_text(), re.S)
    assert sorted(name for name, _ in blocks) == sorted(f"tests/downstream/template/{p.name}"
                                                        for p in TEMPLATE.iterdir())
    for name, block in blocks:
        assert block == (ROOT / name).read_text(), f"the guide's copy of {name} differs from the file"


def test_build_flags_name_the_installed_package(capsys, monkeypatch):
    from dlbridge.__main__ import main
    if not os.path.isdir(dlbridge.get_include()):
        pytest.skip("not an installed wheel")
    for flag, folder in (("--cflags", dlbridge.get_include()),
                         ("--cython-flags", os.path.dirname(os.path.dirname(os.path.abspath(dlbridge.__file__))))):
        assert main([flag]) == 0
        assert capsys.readouterr().out == f"-I{folder}\n"
    # Where the package has no headers (an editable install, a source tree), both say so and fail.
    missing = os.path.join(os.path.dirname(dlbridge.__file__), "no-include")
    monkeypatch.setattr(dlbridge, "get_include", lambda: missing)
    for flag in ("--cflags", "--cython-flags"):
        with pytest.raises(SystemExit) as e:
            main([flag])
        assert e.value.code == (f"python -m dlbridge: dlbridge at {os.path.dirname(dlbridge.__file__)} has no "
                                f"{missing}: build C++ and Cython consumers against a regular install "
                                f"(pip install dlbridge, not -e); see \"Editable installs\" in docs/cython-guide.md")
