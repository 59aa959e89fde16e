"""The Python layer's extension modules and their seams (docs/architecture.md,
"The Python layer"): each cimports only modules below it, through their
.pxd files, so the graph has no cycle; one module links the CUDA backend."""
import re

import pytest

from paths import ROOT

PACKAGE = ROOT / "cython" / "dlbridge"
# Bottom to top, as architecture.md draws them.
ORDER = ["_types", "_dlpack", "_backend", "_array", "_importers"]

pytestmark = pytest.mark.any_python  # the sources' structure: the same on every Python


def cimported(module):
    """The dlbridge modules that `module`'s .pyx, its .pxi files and its .pxd cimport."""
    sources = [PACKAGE / f"{module}.pyx", PACKAGE / f"{module}.pxd"]
    pyx = sources[0].read_text()
    sources += [PACKAGE / name for name in re.findall(r'^include "([^"]+)"', pyx, re.M)]
    text = "\n".join(path.read_text() for path in sources if path.is_file())
    found = set(re.findall(r"^\s*(?:from\s+dlbridge\.(\w+)\s+cimport|cimport\s+dlbridge\.(\w+))", text, re.M))
    return {name for pair in found for name in pair if name} - {"cpp"}


def built_modules():
    """The extension modules cython/dlbridge/meson.build builds, and the
    dependencies it gives each."""
    build = (PACKAGE / "meson.build").read_text()
    table = re.search(r"module_deps = \{(.*?)\n\}", build, re.S).group(1)
    return dict(re.findall(r"'(\w+)': \[([^\]]*)\]", table))


def test_the_modules_are_the_ones_drawn():
    assert sorted(built_modules()) == sorted(ORDER)
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    drawn = re.search(r"^```\n(_types .*?)^```", architecture, re.S | re.M).group(1)
    assert re.findall(r"^(_\w+)", drawn, re.M) == ORDER


@pytest.mark.parametrize("module", ORDER)
def test_a_module_cimports_only_those_below_it(module):
    below = set(ORDER[:ORDER.index(module)])
    assert cimported(module) <= below, f"{module} cimports {sorted(cimported(module) - below)}, not below it"


def test_only_the_backend_links_cuda():
    assert [name for name, deps in built_modules().items() if "cuda_dep" in deps] == ["_backend"]
