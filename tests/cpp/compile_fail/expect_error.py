#!/usr/bin/env python3
"""Compile-fail runner: runs a compiler command and passes only if it FAILS
and its stderr contains TEXT. With --succeed instead of TEXT it is the control:
it passes only if the command succeeds.

    expect_error.py TEXT [--max-errors N] -- COMPILER ARGS...
    expect_error.py --succeed -- COMPILER ARGS...

--max-errors N also fails it when the compiler reports more than N errors
(diagnostic lines with ": error" or ": fatal error"): a cascade.
"""
import re
import subprocess
import sys


def main(argv):
    max_errors = None
    if len(argv) > 4 and argv[2] == "--max-errors":
        max_errors = int(argv[3])
        argv = argv[:2] + argv[4:]
    if len(argv) < 4 or argv[2] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    text, command = argv[1], argv[3:]
    run = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=300)
    output = run.stdout + run.stderr
    if text == "--succeed":
        if run.returncode != 0:
            print(output, file=sys.stderr)
            print(f"FAIL: expected {command} to compile", file=sys.stderr)
            return 1
        print("ok: compiled")
        return 0
    if run.returncode == 0:
        print(f"FAIL: {command} compiled; expected an error containing {text!r}", file=sys.stderr)
        return 1
    if text not in run.stderr:
        print(output, file=sys.stderr)
        print(f"FAIL: the compiler failed, but its stderr lacks {text!r}", file=sys.stderr)
        return 1
    errors = [line for line in run.stderr.splitlines() if re.search(r": (fatal )?error\b", line)]
    if max_errors is not None and len(errors) > max_errors:
        print(output, file=sys.stderr)
        print(f"FAIL: {len(errors)} errors reported; expected at most {max_errors}", file=sys.stderr)
        return 1
    print(f"ok: refused with {text!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
