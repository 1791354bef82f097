#!/usr/bin/env bash
# Runs the README's test command (`tools/bootstrap.sh && bazel test //...`) while
# a busy loop holds one core, as CI's machine often is: a test that passes here
# does not depend on how the machine's time fell. Arguments go to `bazel test`
# (e.g. --nocache_test_results, or targets instead of //...).
#
#   tools/test_under_load.sh --nocache_test_results
#
# The loop is bounded: it stops when the tests end, on any exit or signal (trap),
# and after TFPGO_LOAD_MAX_S seconds at most (default 3600). The exit status is
# the test command's.
set -u

cd "$(dirname "$0")/.."
max_s="${TFPGO_LOAD_MAX_S:-3600}"

# One core busy: a shell loop that never sleeps, stopped by `timeout` at the bound.
timeout "${max_s}" bash -c 'while :; do :; done' &
load_pid=$!
stop_load() {
  kill "${load_pid}" 2>/dev/null
  wait "${load_pid}" 2>/dev/null
}
trap stop_load EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

targets=("$@")
if ! printf '%s\n' "${targets[@]+"${targets[@]}"}" | grep -q '^//\|^:'; then
  targets+=(//...)
fi

echo "test_under_load: one core held busy (pid ${load_pid}, at most ${max_s} s)" >&2
started=$(date +%s)
tools/bootstrap.sh && bazel test "${targets[@]}"
status=$?
echo "test_under_load: bazel test exited ${status} after $(($(date +%s) - started)) s" \
  "with one core busy" >&2
exit "${status}"
