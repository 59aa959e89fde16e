#!/usr/bin/env python3
"""Runs PROGRAM ARGS... and passes only if it dies by a signal or exits
non-zero AND its stderr contains TEXT (a failed assertion, not any crash).

    expect_abort.py TEXT -- PROGRAM [ARGS...]
"""
import subprocess
import sys


def main(argv):
    if len(argv) < 4 or argv[2] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    text, command = argv[1], argv[3:]
    run = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=60)
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    if run.returncode == 0:
        print(f"FAIL: {command} exited 0; expected an abort", file=sys.stderr)
        return 1
    if text not in run.stderr:
        print(f"FAIL: exit status {run.returncode}, but stderr lacks {text!r}", file=sys.stderr)
        return 1
    print(f"ok: exit status {run.returncode}, stderr has {text!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
