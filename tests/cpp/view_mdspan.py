#!/usr/bin/env python3
"""Builds and runs test_view_mdspan.cpp with a C++23 standard library that has
std::mdspan, proving dlb::view::to_mdspan() and dlb::view(std::mdspan).

GCC 12's libstdc++ has no <mdspan>; libc++ >= 18 has it in C++23 mode (Debian:
clang-19 libc++-19-dev libc++abi-19-dev). Compilers tried, first that has it:
$DLB_MDSPAN_CXX, the build's own C++ compiler (-std=c++23), clang++-19 /
clang++-18 / clang++ with -stdlib=libc++. None: exit 77 (meson: SKIP).

    view_mdspan.py --out DIR [--cxx WORD]... [-I DIR]... SOURCE...
"""
import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

# doctest's header without its runner (DOCTEST_CONFIG_DISABLE), which the
# test compiles: the probe only asks whether both headers compile and link
# with this standard library.
PROBE = """#include <mdspan>
#define DOCTEST_CONFIG_DISABLE
#include <doctest/doctest.h>
#if !defined(__cpp_lib_mdspan)
#error no mdspan
#endif
int main() {}
"""


def candidates(build_cxx):
    if os.environ.get("DLB_MDSPAN_CXX"):
        yield shlex.split(os.environ["DLB_MDSPAN_CXX"])
    if build_cxx:
        yield build_cxx + ["-std=c++23"]
    for name in ("clang++-19", "clang++-18", "clang++-20", "clang++"):
        if shutil.which(name):
            yield [name, "-std=c++23", "-stdlib=libc++"]


def works(cxx, workdir):
    probe = os.path.join(workdir, "probe.cpp")
    with open(probe, "w") as f:
        f.write(PROBE)
    run = subprocess.run(cxx + [probe, "-o", os.path.join(workdir, "probe")], capture_output=True, text=True)
    return run.returncode == 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--cxx", action="append", default=[])
    parser.add_argument("-I", dest="includes", action="append", default=[])
    parser.add_argument("sources", nargs="+")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.out) as workdir:
        chosen = next((c for c in candidates(args.cxx) if works(c, workdir)), None)
    if chosen is None:
        print("SKIP: no compiler here has std::mdspan (__cpp_lib_mdspan) and doctest")
        return 77
    program = os.path.join(args.out, "dlbridge_view_mdspan")
    command = chosen + ["-Wall", "-Wextra", "-DDLB_REQUIRE_MDSPAN"] + [f"-I{d}" for d in args.includes]
    command += args.sources + ["-o", program]
    print("$", shlex.join(command), flush=True)
    if subprocess.run(command).returncode != 0:
        print("FAIL: the mdspan test did not compile", file=sys.stderr)
        return 1
    print("$", program, flush=True)
    return subprocess.run([program]).returncode


if __name__ == "__main__":
    sys.exit(main())
