"""Consumer packages built against the INSTALLED dlbridge, as their authors
build them (pip, no build isolation): the Cython example, the template and
the kernels package (test_cython_consumers.py, test_consumer_template.py,
test_kernels.py)."""
import os
import pathlib
import subprocess
import sys

import pytest

import dlbridge

# A source tree (an editable install, or the build folder on PYTHONPATH) has
# no headers beside the package.
INSTALLED = os.path.isdir(dlbridge.get_include())


def pip_install(source: pathlib.Path, root: pathlib.Path) -> pathlib.Path:
    """Builds the package at `source` in root/build and installs it into
    root/target, which it returns; skips where dlbridge is no installed wheel.
    tests/run's asan-python stage (DLBRIDGE_TEST_SANITIZE) sanitizes the
    package too, as dlbridge's headers run inside it; not for misaligned
    references: typed views accept unaligned NumPy data (docs/hardening.md)."""
    if not INSTALLED:
        pytest.skip(f"dlbridge at {os.path.dirname(dlbridge.__file__)} is not an installed wheel (no "
                    f"{dlbridge.get_include()}); {source.name} builds against an installed dlbridge: pip install .")
    cmd = [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
           "--disable-pip-version-check", "--target", str(root / "target"),
           f"--config-settings=build-dir={root / 'build'}", str(source)]
    sanitize = os.environ.get("DLBRIDGE_TEST_SANITIZE")
    if sanitize:
        cmd[-1:-1] = [f"--config-settings=setup-args=-Db_sanitize={sanitize}",
                      "--config-settings=setup-args=-Dcpp_args=-fno-sanitize-recover=all -fno-sanitize=alignment"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return root / "target"
