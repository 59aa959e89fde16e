"""The type stubs (dlbridge/__init__.pyi) describe the installed package."""
import os
import subprocess
import sys

import pytest

ALLOWLIST = os.path.join(os.path.dirname(__file__), "stubtest_allowlist.txt")
MYPY_CONFIG = os.path.join(os.path.dirname(__file__), "stubtest.ini")


@pytest.mark.no_sanitized_code  # mypy reads the modules' signatures: nothing of dlbridge's runs beyond its import
def test_stubs_match_runtime():
    result = subprocess.run([sys.executable, "-m", "mypy.stubtest", "dlbridge", "--allowlist", ALLOWLIST,
                             "--mypy-config-file", MYPY_CONFIG],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_stubs_and_py_typed_are_installed():
    import importlib.resources
    files = importlib.resources.files("dlbridge")
    assert files.joinpath("__init__.pyi").is_file()
    assert files.joinpath("py.typed").is_file()


def test_stub_device_types_are_the_device_table():
    # DeviceType is made from device.hpp's table; the stub spells it out for
    # type checkers, and must list the same members with the same values.
    import ast
    import importlib.resources

    import dlbridge
    tree = ast.parse(importlib.resources.files("dlbridge").joinpath("__init__.pyi").read_text())
    [stub] = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "DeviceType"]
    members = {node.targets[0].id: node.value.value for node in stub.body if isinstance(node, ast.Assign)}
    assert members == {m.name: m.value for m in dlbridge.DeviceType}
    assert members["CUDA"] == 2 and members["CUDA_MANAGED"] == 13 and len(members) == 19
