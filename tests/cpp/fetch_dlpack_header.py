#!/usr/bin/env python3
"""Fetch the DLPack >= 1.3 C header for the C++ ABI test (test_abi_v1.cpp).

Usage: python tests/cpp/fetch_dlpack_header.py DEST

The header is not part of dlbridge and must never be committed. It ships in
the PyPI wheel `apache-tvm-ffi` as tvm_ffi/include/dlpack/dlpack.h; this script
downloads that wheel with pip (no dependencies, binary only) into a temporary
folder, extracts just the header to DEST/dlpack/dlpack.h, checks that it
declares DLPack 1.x with x >= 3, and prints DEST (as an absolute path), ready
for `meson setup ... -Ddlpack_v1_include=DEST`.

A valid header already at DEST is reused, so repeated runs need no network;
pass --force to download again. Progress goes to stderr, DEST to stdout.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "apache-tvm-ffi"
MEMBER = "tvm_ffi/include/dlpack/dlpack.h"
MIN_MINOR = 3


def log(message: str) -> None:
    print(f"fetch_dlpack_header: {message}", file=sys.stderr)


def header_version(text: str) -> tuple[int, int] | None:
    """(major, minor) from the DLPACK_MAJOR_VERSION / DLPACK_MINOR_VERSION macros."""
    major = re.search(r"^\s*#\s*define\s+DLPACK_MAJOR_VERSION\s+(\d+)\b", text, re.M)
    minor = re.search(r"^\s*#\s*define\s+DLPACK_MINOR_VERSION\s+(\d+)\b", text, re.M)
    if not major or not minor:
        return None
    return int(major.group(1)), int(minor.group(1))


def check(text: str, origin: str) -> tuple[int, int]:
    version = header_version(text)
    if version is None:
        raise SystemExit(f"fetch_dlpack_header: {origin} defines no DLPACK_MAJOR_VERSION/DLPACK_MINOR_VERSION")
    major, minor = version
    if major != 1 or minor < MIN_MINOR:
        raise SystemExit(f"fetch_dlpack_header: {origin} is DLPack {major}.{minor}; need 1.{MIN_MINOR} or a later 1.x")
    return version


def download_wheel(folder: str) -> Path:
    base = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            "--disable-pip-version-check", "-d", folder]
    attempts = [
        base + [PACKAGE],
        # No wheel for this interpreter (a very new Python, say)? The header is
        # the same in every wheel, so take the one for a common CPython.
        base + ["--python-version", "3.12", "--implementation", "cp", "--abi", "cp312",
                "--platform", "manylinux_2_28_x86_64", PACKAGE],
    ]
    errors = []
    for command in attempts:
        log("running " + " ".join(command[1:]))
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        wheels = sorted(Path(folder).glob("*.whl"))
        if result.returncode == 0 and wheels:
            return wheels[0]
        errors.append(result.stdout.strip()[-2000:])
    raise SystemExit("fetch_dlpack_header: pip could not download a wheel of " + PACKAGE + ":\n"
                     + "\n---\n".join(errors))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dest", help="folder that receives dlpack/dlpack.h")
    parser.add_argument("--force", action="store_true", help="download even if DEST already has a valid header")
    args = parser.parse_args()

    dest = Path(args.dest).resolve()
    target = dest / "dlpack" / "dlpack.h"

    if target.is_file() and not args.force:
        text = target.read_text(encoding="utf-8", errors="replace")
        version = header_version(text)
        if version is not None and version[0] == 1 and version[1] >= MIN_MINOR:
            log(f"reusing {target} (DLPack {version[0]}.{version[1]})")
            print(dest)
            return 0

    with tempfile.TemporaryDirectory(prefix="dlpack-wheel-") as folder:
        wheel = download_wheel(folder)
        with zipfile.ZipFile(wheel) as archive:
            try:
                data = archive.read(MEMBER)
            except KeyError:
                raise SystemExit(f"fetch_dlpack_header: {wheel.name} has no {MEMBER}") from None
    text = data.decode("utf-8", errors="replace")
    major, minor = check(text, f"{MEMBER} from {wheel.name}")

    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    partial.write_bytes(data)
    os.replace(partial, target)
    log(f"wrote {target} (DLPack {major}.{minor}, from {wheel.name})")
    print(dest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
