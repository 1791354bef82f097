"""py_test wrappers: pytest suites and the lit suite as Bazel test targets."""

def tfpgo_pytest(name, srcs, deps = [], data = [], size = "medium", tags = [], **kwargs):
    """A py_test running pytest on `srcs` (main: tests/python/pytest_main.py)."""
    native.py_test(
        name = name,
        srcs = srcs + ["//tests/python:pytest_main.py"],
        main = "//tests/python:pytest_main.py",
        args = ["$(location %s)" % src for src in srcs],
        deps = deps + ["@local_python//:requirements"],
        data = data,
        size = size,
        tags = tags,
        python_version = "PY3",
        srcs_version = "PY3",
        **kwargs
    )

def tfpgo_py_binary(name, main, data = [], tags = [], visibility = None):
    """A py_binary over the tfpgo package whose entry point is the file `main`."""
    native.py_binary(
        name = name,
        srcs = [main],
        main = main,
        data = data,
        tags = tags,
        visibility = visibility,
        python_version = "PY3",
        srcs_version = "PY3",
        deps = ["//python:tfpgo", "@local_python//:requirements"],
    )

def tfpgo_bench(name, srcs = [], data = []):
    """A benchmark binary `<name>.py` over bench/harness (plus `srcs` it imports).

    Tagged manual: benchmarks run by hand (`bazel run //bench:<name>`), never as
    part of `bazel test //...`.
    """
    native.py_binary(
        name = name,
        srcs = [name + ".py"] + srcs,
        main = name + ".py",
        data = data + ["//tools:tfpgo-opt"],
        tags = ["manual"],
        python_version = "PY3",
        srcs_version = "PY3",
        deps = [":harness"],
    )
