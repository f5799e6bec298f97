#!/usr/bin/env bash
# raylab's one install procedure: `make install`, both Docker images and the README all run this script.
#
#   VENV=.venv PYTHON=python3.11 TORCH_SPEC="torch==2.13.0" EXTRAS="dev,bench,mario,procgen" scripts/install.sh
#
# 1. System packages the environments need (Debian/Ubuntu): Qt5 runtime for EnvPool's Procgen, g++ for
#    nes-py. Skipped when present, or with SKIP_SYSTEM_DEPS=1; apt-get runs as root or through sudo.
# 2. A virtual environment at $VENV (VENV=system: install into the current interpreter, as the images do).
# 3. torch first, as $TORCH_SPEC says: `auto` (the default) a CPU build from wherever one is
#    (scripts/torch_choice.py: the pin torch==2.13.0 where pip finds a CPU build, else PyTorch's CPU index,
#    one line saying which); any other value is passed to pip as given (a CUDA build: "torch --index-url
#    https://download.pytorch.org/whl/cu130"); "" keeps the torch already there. A spec other than the one
#    the venv's torch was installed with ($VENV/.raylab-torch) replaces that torch. Then raylab with
#    $EXTRAS, editable (its distribution name is raylab-actor-learner; the package it installs is `raylab`).
# RAYLAB_PIP_ARGS adds arguments to the raylab install (tests use --no-deps). `--system-deps-only` stops
# after step 1 (`make system-deps`).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-.venv}"
PYTHON="${PYTHON:-$(command -v python3.11 || command -v python3)}"
TORCH_SPEC="${TORCH_SPEC-auto}"
EXTRAS="${EXTRAS-dev,bench,mario,procgen}"
RAYLAB_PIP_ARGS="${RAYLAB_PIP_ARGS:-}"

system_deps() {
  if [ "${SKIP_SYSTEM_DEPS:-0}" = 1 ]; then return; fi
  # the library list is read whole first: under pipefail, `ldconfig -p | grep -q` fails whenever grep exits at
  # its first match while ldconfig is still writing (SIGPIPE), and the script then ran apt-get for nothing
  local libs
  libs=$("$(command -v ldconfig || echo /sbin/ldconfig)" -p)
  if grep -q libQt5Gui.so.5 <<<"$libs" && command -v g++ >/dev/null; then
    echo "system packages present"; return
  fi
  if ! command -v apt-get >/dev/null; then
    echo "warning: install Qt5 (libqt5gui5) and g++ with your package manager: Procgen and Mario need them" >&2
    return
  fi
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends libqt5gui5 g++ \
    || DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends libqt5gui5t64 g++
}

system_deps
if [ "${1:-}" = --system-deps-only ]; then exit 0; fi
if [ "$VENV" = system ]; then
  PY="$PYTHON"
else
  "$PYTHON" -m venv "$VENV"
  PY="$VENV/bin/python"
fi
"$PY" -m pip install --quiet --upgrade pip
if [ -n "$TORCH_SPEC" ]; then
  REQUESTED="$TORCH_SPEC"
  if [ "$TORCH_SPEC" = auto ]; then
    TORCH_SPEC=$("$PY" "$ROOT/scripts/torch_choice.py")
  fi
  # pip keeps an installed torch that satisfies the new spec (a CPU 2.13.0 satisfies "torch"): a spec other
  # than the one it was installed with replaces it. A venv from before the record was kept: a spec given by
  # hand replaces its torch, `auto` keeps it.
  RECORD="$VENV/.raylab-torch"
  if [ "$VENV" = system ]; then RECORD=""; fi
  if [ -n "$RECORD" ] && [ -f "$RECORD" ]; then BEFORE=$(cat "$RECORD"); else BEFORE="an unrecorded spec"; fi
  if [ -n "$RECORD" ] && [ "$BEFORE" != "$TORCH_SPEC" ] && { [ -f "$RECORD" ] || [ "$REQUESTED" != auto ]; } \
    && "$PY" -m pip show torch >/dev/null 2>&1; then
    echo "torch: replacing the torch installed with '$BEFORE' by '$TORCH_SPEC'"
    "$PY" -m pip uninstall --quiet --yes torch
  fi
  echo "pip install $TORCH_SPEC"
  # shellcheck disable=SC2086  # TORCH_SPEC may carry --index-url
  "$PY" -m pip install --quiet $TORCH_SPEC
  if [ -n "$RECORD" ]; then printf '%s\n' "$TORCH_SPEC" >"$RECORD"; fi
fi
# The distribution was first named "raylab" (PyPI's raylab is another project): an editable install of this
# checkout under that name, left in an older $VENV, is removed so that one distribution owns the package.
old=$("$PY" -m pip show raylab 2>/dev/null || true)
if grep -qxF "Editable project location: $ROOT" <<<"$old"; then
  echo "pip uninstall raylab (this checkout's install under its old distribution name)"
  "$PY" -m pip uninstall --quiet --yes raylab
fi
SPEC="$ROOT"
if [ -n "$EXTRAS" ]; then SPEC="$ROOT[$EXTRAS]"; fi
# shellcheck disable=SC2086
"$PY" -m pip install --quiet $RAYLAB_PIP_ARGS -e "$SPEC"
echo "raylab installed into $("$PY" -c 'import sys; print(sys.prefix)')"
