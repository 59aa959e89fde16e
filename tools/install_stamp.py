"""Whether the dlbridge this interpreter imports was installed from this tree
as it is now, so that tests/run's python stage can reuse what install.sh
just built instead of building it again.

    python tools/install_stamp.py write [PIP_OPTION...]   after pip install [PIP_OPTION...] .
    python tools/install_stamp.py check [PIP_OPTION...]   exit 0 if that install is still current

The stamp (build/install-stamp.json, one per interpreter) holds a digest of the files the wheel is
built from (what git lists under the build's inputs, tracked or not, less
what .gitignore ignores), the pip options, the interpreter, and a digest of
the installed distribution's RECORD, which names every installed file with
its hash: a reinstall from elsewhere, an editable install or an uninstall
changes it. Without git (a tree that is not a clone) nothing is ever reused.
"""
import hashlib
import importlib.metadata
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
STAMP = ROOT / "build" / "install-stamp.json"
# What meson-python builds the wheel from.
INPUTS = ["pyproject.toml", "meson.build", "meson_options.txt", "lib", "cuda", "cython"]


def source_digest() -> str | None:
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *INPUTS],
                                cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    digest = hashlib.sha256()
    for name in sorted(filter(None, listed.split(b"\0"))):
        path = ROOT / name.decode()
        if path.is_file():  # a tracked file deleted in the work tree is listed too
            digest.update(name + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def installed_digest() -> str | None:
    try:
        record = importlib.metadata.distribution("dlbridge").read_text("RECORD")
    except importlib.metadata.PackageNotFoundError:
        return None
    return hashlib.sha256(record.encode()).hexdigest() if record else None


def current(options: list[str]) -> dict | None:
    source, installed = source_digest(), installed_digest()
    if source is None or installed is None:
        return None
    return {"source": source, "options": options, "python": sys.executable, "installed": installed}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("write", "check"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        stamps = json.loads(STAMP.read_text())  # one per interpreter
    except (OSError, ValueError):
        stamps = {}
    now = current(argv[1:])
    if argv[0] == "check":
        return 0 if now is not None and stamps.get(sys.executable) == now else 1
    stamps[sys.executable] = now
    STAMP.parent.mkdir(exist_ok=True)
    STAMP.write_text(json.dumps(stamps, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
