"""The type stubs (dlbridge/__init__.pyi) describe the installed package."""
import subprocess
import sys


def test_stubs_match_runtime():
    result = subprocess.run([sys.executable, "-m", "mypy.stubtest", "dlbridge"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_stubs_and_py_typed_are_installed():
    import importlib.resources
    files = importlib.resources.files("dlbridge")
    assert files.joinpath("__init__.pyi").is_file()
    assert files.joinpath("py.typed").is_file()
