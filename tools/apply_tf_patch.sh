#!/usr/bin/env bash
# Applies tfpgo to a TensorFlow 2.21 source tree: copies the overlay
# (tensorflow_patch/tensorflow/**, new files only) into the tree and applies
# the patch series (tensorflow_patch/patches/*.patch) with `git apply`.
#
#   tools/apply_tf_patch.sh [--check] TF_SRC
#
# --check reports what would happen and changes nothing.
#
# Safe to re-run: a tree that already carries the series is left alone (only
# overlay files that changed since are refreshed). Refuses, with one line
# saying why, a tree that is not TensorFlow 2.21, has unrelated uncommitted
# changes, or carries the series only in part.
#
# The series was generated against the base below, whose files have CRLF line
# endings; on a tree with LF endings (upstream TensorFlow) the patches are
# applied with their CRs stripped.
set -euo pipefail

readonly BASE_COMMIT=802a41cfb1e74aea250c1d872ac1df502ceb1424
readonly BASE_TF_VERSION=2.21.0
readonly PROBE_FILE=tensorflow/compiler/mlir/tensorflow/ir/tf_op_base.td

PROG=apply_tf_patch.sh
die() {
  echo "$PROG: error: $*" >&2
  exit 1
}

usage() {
  echo "usage: $PROG [--check] TF_SRC" >&2
  exit 2
}

CHECK_ONLY=0
TF_SRC=""
for arg in "$@"; do
  case "$arg" in
    --check) CHECK_ONLY=1 ;;
    -h | --help) usage ;;
    -*) die "unknown option '$arg' (expected --check)" ;;
    *) [[ -z "$TF_SRC" ]] || usage; TF_SRC="$arg" ;;
  esac
done
[[ -n "$TF_SRC" ]] || usage

# The repository root is the script's parent directory, without resolving
# symlinks, so that under Bazel the runfiles tree (declared data) is used.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PATCH_DIR="$ROOT/tensorflow_patch/patches"
OVERLAY_DIR="$ROOT/tensorflow_patch/tensorflow"

