//===- passes.td - Profile-guided passes for the tf dialect -*- tablegen -*-===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#ifndef TF_PROFILE_GUIDED_PASSES
#define TF_PROFILE_GUIDED_PASSES

include "mlir/Pass/PassBase.td"

def AnnotateOperationsProfilePass
    : Pass<"tf-annotate-operations-profile", "ModuleOp"> {
  let summary = "Attach measured runtime (profiler_data) to the ops that ran";
  let description = [{
    Reads an `op_profile.json` (format `tfpgo.op_profile`, see
    docs/formats.md) and sets `profiler_data` on every op that executed.

    Join key: the TF node name in the op's location, a NameLoc possibly
    nested in FusedLoc/CallSiteLoc (`loc(fused["MatMul:", callsite(
    "dense/MatMul"(...) at ...)])` with `show_debug_info`). The leading
    `"<OpType>:"` NameLoc is not a node name. Inside function bodies the name
    is `node@function`; the `@function` part is ignored because the importer
    renames functions (`body_136` becomes `@body_1360`).

    Runtime names (TF 2.21, CPU) are resolved from the public functions:
    * `n` is the op named `n` in the function;
    * `w/body/_<k>/n`, `w/cond/_<k>/n` resolve `n` in the body/cond function
      of the While op `w`; `c/then/_<k>/n`, `c/else/_<k>/n` in the branches
      of the If op `c`; `c/branch<i>/_<k>/n` in branch i of a Case op;
    * `p/n` resolves `n` in the callee of the call op `p` (PartitionedCall,
      StatefulPartitionedCall, func.call: the runtime inlines callees);
    * region control flow (WhileRegion/IfRegion/CaseRegion) resolves the
      inner name in the enclosing function, where the region ops live;
    * a node Grappler created while rewriting `s/n`
      (`s/ArithmeticOptimizer/AddOpsRewrite_n`, `..._Leaf_<j>_n`) resolves
      to `s/n`, the node it replaces; the inner adds of the rewritten add
      tree (single-use Add/AddV2/AddN feeding `s/n` that did not run) get
      `fused_into = "s/n"`.
    Resolution recurses, so nested loops and calls resolve too. Several
    runtime names landing on one op (loop iterations, call sites) are merged
    exactly: counts, totals and self times add, min/max/ts combine, p50/p95
    are recomputed from the merged `durations_ps`.

    Fused kernels: Grappler's remapper runs e.g. MatMul+BiasAdd+Relu as one
    `_MklNativeFusedMatMul` (or `_FusedMatMul`, `_FusedConv2D`, ...) named
    after the last node. The kernel's time lands on that op; the producers it
    swallowed (found by walking operands back to the kernel's base op type)
    get `profiler_data = {fused_into = "<node>"}`. oneDNN kernels that do
    more than their node are handled alike: `..PadWith<Kernel>`
    (`_MklNativePadWithFusedConv2D`) also swallows the Pad in front, and in
    training steps `_MklNativeConv2DBackpropFilterWithBias` (named after the
    Conv2DBackpropFilter) also computes the BiasAddGrad that reads the same
    output gradient. Nothing is counted twice.

    XLA-compiled steps: the trace reader has already split each HLO
    instruction's time onto the TF nodes it came from (op_profile.json
    version 2); those entries resolve like any other, and their op also gets
    `xla_module` and, when a fusion did its work, `xla_fusion` (from the
    op's largest entry).

    Example, with `dense/Relu` executed as `_MklNativeFusedMatMul`:

    ```mlir
    %0 = "tf.MatMul"(%x, %w) : ... loc("dense/MatMul")
    %1 = "tf.BiasAdd"(%0, %b) : ... loc("dense/BiasAdd")
    %2 = "tf.Relu"(%1) : ... loc("dense/Relu")
    ```

    becomes

    ```mlir
    %0 = "tf.MatMul"(%x, %w) {profiler_data = {fused_into = "dense/Relu"}}
    %1 = "tf.BiasAdd"(%0, %b) {profiler_data = {fused_into = "dense/Relu"}}
    %2 = "tf.Relu"(%1) {profiler_data = {count = 3 : i64, dur = 9000 : i64,
        max = 12000 : i64, min = 7000 : i64, p50 = 8000 : i64,
        p95 = 12000 : i64, self = 27000 : i64, share = 1.000000e+00 : f64,
        total = 27000 : i64, ts = 500 : i64}}
    ```

    `share` (self over all attributed self time) keeps 6 significant
    digits; the i64 fields are exact.

    Ops implementing ProfilerAnnotationsInterface are annotated through it;
    unregistered `tf.*` ops through the same attribute helpers. Earlier
    annotations are replaced. A missing or malformed profile fails the pass.
    With `report-unresolved`, every unmatched entry and a final summary
    (`annotated N ops and F fused ops from E profile entries; S of T ps self
    time attributed`) are emitted as remarks; pass statistics carry the same
    counts where LLVM statistics are enabled.
  }];
  let options = [
    Option<"pathToProfile", "path-to-profile", "std::string",
           /*default=*/"\"\"",
           "Path of the op_profile.json written by the trace reader">,
    Option<"reportUnresolved", "report-unresolved", "bool",
           /*default=*/"false",
           "Remark on every profile entry that matches no op, and a "
           "summary of attributed self time">,
  ];
  let statistics = [
    Statistic<"numEntries", "num-entries", "Profile entries read">,
    Statistic<"numResolvedEntries", "num-resolved-entries",
              "Profile entries resolved to an op">,
    Statistic<"numUnresolvedEntries", "num-unresolved-entries",
              "Profile entries that matched no annotatable op">,
    Statistic<"numAnnotatedOps", "num-annotated-ops",
              "Ops annotated with measured data">,
    Statistic<"numFusedOps", "num-fused-ops",
              "Ops marked as fused into another op's kernel">,
    Statistic<"attributedSelfPs", "attributed-self-ps",
              "Self time (ps) of resolved entries">,
    Statistic<"unattributedSelfPs", "unattributed-self-ps",
              "Self time (ps) of unresolved entries">,
  ];
}

def ProfileMarkHotspotsPass
    : Pass<"tf-profile-mark-hotspots", "ModuleOp"> {
  let summary = "Rank the ops with the most self time as hotspots";
  let description = [{
    Ranks annotated ops by `self` (descending; ties keep IR order) and sets
    `profiler_hot = <rank> : i64` (1 = hottest) on the first `top-k` whose
    `share` is at least `min-share`. Earlier ranks are cleared first. Fused
    ops and ops without `profiler_data` are never hot.

    ```mlir
    %0 = "tf.MatMul"(...) {profiler_data = {..., share = 8.000000e-01 : f64, ...}}
    ```

    becomes, with `top-k=1`,

    ```mlir
    %0 = "tf.MatMul"(...) {profiler_data = {...}, profiler_hot = 1 : i64}
    ```
  }];
  let options = [
    Option<"topK", "top-k", "unsigned", /*default=*/"10",
           "Mark at most this many ops (0: no limit)">,
    Option<"minShare", "min-share", "double", /*default=*/"0.0",
           "Mark only ops whose share of self time is at least this">,
  ];
  let statistics = [
    Statistic<"numHotOps", "num-hot-ops", "Ops marked hot">,
  ];
}

def ProfileExportOpGraphPass
    : Pass<"tf-profile-export-op-graph", "ModuleOp"> {
  let summary = "Write the annotated op graph as op_graph.json";
  let description = [{
    Writes every op inside a function (format `tfpgo.op_graph`, version 1,
    see docs/formats.md): its id (pre-order walk), op name, TF node name,
    function, enclosing op, profiler_data, fused_into and hot rank; and the
    edges: `data` (SSA value, producer to user), `control`
    (`!tf_executor.control` values) and `call` (an op referencing a function
    symbol, to the first op of that function; `callee` and `attr` name the
    function and the attribute). The IR is not changed. The file is written
    atomically; an unwritable path fails the pass.
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"\"",
           "Path of the op_graph.json to write ('-' for stdout)">,
  ];
  let statistics = [
    Statistic<"numNodes", "num-nodes", "Ops written">,
    Statistic<"numEdges", "num-edges", "Edges written">,
  ];
}

def StripProfileAnnotationsPass
    : Pass<"tf-strip-profile-annotations", "ModuleOp"> {
  let summary = "Remove profiler_data and profiler_hot from every op";
  let description = [{
    Removes every attribute the profile-guided passes add, e.g. before
    exporting back to a GraphDef, which cannot carry a DictionaryAttr.

    ```mlir
    %0 = "tf.Relu"(%x) {profiler_data = {...}, profiler_hot = 1 : i64}
    ```

    becomes

    ```mlir
    %0 = "tf.Relu"(%x)
    ```
  }];
  let statistics = [
    Statistic<"numStrippedOps", "num-stripped-ops",
              "Ops whose annotations were removed">,
  ];
}

#endif // TF_PROFILE_GUIDED_PASSES
