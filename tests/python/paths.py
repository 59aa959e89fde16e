"""Where the tests find the repository's files, from any folder of tests/python."""
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOWNSTREAM = ROOT / "tests" / "downstream"
DOCS = ROOT / "docs"
HELPERS = ROOT / "tests" / "python"  # conftest.py, peers.py, messages.py, ...
