#!/bin/sh
echo "tfpgo: coverage tools are not available offline; use 'bazel test', not 'bazel coverage'." >&2
exit 1
