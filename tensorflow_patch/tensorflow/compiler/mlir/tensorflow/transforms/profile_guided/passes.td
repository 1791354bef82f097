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
      `fused_into = "s/n"`;
    * `n/unary_ops_composition` (Grappler's UnaryOpsComposition) resolves to
      `n`, and the single-use composable unary ops feeding it get
      `fused_into = "n"`; `n/_<k>` and `n/ctrl/_<k>` (the graph partitioner's
      sends and receives), `GroupCrossDeviceControlEdges_<k>/n` (Grappler's
      dependency optimizer), `n-<port>-CastTo<T>-<id>-AutoMixedPrecision`,
      `n-...-LayoutOptimizer`, `Recomputed/n`, `ConstantFolding/n-<suffix>` and
      `LoopOptimizer/n` resolve to `n`; an entry function's argument name
      (`tf.entry_function` inputs) resolves to the ops that read it, split
      equally. docs/attribution_rules.md lists every rule and its source.
    * a name no op carries as its own was merged by the IR pipeline (an
      export with TensorFlow's default `tf-standard-pipeline`): a rewrite
      pattern fused its location into the op that replaced it (`sub` and
      `Square` into a SquaredDifference), or CSE kept one of identical ops
      and dropped the others' locations. The entry lands on the op whose
      location lists the name, else on the op(s) of the same function whose
      name equals it up to TF's `_<k>` uniquifiers (failing that, up to
      leading scopes, down to `scope/node`) and whose type is the kernel's
      (`adam/Pow_3` -> `adam/Pow`, `adam/Add_8/ReadVariableOp` ->
      `Add/ReadVariableOp`). With several such ops the
      survivor is ambiguous and the time is split equally between them in
      exact integer parts. `merged` counts the names merged into an op;
    * a name found only on a `tf.Const` for another kernel was folded, and
      an unmatched Identity/IdentityN/NoOp/Snapshot/StopGradient was removed
      by canonicalization: both are listed as removed by the IR pipeline,
      with their time, not attributed.
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
    op's largest entry). XLA names the instructions of a compiled while
    body/cond, branch or callee after the function's own node (`while/add`,
    no `while/body/_1/` prefix): an XLA entry no entry-function op carries
    resolves in the one function body the entry functions reach that has it
    (rule `xla_function_body`); when several have it, it stays unresolved
    with a reason naming them.

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
    With `carry-in-location`, each record (plus `source`, the op's node name)
    is also stored in the op's location as FusedLoc metadata,
    `loc(fused<{profiler_data = {...}}>[original])`, so that lowerings that
    keep locations keep the profile (`tf-profile-materialize-annotations`
    reads it back on the lowered ops). With `attribution-output`, a
    `tfpgo.attribution` document (docs/formats.md) lists how every entry
    matched (exact, resolved, merged), and the removed and unresolved
    entries with their reasons and times.
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
    Option<"carryInLocation", "carry-in-location", "bool",
           /*default=*/"false",
           "Also store each record in the op's location (FusedLoc "
           "metadata), where lowerings keep it">,
    Option<"attributionOutput", "attribution-output", "std::string",
           /*default=*/"\"\"",
           "Write the tfpgo.attribution document here (empty: do not)">,
  ];
  let statistics = [
    Statistic<"numEntries", "num-entries", "Profile entries read">,
    Statistic<"numResolvedEntries", "num-resolved-entries",
              "Profile entries resolved to an op">,
    Statistic<"numMergedEntries", "num-merged-entries",
              "Profile entries merged into another op by the IR pipeline">,
    Statistic<"numRemovedEntries", "num-removed-entries",
              "Profile entries whose op the IR pipeline removed">,
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
    `share` is at least `min-share`. When some op carries device time
    (`device_self`, a GPU trace), ops are ranked by `device_self` and filtered
    by `device_share` instead: the host only launched that work. Earlier ranks
    are cleared first. Fused ops and ops without `profiler_data` are never hot.

    ```mlir
    %0 = "tf.MatMul"(...) {profiler_data = {..., share = 8.000000e-01 : f64, ...}}
    ```

    becomes, with `top-k=1`,

    ```mlir
    %0 = "tf.MatMul"(...) {profiler_data = {...}, profiler_hot = 1 : i64}
    ```
  }];
  let options = [
    // Kept equal to tfpgo.HOT_OPS (python/tfpgo/__init__.py); test_annotate
    // checks that the two agree.
    Option<"topK", "top-k", "unsigned", /*default=*/"5",
           "Mark at most this many ops (0: no limit)">,
    Option<"minShare", "min-share", "double", /*default=*/"0.0",
           "Mark only ops whose share of self time is at least this">,
  ];
  let statistics = [
    Statistic<"numHotOps", "num-hot-ops", "Ops marked hot">,
  ];
}

