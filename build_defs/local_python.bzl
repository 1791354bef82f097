"""Binds Bazel's Python toolchain to the interpreter that holds requirements.txt.

No rules_python and no download: tools/bootstrap.sh pip-installs the pinned
requirements into `python3` (or $TFPGO_PYTHON), and this repository rule points
py_binary/py_test at that exact interpreter, resolved to its real path so that
shims (pyenv) and a restricted PATH inside tests cannot swap it.
"""

def _local_python_impl(rctx):
    python = rctx.os.environ.get("TFPGO_PYTHON", "") or rctx.which("python3")
    if not python:
        fail("tfpgo: no python3 on PATH and TFPGO_PYTHON unset; run tools/bootstrap.sh")
    result = rctx.execute([python, "-c", "import sys; print(sys.executable)"])
    if result.return_code != 0:
        fail("tfpgo: %s does not run: %s" % (python, result.stderr))
    interpreter = result.stdout.strip()
    rctx.file("BUILD", """\
load("@bazel_tools//tools/python:toolchain.bzl", "py_runtime_pair")

package(default_visibility = ["//visibility:public"])

py_runtime(
    name = "python3_runtime",
    interpreter_path = "{interpreter}",
    python_version = "PY3",
)

py_runtime_pair(
    name = "runtime_pair",
    py3_runtime = ":python3_runtime",
)

toolchain(
    name = "python_toolchain",
    toolchain = ":runtime_pair",
    toolchain_type = "@bazel_tools//tools/python:toolchain_type",
)

# Marker dependency in the spirit of xprof's `expect_tensorflow_installed`: the
# packages of requirements.txt come from the interpreter above, not from Bazel.
py_library(name = "requirements")
""".format(interpreter = interpreter))
    rctx.file("interpreter.txt", interpreter + "\n")

local_python = repository_rule(
    implementation = _local_python_impl,
    environ = ["TFPGO_PYTHON", "PATH"],
    local = True,
)
