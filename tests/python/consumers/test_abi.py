"""The ABI consumers compile in stays put within a minor series (tests/abi).

A Cython or C++ consumer built against dlbridge 0.1.x must run with any other
0.1.x (consumers depend on dlbridge>=0.1,<0.2). tests/abi/<series>.json is
the committed description of that ABI; tests/abi/abi.py reads the installed
package's, and any difference consumers could not survive fails here, named.
"""
import copy
import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest

import dlbridge
from paths import ROOT

ABI = ROOT / "tests" / "abi"
_spec = importlib.util.spec_from_file_location("dlbridge_abi", ABI / "abi.py")
abi = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(abi)


@pytest.fixture(scope="module")
def built():
    if not os.path.isdir(dlbridge.get_include()):
        pytest.skip(f"dlbridge at {os.path.dirname(dlbridge.__file__)} is not an installed wheel (no headers): "
                    f"the ABI is read from an installed dlbridge: pip install .")
    return abi.built()


def test_the_abi_is_the_one_committed_for_the_series(built):
    series = built["series"]
    path = ABI / f"{series}.json"
    assert path.is_file(), (f"dlbridge {dlbridge.__version__} starts the {series} series, which has no committed "
                            f"ABI: write it with `python tests/abi/abi.py > tests/abi/{series}.json`")
    changes = abi.differences(json.loads(path.read_text()), built)
    assert not changes, (
        f"the ABI that consumers compile in changed within the {series} series:\n  " + "\n  ".join(changes) +
        "\nConsumers built against another " + series + ".x would break. Undo the change, or start a new minor "
        "series (version in meson.build) and commit its ABI: python tests/abi/abi.py > tests/abi/<series>.json")


def test_every_part_is_found(built):
    # The probe finds each tensor field by a value it holds nowhere else: -1 or -2 would mean it did not.
    assert all(offset >= 0 for key, offset in built["tensor"].items() if key not in ("size", "align")), built["tensor"]
    assert built["Array"]["tensor_offset"] >= 16 and built["Array"]["fields"][0] == "cpp.tensor t", built["Array"]
    assert "wrap" in built["capi"] and "dlb::tensor &" in built["capi"]["wrap"], built["capi"]
    assert list(built["argument_api"]["slots"])[:1] in (["version"], ["abi_version"]), built["argument_api"]
    assert built["borrowed_array"]["fields"]["tensor"] == 0, built["borrowed_array"]
    assert built["series"] == ".".join(dlbridge.__version__.split(".")[:2])


def _first(mapping):
    return next(iter(mapping))


# A change to the built ABI, and the start of the difference it must be reported as.
CHANGES = [
    (lambda a: a["Array"].update(basicsize=a["Array"]["basicsize"] + 8), "Array.basicsize: was "),
    (lambda a: a["Array"].update(tensor_offset=a["Array"]["tensor_offset"] + 8), "Array.tensor_offset: was "),
    (lambda a: a["Array"]["fields"].reverse(), "Array.fields: was "),
    (lambda a: a["tensor"].update(data=a["tensor"]["data"] + 8), "tensor.data: was "),
    (lambda a: a["tensor"].update(size=a["tensor"]["size"] + 8), "tensor.size: was "),
    (lambda a: a["keeper"].update(size=a["keeper"]["size"] + 8), "keeper.size: was "),
    (lambda a: a["borrowed_array"]["fields"].update(readonly=1), "borrowed_array.fields: was "),
    (lambda a: a["capi"].update(wrap="int (int)"), "cimported function wrap: was "),
    (lambda a: a["capi"].pop("wrap"), "cimported function wrap: was "),
    (lambda a: a["argument_api"].update(abi_version=a["argument_api"]["abi_version"] + 1), "argument_api.abi_version: "),
    (lambda a: a["argument_api"].update(capsule="other"), "argument_api.capsule: "),
    (lambda a: a["argument_api"]["slots"].pop(_first(a["argument_api"]["slots"])), "argument_api.slots: "),
    (lambda a: a["argument_api"].update(slots=dict(reversed(a["argument_api"]["slots"].items()))),
     "argument_api.slots: "),
    (lambda a: a["argument_api"].update(size=a["argument_api"]["size"] - 8), "argument_api.size: "),
]


@pytest.mark.parametrize("change, reported", CHANGES, ids=[reported for _, reported in CHANGES])
def test_each_change_is_named(built, change, reported):
    changed = copy.deepcopy(built)
    change(changed)
    changes = abi.differences(built, changed)
    assert len(changes) == 1 and changes[0].startswith(reported), changes


def test_additions_are_not_changes(built):
    grown = copy.deepcopy(built)
    grown["capi"]["new_function"] = "PyObject *(void)"
    slots = grown["argument_api"]["slots"]
    slots["new_slot"] = grown["argument_api"]["size"]
    grown["argument_api"]["size"] += 8
    assert abi.differences(built, grown) == []
    assert abi.differences(built, built) == []


def test_a_consumer_imports_only_the_committed_functions(built, tmp_path):
    # What `from dlbridge cimport ...` gives a consumer (__init__.pxd) makes its
    # module import dlbridge._array's functions at load: only those the ABI
    # commits, never the private seam _array.pxd also declares for dlbridge's
    # own modules (an inline function there would pull in what it calls).
    source = tmp_path / "consumer.pyx"
    source.write_text("from dlbridge cimport Array, wrap, wrap_like, cpp\n\n"
                      "def ndim(Array a):\n    return a.t.ndim()\n")
    package_parent = os.path.dirname(os.path.dirname(dlbridge.__file__))
    result = subprocess.run([sys.executable, "-m", "cython", "-3", "--cplus", "-I", package_parent, str(source)],
                            capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    imported = re.findall(r"&__pyx_f_8dlbridge_6_array_(\w+)\b", (tmp_path / "consumer.cpp").read_text())
    committed = json.loads((ABI / f"{built['series']}.json").read_text())["capi"]
    assert imported and set(imported) <= set(committed), (imported, committed)