def ProfileBranchWeightsPass
    : Pass<"tf-profile-branch-weights", "ModuleOp"> {
  let summary = "Turn measured execution counts into branch counts, loop "
                "trip counts and branch weights";
  let description = [{
    A profile-guided transformation: it reads the `count` of the
    `profiler_data` records inside branches and loop bodies and decides how
    often each branch of a control-flow op was taken.

    * `tf.If`, `tf.Case` (branch functions) and `tf.IfRegion`,
      `tf.CaseRegion` (regions) get `profiler_branch_counts = array<i64:
      ...>`, one count per branch in the op's order (then, else).
    * `tf.While` (cond/body functions), `tf.WhileRegion`, and the loops
      lowerings make of them (`stablehlo.while`, `scf.while`: cond region,
      then body region, their ops carrying their tf ops' records) get
      `profiler_branch_counts = array<i64: iterations, exits>` (the cond's
      two outcomes, like the weights of a loop latch) and
      `profiler_trip_count`, the mean iterations per execution (f64).
    * Upstream branch terminators (`WeightedBranchOpInterface`: `cf.cond_br`,
      `llvm.cond_br`, `llvm.switch`) get their `branch_weights`, one per
      successor, which MLIR's LLVM translation emits as `!prof`
      branch_weights metadata. Counts above 2^31-1 are scaled down keeping
      their ratios; a taken successor never weighs 0.

    How a count is found: a branch (a function body, a region, a successor
    block) ran as often as the most executed profiled op directly in it, or
    in a wrapper that runs once with it (tf_executor.graph/island,
    tf_device.cluster/launch); ops of other nested regions run a different
    number of times. Records that merged several runtime names are used
    only if no other op was profiled. A control-flow op TensorFlow ran as a kernel has its own
    count (for a terminator: its block's count); one TensorFlow lowered to
    Switch/Merge or Enter/Exit (the default in tf.function) has none. A
    branch without profiled ops ran as often as the op's own count leaves
    over if it is the only such branch. Without that count it never ran if
    it holds a tf op the profile shows whenever it runs (any kernel but
    Const, Identity, IdentityN, NoOp, Snapshot, StopGradient), and is
    unknown otherwise (a block holding only a `return` may have run
    unseen): then nothing is decided. A loop ran `cond - body` times when
    the loop op has no count: its cond runs once per iteration plus once per
    exit. A function that other ops also reference, or a block other edges
    also reach, holds their executions too: its count is only ever derived.

    Nothing is decided when no op of the branches was profiled, when the
    decision was made fewer than `min-count` times, or when a count cannot
    be derived; a profile that contradicts the op (branches that ran more
    often than the op, a cond that ran fewer times than the body) gets a
    warning and no counts. Counts set by an earlier run are cleared first;
    `branch_weights` are only ever overwritten. With `remarks`, every
    decision, taken or not, is explained by a remark at the op.

    With the GRU of tests/data/tf2_21/gru (3 steps, 5 time steps):

    ```mlir
    %0:9 = "tf.While"(...) <{body = @while_body_2860, cond = @while_cond_2850, ...}>
    func.func private @while_body_2860(...) {
      %1 = "tf.AddV2"(...) {profiler_data = {count = 15 : i64, ...}}
    func.func private @while_cond_2850(...) {
      %1 = "tf.Less"(...) {profiler_data = {count = 18 : i64, ...}}
    ```

    becomes

    ```mlir
    %0:9 = "tf.While"(...) <{...}> {..., profiler_branch_counts =
        array<i64: 15, 3>, profiler_trip_count = 5.000000e+00 : f64}
    ```

    and `cf.cond_br %c, ^bb1, ^bb2` whose successors' ops ran 3 and 1 times
    becomes `cf.cond_br %c weights([3, 1]), ^bb1, ^bb2`.
  }];
  let options = [
    Option<"minCount", "min-count", "unsigned", /*default=*/"1",
           "Decide only for ops whose branch was chosen at least this many "
           "times">,
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Explain every decision, taken or not, with a remark at the op">,
  ];
  let statistics = [
    Statistic<"numWeightedOps", "num-weighted-ops",
              "Ops given branch counts or branch weights">,
    Statistic<"numLoops", "num-loops", "Loops given a trip count">,
    Statistic<"numMissed", "num-missed",
              "Control-flow ops left without counts">,
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

def ProfileMaterializeAnnotationsPass
    : Pass<"tf-profile-materialize-annotations", "ModuleOp"> {
  let summary = "Re-attach profiler_data to the ops of any dialect from "
                "their locations";
  let description = [{
    After a lowering (tf -> StableHLO -> linalg, TOSA, ...), the lowered ops
    have lost the `profiler_data` attribute but keep their source op's
    location. This pass gives each op its source's measurements again, in
    any dialect: ops implementing ProfilerAnnotationsInterface (tf ops, and
    the upstream dialects' ops through the external models) and
    unregistered ops (StableHLO, IREE's `util` without their dialects).

    A source is found in the op's location: a record carried there by
    `tf-annotate-operations-profile carry-in-location=true` (its `source`
    field names the tf op), or else, with `path-to-profile`, the location's
    node name looked up in `op_profile.json` (exact runtime names; control
    flow and call prefixes are resolved only at the tf level; entries of one
    name are one record, their counts and times summed). Ops nested in an
    annotated op (the body of a `linalg.generic`) add their sources to it,
    but not those of a loop's or a branch's regions (RegionBranchOpInterface:
    an `scf.for` carries its counter's and compare's records, its body ops
    their own); terminators are skipped.

    When one source op became N ops, each carries the source's record with
    `source = "<node>"`, `fanout = N` and `source_self` (the source's whole
    self time), and the source's time is charged once: split in exact integer
    parts over the carriers that do its work (reductions such as a matmul or
    convolution, else other computing ops, else data movement such as a fill
    or pad, else constants and empty tensors; docs/formats.md,
    "Conservation"), the others charged 0. Where a lowering fused the
    locations of several sources (or a region holds ops of other sources, as
    after linalg elementwise fusion), the first is the op's source and the
    others are listed in `fused_sources` with their charged parts in
    `fused_parts`; `self` is the sum of the op's parts, so the level's ops sum
    to the time of the sources that reached it. `share` is `self` over that
    sum.

    ```mlir
    %0 = "linalg.matmul"(...) loc(fused<{profiler_data = {count = 3 : i64,
        ..., source = "dense/MatMul", ...}}>["dense/MatMul"])
    ```

    becomes

    ```mlir
    %0 = "linalg.matmul"(...) {profiler_data = {count = 3 : i64, ...,
        fanout = 2 : i64, ..., self = 3000 : i64, ..., source = "dense/MatMul",
        source_self = 3000 : i64, ...}} loc(...)
    ```

    With `summary-output`, a `tfpgo.level_profile` document
    (docs/formats.md) lists every source found with its self time and ops.
  }];
  let options = [
    Option<"pathToProfile", "path-to-profile", "std::string",
           /*default=*/"\"\"",
           "op_profile.json to match node names against where no record "
           "is carried (empty: carried records only)">,
    Option<"summaryOutput", "summary-output", "std::string",
           /*default=*/"\"\"",
           "Write the tfpgo.level_profile document here (empty: do not)">,
  ];
  let statistics = [
    Statistic<"numAnnotatedOps", "num-annotated-ops",
              "Ops given a source's measurements">,
    Statistic<"numSources", "num-sources", "Distinct sources found">,
    Statistic<"numFusedSourceOps", "num-fused-source-ops",
              "Ops that hold more than one source">,
  ];
}

def ProfileGuidedConvToDotPass
    : Pass<"tf-profile-guided-conv-to-dot", "ModuleOp"> {
  let summary = "Rewrite hot convolutions that the compiler runs far "
                "slower than TensorFlow as dot_generals";
  let description = [{
    The first profile-guided pass that changes the program. A 1x1
    `stablehlo.convolution` (NHWC input, HWIO kernel, no padding, one
    feature and batch group) is a matrix product over the channels of the
    pixels its strides keep. Fused with a batch norm and a residual add,
    IREE may compile a strided one as a generic reduction over the whole
    input (ResNet50's projection shortcuts: 30x TensorFlow's time); written
    as `stablehlo.slice` (the kept pixels, only for strides > 1), a reshape
    of the kernel to CxK and `stablehlo.dot_general` contracting the
    channels, it compiles as a matmul.

    The pass rewrites a convolution only where the profile says it pays:
    its `profiler_data` (attribute or carried in its location) has a
    `share` of at least `min-share`, and the dispatches of the compiled
    program that ran its source (`target-profile`, an
    `iree_profile.json`: docs/formats.md) took, one invocation of each,
    at least `min-slowdown` times one TensorFlow execution of the op
    (its source's self time over its count). Cold convolutions, and
    those near their TensorFlow time, are left alone; so are hot, slow
    ones of another form, with the reason in the report. The new ops keep
    the convolution's location (its profile travels on), and the
    dot_general takes its `profiler_data` and `profiler_hot`.

    ```mlir
    %0 = "stablehlo.convolution"(%x, %w) <{..., window_strides =
        array<i64: 2, 2>}> : (tensor<8x14x14x1024xf32>,
        tensor<1x1x1024x2048xf32>) -> tensor<8x7x7x2048xf32>
    ```

    becomes, when its share is 3.7% and its dispatch took 30x TensorFlow's
    time,

    ```mlir
    %s = "stablehlo.slice"(%x) <{limit_indices = array<i64: 8, 14, 14,
        1024>, start_indices = array<i64: 0, 0, 0, 0>, strides =
        array<i64: 1, 2, 2, 1>}> : (...) -> tensor<8x7x7x1024xf32>
    %k = "stablehlo.reshape"(%w) : (...) -> tensor<1024x2048xf32>
    %0 = "stablehlo.dot_general"(%s, %k) <{dot_dimension_numbers =
        #stablehlo.dot<lhs_contracting_dimensions = [3],
        rhs_contracting_dimensions = [0]>}> : (...) -> tensor<8x7x7x2048xf32>
    ```

    With `kernels=kxk` the pass rewrites the other windows instead (any
    KhxKw, strides and zero padding, no dilation): the convolution is the
    sum over its taps (i, j) of a 1x1 convolution of the input shifted by
    (i, j). It becomes a `stablehlo.pad` (when padded), and per tap a
    strided `stablehlo.slice` of the padded input, the tap's CxK matrix
    and a `dot_general`, summed with `stablehlo.add`; the last add takes
    the annotations. IREE 3.13 compiles a deep 3x3 convolution with few
    pixels (ResNet's last stages, 512 channels at 7x7 or 4x4) as a direct
    convolution up to 2x slower than the nine matmuls; with many pixels
    and few channels the direct form wins, which `min-slowdown` against
    TensorFlow's time tells apart.

    With `kernels=tiles` it rewrites the convolutions whose windows tile
    the input, in any layout (unpadded, no input dilation or groups):
    along each spatial dimension every input position is read by one tap
    of one output, either a patch (stride = window, a ViT's patch
    embedding) or taps as far apart as there are outputs (kernel dilation
    = outputs: the patch embedding's filter gradient). Such a convolution
    is one matrix product: the input is reshaped so that each spatial
    dimension is two (outputs and taps, in the order the tiling reads
    them), one `dot_general` contracts its channels and both tap
    dimensions with the kernel's, and a `stablehlo.transpose` puts the
    product into the output layout where it is not already in it. IREE
    3.13 compiles the filter gradient of a ViT's 8x8 patch embedding as a
    convolution at 2% of this machine's limit (1.2 of its step's 4.2 ms).
    `kernels=kxk` leaves these to `kernels=tiles`. The kinds are separate
    runs so that each is measured on its own.

    The comparison is per execution because IREE runs identical
    convolutions as one executable, invoked once per site, whose sources
    name only the first site's ops.

    `sources` narrows the rewrite to the convolutions named (`--tune`
    passes the ones whose form won when timed alone both ways).

    With `report-output`, a `tfpgo.rewrites` document (docs/formats.md)
    lists each rewrite and each hot, slow convolution declined, with its
    share, TensorFlow and compiled time and ratio; with `remarks`, each
    decision is also a remark on its op.
  }];
  let options = [
    Option<"targetProfile", "target-profile", "std::string",
           /*default=*/"\"\"",
           "iree_profile.json of the compiled program (required)">,
    Option<"minShare", "min-share", "double", /*default=*/"0.01",
           "Rewrite only ops with at least this share of the profiled time">,
    Option<"minSlowdown", "min-slowdown", "double", /*default=*/"2.0",
           "Rewrite only ops whose dispatches took, one invocation each, at "
           "least this many times one TensorFlow execution of the op">,
    Option<"kernels", "kernels", "std::string", /*default=*/"\"1x1\"",
           "Which convolutions to rewrite: 1x1 (as (slice +) dot_general), "
           "kxk (the other windows, as shifted dot_generals summed) or "
           "tiles (windows that tile the input, as reshape + dot_general)">,
    ListOption<"sources", "sources", "std::string",
               "Rewrite only the convolutions of these sources (tf node "
               "names; none: every one the profile selects)">,
    Option<"reportOutput", "report-output", "std::string",
           /*default=*/"\"\"",
           "Write the tfpgo.rewrites document here (empty: do not)">,
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Explain each decision with a remark">,
  ];
  let statistics = [
    Statistic<"numRewritten", "num-rewritten",
              "Convolutions rewritten as dot_generals">,
    Statistic<"numCold", "num-cold", "Convolutions below min-share">,
    Statistic<"numNearBound", "num-near-bound",
              "Hot convolutions within min-slowdown of TensorFlow's time">,
    Statistic<"numUnmatched", "num-unmatched",
              "Hot, slow convolutions of a form the pass does not rewrite">,
    Statistic<"numUnlisted", "num-unlisted",
              "Hot, slow convolutions left out by sources=">,
  ];
}

def ProfileGuidedXlaRegionsPass
    : Pass<"tf-profile-guided-xla-regions", "ModuleOp"> {
  let summary = "Mark the measured-hot subgraphs XLA fuses well for XLA "
                "compilation, leaving heavy oneDNN kernels to TensorFlow";
  let description = [{
    On a CPU, oneDNN's matmuls and convolutions beat XLA's, and so do
    TensorFlow's reduction kernels beat XLA's CPU reduction fusions, while
    XLA's fusion of elementwise chains beats TensorFlow's one kernel per op.
    This pass reads `profiler_data` and chooses XLA regions: connected
    subgraphs of the ops XLA fuses well (elementwise and data movement),
    without the heavy kernels (MatMul, BatchMatMul*,
    Einsum, Conv*, _FusedConv2D, pooling and their gradients) unless
    `include-heavy`, without reductions, softmax and batch normalization
    unless `with-reductions` (the choice for XLA:GPU, whose reduction
    emitters fuse well), without variable reads and optimizer updates
    (ReadVariableOp, ResourceApply*, Assign*VariableOp) unless
    `with-variables`, nor an op whose TensorFlow
    kernel fused a heavy op (the `fused_into` target of a MatMul, the
    remapper's _FusedMatMul).

    Regions follow the rules of TensorFlow's XLA clustering
    (tensorflow/compiler/jit/mark_for_compilation_pass.cc; each rule is a
    function of xla_clustering_rules.h citing its source): only ops with an
    XLA kernel (an allow-list from mark_for_compilation's FUSIBLE table and
    tf2xla/kernels/), no functional control flow or calls, no stateful
    random ops, no string or variant tensors; two resource ops joined by a
    path other than Read->* or *->Write never share a region
    (resource_operation_safety_analysis.cc); and merging two regions must
    not create a cycle through an op outside them (mark_for_compilation's
    GraphCycles). Regions grow inside one function body block, along data
    edges and the program order of ops on the same resource (the control
    edges TensorFlow's automatic control dependencies add); a Const whose
    users all sit in one region joins it.

    A region is chosen if it holds at least `min-ops` ops that TensorFlow ran
    as kernels of their own and its measured self time is at least
    `min-share` of the module's profiled time. Chosen regions are ranked by
    self time (0 the hottest) and each op in them gets TensorFlow's jit
    scope attributes, which mark_for_compilation honours with auto-jit off:

    ```mlir
    %0 = "tf.Sub"(%x, %y) {profiler_data = {..., self = 300 : i64, ...}}
    %1 = "tf.Square"(%0) {profiler_data = {..., self = 200 : i64, ...}}
    ```

    becomes

    ```mlir
    %0 = "tf.Sub"(%x, %y) {_XlaCompile = true,
        _XlaScope = "tfpgo_xla_region_0", profiler_data = {...}}
    %1 = "tf.Square"(%0) {_XlaCompile = true,
        _XlaScope = "tfpgo_xla_region_0", profiler_data = {...}}
    ```

    Marks of an earlier run (scopes named `tfpgo_xla_region_*`) are cleared
    first. With `report-output`, a `tfpgo.xla_regions` document
    (docs/formats.md) lists each region's ops, node names, times and reason,
    and every hot op (share >= `min-share`) left out, with why; with
    `remarks`, each region and each declined hot op is a remark.
  }];
  let options = [
    Option<"minShare", "min-share", "double", /*default=*/"0.01",
           "Choose only regions with at least this share of the profiled "
           "time">,
    // Two: one kernel saves no launch and no intermediate buffer, and the
    // consumer measures every region anyway (docs/formats.md).
    Option<"minOps", "min-ops", "unsigned", /*default=*/"2",
           "Choose only regions holding at least this many ops that "
           "TensorFlow ran as kernels of their own">,
    Option<"includeHeavy", "include-heavy", "bool", /*default=*/"false",
           "Let heavy oneDNN kernels (matmul, convolution, pooling) join "
           "regions">,
    // Off: on XLA's CPU backend a reduction fused with its producers ran
    // 1.2-4.2x slower than TensorFlow's kernels (bench/bench_xla_cpu_fusion.py).
    Option<"withReductions", "with-reductions", "bool", /*default=*/"false",
           "Let reductions, softmax and batch normalization (and their "
           "gradients) join regions">,
    // Off: re-profiled, the region of the SGD updates lost on each of three
    // training steps (xla_clustering_rules.cc, VariableAccessReason).
    Option<"withVariables", "with-variables", "bool", /*default=*/"false",
           "Let variable reads and optimizer updates (ReadVariableOp, "
           "Assign*VariableOp, ResourceApply*) join regions">,
    Option<"reportOutput", "report-output", "std::string",
           /*default=*/"\"\"",
           "Write the tfpgo.xla_regions document here (empty: do not)">,
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Explain each region and each declined hot op with a remark">,
  ];
  let statistics = [
    Statistic<"numRegions", "num-regions", "XLA regions chosen">,
    Statistic<"numMarkedOps", "num-marked-ops", "Ops marked for XLA">,
    Statistic<"numDroppedRegions", "num-dropped-regions",
              "Regions under min-ops or min-share">,
    Statistic<"numDeclinedHotOps", "num-declined-hot-ops",
              "Hot ops left to TensorFlow">,
    Statistic<"numCycleRejections", "num-cycle-rejections",
              "Merges refused because they would form a cycle">,
    Statistic<"numResourceRejections", "num-resource-rejections",
              "Merges refused by the resource variable rule">,
  ];
}

def StripProfileAnnotationsPass
    : Pass<"tf-strip-profile-annotations", "ModuleOp"> {
  let summary = "Remove the profile-guided attributes from every op";
  let description = [{
    Removes every attribute the profile-guided passes add (`profiler_data`,
    `profiler_hot`, `profiler_branch_counts`, `profiler_trip_count`), and a
    record carried in the location of an op or of its regions' arguments
    (the node names stay): before exporting back to a GraphDef, which cannot
    carry a DictionaryAttr, and before IREE compiles a program, whose bytes
    must not depend on the profile's measurements. The `branch_weights` of
    upstream branch ops are kept: they are the transformation's result, not
    an annotation.

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
