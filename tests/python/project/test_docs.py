"""The docs cite tests that exist: every `test_X.py::test_name` in docs/ and
the README (docs/errors.md cites the test of each error) names a test in
that file, and every tests/python or tests/cpp source file they name is
there, so a renamed or moved test cannot leave a citation behind."""
import ast
import fnmatch
import re

import pytest

from paths import ROOT

PYTHON_TESTS = ROOT / "tests" / "python"
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]

# `tests/python/AREA/test_x.py::name[param]`, `test_x.py::name`, or `::name`
# citing the file named last on the same line; the name may end in * (every
# test it starts).
CITATION = re.compile(r"`((?:tests/python/(?:\w+/)?)?test_\w+\.py)?::([\w*]+)(?:\[[^\]`]*\])?`")
SOURCE = re.compile(r"tests/(?:python|cpp)/(?:\w+/)*\w+\.(?:py|cpp)\b")


def citations():
    for doc in DOCS:
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            file = None
            for match in CITATION.finditer(line):
                file = match.group(1) or file
                if file is not None:
                    yield f"{doc.name}:{number}", file, match.group(2)


def names_in(file, cache={}):
    if file not in cache:
        # A bare file name is the test file of that name in any area folder.
        found = [ROOT / file] if "/" in file else list(PYTHON_TESTS.glob(f"*/{file}"))
        path = found[0] if len(found) == 1 else ROOT / "missing"
        tree = ast.parse(path.read_text()) if path.exists() else ast.Module(body=[], type_ignores=[])
        cache[file] = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    return cache[file]


def test_docs_cite_tests():
    assert sum(1 for _ in citations()) > 100  # the pattern still finds them


def test_every_cited_test_exists():
    missing = [f"{where}: {file}::{name}" for where, file, name in citations()
               if not fnmatch.filter(names_in(file), name)]
    assert missing == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.name)
def test_every_test_file_named_exists(doc):
    missing = sorted({path for path in SOURCE.findall(doc.read_text()) if not (ROOT / path).exists()})
    assert missing == []
