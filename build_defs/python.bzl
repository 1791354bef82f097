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

def tfpgo_py_binary(name, main, deps, data = [], tags = [], visibility = None):
    """A py_binary whose entry point is the file `main`, over the tfpgo libraries `deps`."""
    native.py_binary(
        name = name,
        srcs = [main],
        main = main,
        data = data,
        tags = tags,
        visibility = visibility,
        python_version = "PY3",
        srcs_version = "PY3",
        deps = deps + ["@local_python//:requirements"],
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

def tfpgo_check_py_libraries(pattern):
    """Fails loading when a file matching `pattern` is in no py_library of the package.

    Called at the end of python/BUILD: a new module must join a library (with its
    deps), or no target would carry it and only an ImportError would tell.
    """
    listed = {}
    for rule in native.existing_rules().values():
        if rule["kind"] == "py_library":
            for src in rule["srcs"]:
                listed[src.split(":")[-1]] = True
    unlisted = [src for src in native.glob([pattern]) if src not in listed]
    if unlisted:
        fail("%s: in no py_library of %s/BUILD; add each to a library with its deps: %s" % (
            pattern,
            native.package_name(),
            ", ".join(unlisted),
        ))