shopt -s nullglob
PATCHES=("$PATCH_DIR"/[0-9][0-9][0-9][0-9]-*.patch)
shopt -u nullglob
((${#PATCHES[@]} > 0)) || die "no patches in $PATCH_DIR"
[[ -d "$OVERLAY_DIR" ]] || die "overlay directory $OVERLAY_DIR is missing"

# Bazel BUILD files of this repository's MLIR-22 build are not part of the
# overlay: TensorFlow's targets for the new files come from the patches.
mapfile -t OVERLAY_FILES < <(cd "$ROOT/tensorflow_patch" &&
  find -L tensorflow -type f ! -name BUILD ! -name BUILD.bazel ! -name '*.bzl' | LC_ALL=C sort)
((${#OVERLAY_FILES[@]} > 0)) || die "overlay directory $OVERLAY_DIR has no files"

[[ -d "$TF_SRC" ]] || die "TF_SRC '$TF_SRC' is not a directory"
TF_SRC="$(cd "$TF_SRC" && pwd)"
[[ -f "$TF_SRC/$PROBE_FILE" ]] ||
  die "$TF_SRC is not a TensorFlow source tree ($PROBE_FILE not found)"
[[ "$(git -C "$TF_SRC" rev-parse --show-toplevel 2>/dev/null)" == "$TF_SRC" ]] ||
  die "$TF_SRC is not the top of a git work tree (clone TensorFlow with git)"

tf_version="$(tr -d '\r' <"$TF_SRC/tensorflow/tf_version.bzl" 2>/dev/null |
  sed -n 's/^TF_VERSION = "\(.*\)"$/\1/p' || true)"
[[ "$tf_version" == "$BASE_TF_VERSION" ]] ||
  die "$TF_SRC is TensorFlow '${tf_version:-unknown}', the series is for $BASE_TF_VERSION (base $BASE_COMMIT); rebase it as tensorflow_patch/README.md describes"

# Patches in the tree's line-ending style.
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
if grep -q $'\r$' "$TF_SRC/$PROBE_FILE"; then
  eol=CRLF
  TREE_PATCHES=("${PATCHES[@]}")
else
  eol=LF
  TREE_PATCHES=()
  for p in "${PATCHES[@]}"; do
    sed 's/\r$//' "$p" >"$WORK/$(basename "$p")"
    TREE_PATCHES+=("$WORK/$(basename "$p")")
  done
fi
REVERSED=()
for ((i = ${#TREE_PATCHES[@]} - 1; i >= 0; i--)); do REVERSED+=("${TREE_PATCHES[i]}"); done

# Files the series modifies, for the dirty-tree check.
mapfile -t PATCHED_FILES < <(sed -n 's|^diff --git a/\([^ ]*\) b/.*|\1|p' "${PATCHES[@]}" | LC_ALL=C sort -u)

git_apply() { git -C "$TF_SRC" apply "$@"; }

series_applied=0
series_applicable=0
if git_apply --reverse --check "${REVERSED[@]}" 2>/dev/null; then
  series_applied=1
elif git_apply --check "${TREE_PATCHES[@]}" 2>/dev/null; then
  series_applicable=1
fi

stale_overlay=()
for f in "${OVERLAY_FILES[@]}"; do
  cmp -s "$ROOT/tensorflow_patch/$f" "$TF_SRC/$f" || stale_overlay+=("$f")
done

# Uncommitted changes outside what this script writes are refused; ours are
# expected once the series is applied.
ours="$(printf '%s\n' "${OVERLAY_FILES[@]}" "${PATCHED_FILES[@]}")"
mapfile -t foreign < <(git -C "$TF_SRC" status --porcelain --untracked-files=all |
  cut -c4- | grep -vxF -e "$ours" || true)
if ((${#foreign[@]} > 0)); then
  die "$TF_SRC has uncommitted changes (${foreign[*]:0:3}$(((${#foreign[@]} > 3)) && echo ' ...')); commit or stash them first"
fi

if ((series_applied)); then
  if ((${#stale_overlay[@]} == 0)); then
    echo "$PROG: $TF_SRC already carries the tfpgo series and overlay; nothing to do"
    exit 0
  fi
  if ((CHECK_ONLY)); then
    echo "$PROG: check ok: series applied; would refresh ${#stale_overlay[@]} overlay file(s): ${stale_overlay[*]}"
    exit 0
  fi
  for f in "${stale_overlay[@]}"; do
    mkdir -p "$TF_SRC/$(dirname "$f")"
    cp -L "$ROOT/tensorflow_patch/$f" "$TF_SRC/$f"
  done
  echo "$PROG: series already applied; refreshed ${#stale_overlay[@]} overlay file(s)"
  exit 0
fi

if ((!series_applicable)); then
  err="$(git_apply --check "${TREE_PATCHES[@]}" 2>&1 | head -1 || true)"
  die "the series does not apply to $TF_SRC ($err); it carries part of it or differs from base $BASE_COMMIT: restore the files with 'git checkout' or rebase the series (tensorflow_patch/README.md)"
fi

# A pristine tree must not already hold overlay files (hand-copied or from
# another version of tfpgo): they would be overwritten silently.
for f in "${OVERLAY_FILES[@]}"; do
  [[ ! -e "$TF_SRC/$f" ]] || die "$TF_SRC/$f already exists but the series is not applied; remove it first"
done

if git -C "$TF_SRC" cat-file -e "$BASE_COMMIT^{commit}" 2>/dev/null &&
  git -C "$TF_SRC" merge-base --is-ancestor "$BASE_COMMIT" HEAD; then
  base_note="base commit ${BASE_COMMIT:0:12} is in HEAD's history"
else
  base_note="TF_VERSION $tf_version and the series applies cleanly; $eol line endings"
fi

if ((CHECK_ONLY)); then
  echo "$PROG: check ok: ${#PATCHES[@]} patches and ${#OVERLAY_FILES[@]} overlay files would apply to $TF_SRC ($base_note)"
  exit 0
fi

git_apply "${TREE_PATCHES[@]}"
for f in "${OVERLAY_FILES[@]}"; do
  mkdir -p "$TF_SRC/$(dirname "$f")"
  cp -L "$ROOT/tensorflow_patch/$f" "$TF_SRC/$f"
done
echo "$PROG: applied ${#PATCHES[@]} patches and ${#OVERLAY_FILES[@]} overlay files to $TF_SRC ($base_note)"
