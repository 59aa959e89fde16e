#!/usr/bin/env bash
# Installs dlbridge from this folder and runs its main job, `python -m dlbridge`,
# which reports how it exchanges arrays with every array library present.
#
#   bash install.sh [PIP_OPTION...]     for example --config-settings=setup-args=-Dcuda=disabled
#
# It installs into the active virtual environment, or python3's environment
# (or $PYTHON's); where that one is externally managed (Debian's system
# Python), into the virtual environment .venv here, which it makes. It
# installs the compiler and Python headers from Debian's packages if missing.
# tests/run then uses the same interpreter (tools/environment.sh).
set -euo pipefail
cd "$(dirname "$0")"
source tools/environment.sh
choose_python
build_tools
echo "== Building dlbridge from this folder and installing it: Meson compiles the Python extension modules and,"
echo "   where nvcc is found, the CUDA backend; 1.5 to 5 minutes on 2 cores, while pip says 'still running...'"
started=$SECONDS
"$python" -m pip install "$@" .
"$python" tools/install_stamp.py write "$@"  # tests/run's python stage reuses this install
echo "== dlbridge installed in $((SECONDS - started)) s"
if [ "$python" = "$PWD/.venv/bin/python" ]; then
  echo "   into $PWD/.venv: '. .venv/bin/activate' to use it from your shell (the commands below assume it)"
fi
echo "== The main job: python -m dlbridge"
"$python" -m dlbridge
