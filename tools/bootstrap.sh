#!/usr/bin/env bash
# Installs what tfpgo needs on Debian 12 and binds Bazel to the Python that has
# the requirements. Idempotent: when everything is present it only checks
# (well under a second) and changes nothing.
#
#   tools/bootstrap.sh            # install what is missing
#   TFPGO_PYTHON=/path/python3 tools/bootstrap.sh   # use that interpreter
#
# Steps: apt packages (Bazel, Graphviz, MLIR/LLVM 22, clang-format 22, Chromium), Python
# requirements (requirements.txt, exact pins), user.bazelrc (interpreter).
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
apt_packages=(
  bazel-bootstrap graphviz chromium git time
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools clang-format-22
  python3 python3-venv python3-pip
)

say() { echo "bootstrap: $*" >&2; }
fail() {
  say "step '$1' failed: $2"
  exit 1
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    return 1
  fi
}

missing_apt_packages() {
  local pkg status
  for pkg in "${apt_packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)
    [ "$status" = "install ok installed" ] || echo "$pkg"
  done
}

install_apt_packages() {
  local missing
  missing=$(missing_apt_packages)
  [ -z "$missing" ] && return 0
  say "installing Debian packages:" $missing
  command -v apt-get >/dev/null 2>&1 || fail "apt" "apt-get not found; tfpgo needs Debian 12 (bookworm) packages"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null ||
    fail "apt-get update" "cannot update package lists (need root or sudo, and access to the Debian mirror)"
  # shellcheck disable=SC2086
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null ||
    fail "apt-get install" "could not install: $missing"
}

# The interpreter Bazel's Python targets will use: $TFPGO_PYTHON, else python3.
# Debian's own python3 is "externally managed" (PEP 668), so requirements go
# into a virtual environment under .venv/ instead.
choose_python() {
  local python=${TFPGO_PYTHON:-}
  if [ -z "$python" ]; then
    python=$(command -v python3) || fail "python" "python3 not found"
    if "$python" -c 'import sys, sysconfig, os; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'; then
      if [ ! -x "$repo/.venv/bin/python3" ]; then
        say "creating $repo/.venv (the system Python is externally managed)"
        "$python" -m venv "$repo/.venv" || fail "python venv" "could not create $repo/.venv"
      fi
      python="$repo/.venv/bin/python3"
    fi
  fi
  "$python" -c 'import sys; print(sys.executable)' || fail "python" "$python does not run"
}

requirements_satisfied() {
  "$1" - "$repo/requirements.txt" <<'EOF'
import sys
from importlib import metadata

for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, _, version = line.partition("==")
    try:
        if metadata.version(name) != version:
            sys.exit(1)
    except metadata.PackageNotFoundError:
        sys.exit(1)
EOF
}

install_requirements() {
  local python=$1
  requirements_satisfied "$python" && return 0
  say "installing Python requirements into $python"
  "$python" -m pip install -q --disable-pip-version-check -r "$repo/requirements.txt" ||
    fail "pip install" "pip could not install requirements.txt into $python"
  requirements_satisfied "$python" ||
    fail "pip install" "requirements.txt pins are still not met in $python after pip install"
}

# Bazel reads the interpreter through --repo_env (see build_defs/local_python.bzl).
write_user_bazelrc() {
  local python=$1 wanted current=""
  wanted="build --repo_env=TFPGO_PYTHON=$python"
  [ -f "$repo/user.bazelrc" ] && current=$(cat "$repo/user.bazelrc")
  [ "$current" = "$wanted" ] && return 0
  printf '%s\n' "$wanted" >"$repo/user.bazelrc.tmp" && mv "$repo/user.bazelrc.tmp" "$repo/user.bazelrc" ||
    fail "user.bazelrc" "cannot write $repo/user.bazelrc"
}

install_apt_packages
python=$(choose_python) || exit 1
install_requirements "$python"
write_user_bazelrc "$python"
command -v bazel >/dev/null 2>&1 || fail "bazel" "bazel not on PATH after installing bazel-bootstrap"
[ -x /usr/lib/llvm-22/bin/mlir-tblgen ] || fail "mlir" "/usr/lib/llvm-22/bin/mlir-tblgen missing after installing mlir-22-tools"
[ -x /usr/lib/llvm-22/bin/clang-format ] || fail "clang-format" "/usr/lib/llvm-22/bin/clang-format missing after installing clang-format-22"
exit 0
