# Sourced by install.sh and tests/run, so that both use the same Python and
# install Debian packages the same way.

# choose_python: sets `python` to the interpreter to install into and run with.
# It is $PYTHON if set, else python3: an active virtual environment's, pyenv's,
# or the system's. An interpreter whose environment is externally managed
# (PEP 668: Debian's /usr/bin/python3 outside a virtual environment) takes no
# packages from pip; for it, the virtual environment .venv in the repository
# is used instead, made with that interpreter on first use.
choose_python() {
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  python=${PYTHON:-python3}
  if ! command -v "$python" >/dev/null; then
    echo "no '$python' command: install Python 3.11 or newer (Debian: apt-get install python3)" >&2
    return 1
  fi
  if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
    echo "$("$python" --version 2>&1) is too old: dlbridge needs Python 3.10 or newer (its tests 3.11)" >&2
    return 1
  fi
  if "$python" -c '
import os, sys, sysconfig
in_venv = sys.prefix != sys.base_prefix
sys.exit(in_venv or not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'; then
    if [ ! -x "$root/.venv/bin/python" ]; then
      echo "== $(command -v "$python") is externally managed (PEP 668): making the virtual environment .venv"
      # Debian splits venv's pip bootstrap into python3-venv; a failed attempt leaves a .venv without pip.
      if ! "$python" -m venv "$root/.venv" >/dev/null 2>&1; then
        rm -rf "$root/.venv"
        debian_packages python3-venv
        "$python" -m venv "$root/.venv"
      fi
    fi
    python="$root/.venv/bin/python"
    # As if activated: its meson, ninja and cython first on PATH, and the doctor's hints in terms of it.
    export VIRTUAL_ENV="$root/.venv" PATH="$root/.venv/bin:$PATH"
  fi
  echo "== Python: $(command -v "$python") ($("$python" --version 2>&1))"
}

# debian_packages PACKAGE...: installs those that are missing (apt-get, as
# root or through sudo).
debian_packages() {
  dpkg -s "$@" >/dev/null 2>&1 && return 0
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "missing Debian packages: $*; install them as root (apt-get install $*)" >&2; return 1; }
    sudo=sudo
  fi
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "$@"
}

# build_tools: what building dlbridge from source needs beyond PyPI: a C++20
# compiler and the interpreter's C headers (Debian's python3-dev for its
# system Python; pyenv and python.org builds ship them).
build_tools() {
  command -v c++ >/dev/null || debian_packages g++
  if ! "$python" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("include"), "Python.h")))'; then
    debian_packages python3-dev
  fi
}

# install_torch [PIP_OPTION...]: PyTorch as tests/requirements.txt asks, with
# those options (the constraints, or --upgrade). PyPI's torch for Linux x86_64
# brings CUDA's libraries (2.8 GB); where no GPU is usable, the tests need
# none of it: what the machine's pip would install is asked first (a CPU
# build it has, as on this project's machines, is taken), else PyTorch's CPU
# build from PyTorch's own index, and only where that cannot be had PyPI's.
install_torch() {
  local want report
  want=$(grep -E '^torch\b' "$(dirname "${BASH_SOURCE[0]}")/../tests/requirements.txt")
  if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    "$python" -m pip install -q "$@" "$want"
    return
  fi
  report=$("$python" -m pip install -q --dry-run --report - "$@" "$want" 2>/dev/null) || report=""
  if [ -n "$report" ] && ! grep -q '"name": *"nvidia-' <<<"$report"; then
    "$python" -m pip install -q "$@" "$want"
    return
  fi
  echo "   no GPU here: PyTorch's CPU build, from PyTorch's index (PyPI's torch brings CUDA's libraries)"
  if ! "$python" -m pip install -q --no-deps --retries 1 --timeout 30 \
         --index-url https://download.pytorch.org/whl/cpu "$@" "$want"; then
    echo "   PyTorch's index cannot be reached: PyPI's torch, with CUDA's libraries (about 2.8 GB more)"
    "$python" -m pip install -q "$@" "$want"
  fi
}

# find_python MINOR: prints an interpreter of Python MINOR (3.12, ...): pythonMINOR
# where it runs, else the newest of pyenv's; fails where there is none.
find_python() {
  local candidate
  if "python$1" -c '' >/dev/null 2>&1; then command -v "python$1"; return; fi
  command -v pyenv >/dev/null || return 1
  for candidate in $(ls -d "$(pyenv root)/versions/$1".* 2>/dev/null | sort -V -r); do
    [ -x "$candidate/bin/python$1" ] && { echo "$candidate/bin/python$1"; return; }
  done
  return 1
}
