"""Runs Debian's mlir-tblgen (LLVM 22) on TableGen files."""

def mlir_tblgen(name, td_file, outs, td_srcs = [], includes = [], deps = []):
    """Generates C++ from `td_file` and wraps the outputs in a cc_library.

    Args:
      name: name of the resulting cc_library of generated `.inc` files.
      td_file: the main `.td` file.
      outs: dict from output file (relative to the package) to the list of
        mlir-tblgen flags that produce it, e.g. {"Passes.h.inc": ["-gen-pass-decls"]}.
      td_srcs: other `.td` files the main file includes.
      includes: include directories relative to the workspace root.
      deps: cc_library dependencies of the generated code.
    """
    include_flags = " ".join(["-I " + inc for inc in includes] +
                             ["-I $(GENDIR)/" + inc for inc in includes] +
                             ["-I external/llvm22/include"])
    for out, flags in outs.items():
        native.genrule(
            name = "%s_%s_gen" % (name, out.replace("/", "_").replace(".", "_")),
            srcs = [td_file] + td_srcs + ["@llvm22//:mlir_td_files"],
            outs = [out],
            tools = ["@llvm22//:bin/mlir-tblgen"],
            cmd = "$(location @llvm22//:bin/mlir-tblgen) %s %s $(location %s) -o $@" % (
                " ".join(flags),
                include_flags,
                td_file,
            ),
        )
    native.cc_library(
        name = name,
        textual_hdrs = outs.keys(),
        deps = deps,
    )
