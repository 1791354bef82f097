// RUN: %tfpgo_opt --allow-unregistered-dialect -split-input-file -verify-diagnostics \
// RUN:   --tf-profile-branch-weights="remarks=true" %s | FileCheck %s
// RUN: %tfpgo_opt --allow-unregistered-dialect -split-input-file \
// RUN:   --tf-profile-branch-weights="min-count=4" %s 2>/dev/null | FileCheck %s --check-prefix=MIN
// RUN: %tfpgo_opt --allow-unregistered-dialect -split-input-file \
// RUN:   --tf-profile-branch-weights %s 2>&1 >/dev/null | FileCheck %s --check-prefix=QUIET

// Without `remarks`, only the warnings about inconsistent or malformed
// control flow are printed.
// QUIET-NOT: remark:
// QUIET: warning: inconsistent profile for tf.If: the op ran 2 times
// QUIET-NOT: remark:
// QUIET: warning: tf.If names branch function @nowhere
// QUIET-NOT: remark:

// A branch function without profiled ops, though it holds a kernel (tf.Tanh)
// the profile would show, never ran: the counts of tf.cond in
// tests/data/tf2_21/cond. Stale counts of an earlier run are replaced.
// CHECK-LABEL: func.func @if_functional
// CHECK: "tf.If"{{.*}}profiler_branch_counts = array<i64: 3, 0>
// CHECK-NOT: profiler_trip_count
// MIN-LABEL: func.func @if_functional
// MIN: "tf.If"
// MIN-NOT: profiler_branch_counts
// MIN: return
#n3 = {count = 3 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
func.func @if_functional(%p: tensor<i1>, %x: tensor<f32>) -> tensor<f32> {
  // expected-remark @below {{profile-guided: branch counts [3, 0] for tf.If: then @then ran 3 times (most executions of its profiled ops); else @else ran 0 times (not profiled, though its tf.Tanh would have been)}}
  %0 = "tf.If"(%p, %x) <{else_branch = @else, then_branch = @then, is_stateless = true}> {profiler_branch_counts = array<i64: 9, 9>, profiler_trip_count = 1.0 : f64} : (tensor<i1>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func private @then(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.MatMul"(%x, %x) {profiler_data = #n3} : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %1 = "tf.Relu"(%0) {profiler_data = #n3} : (tensor<f32>) -> tensor<f32>
  return %1 : tensor<f32>
}
func.func private @else(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.Tanh"(%x) : (tensor<f32>) -> tensor<f32>
  %1 = "tf.Identity"(%0) : (tensor<f32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// An If TensorFlow ran as a kernel has a count of its own: the branch without
// profiled ops (only an Identity, which the profile may not show) took the
// executions the other branch leaves.
// CHECK-LABEL: func.func @if_own_count
// CHECK: "tf.If"{{.*}}profiler_branch_counts = array<i64: 3, 2>
// MIN-LABEL: func.func @if_own_count
// MIN: "tf.If"{{.*}}profiler_branch_counts = array<i64: 3, 2>
#n3 = {count = 3 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
#n5 = {count = 5 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
func.func @if_own_count(%p: tensor<i1>, %x: tensor<f32>) -> tensor<f32> {
  // expected-remark @below {{branch counts [3, 2] for tf.If: then @then ran 3 times (most executions of its profiled ops); else @else ran 2 times (the op ran 5 times, less the other targets)}}
  %0 = "tf.If"(%p, %x) <{else_branch = @else, then_branch = @then, is_stateless = true}> {profiler_data = #n5} : (tensor<i1>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func private @then(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.Relu"(%x) {profiler_data = #n3} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func private @else(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.Identity"(%x) : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Branches that ran more often than their If did contradict it.
// CHECK-LABEL: func.func @if_inconsistent
// CHECK-NOT: profiler_branch_counts
// CHECK: return
#n2 = {count = 2 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
#n3 = {count = 3 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
func.func @if_inconsistent(%p: tensor<i1>, %x: tensor<f32>) -> tensor<f32> {
  // expected-warning @below {{inconsistent profile for tf.If: the op ran 2 times but its branches 3 times in total; no branch counts set}}
  %0 = "tf.If"(%p, %x) <{else_branch = @else, then_branch = @then, is_stateless = true}> {profiler_data = #n2} : (tensor<i1>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func private @then(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.Relu"(%x) {profiler_data = #n3} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func private @else(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.Tanh"(%x) : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A Case: one count per branch. A record that merged two runtime names (CSE)
// counts both; the single-name record of the same branch is used. Fused ops
// have no count of their own.
// CHECK-LABEL: func.func @case_functional
// CHECK: "tf.Case"{{.*}}profiler_branch_counts = array<i64: 0, 3, 1>
// MIN-LABEL: func.func @case_functional
// MIN: "tf.Case"{{.*}}profiler_branch_counts = array<i64: 0, 3, 1>
#n1 = {count = 1 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
#n3 = {count = 3 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
#merged6 = {count = 6 : i64, dur = 1 : i64, max = 1 : i64, merged = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
func.func @case_functional(%i: tensor<i32>, %x: tensor<f32>) -> tensor<f32> {
  // expected-remark @below {{branch counts [0, 3, 1] for tf.Case: branch 0 @b0 ran 0 times (not profiled, though its tf.Relu would have been); branch 1 @b1 ran 3 times (most executions of its profiled ops); branch 2 @b2 ran 1 times (most executions of its profiled ops)}}
  %0 = "tf.Case"(%i, %x) <{branches = [@b0, @b1, @b2], is_stateless = true}> : (tensor<i32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func private @b0(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.Relu"(%x) : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func private @b1(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.Tanh"(%x) {profiler_data = #merged6} : (tensor<f32>) -> tensor<f32>
  %1 = "tf.Mul"(%0, %x) {profiler_data = #n3} : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %1 : tensor<f32>
}
func.func private @b2(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.MatMul"(%x, %x) {profiler_data = {fused_into = "b2/Sigmoid"}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %1 = "tf.Sigmoid"(%0) {profiler_data = #n1} : (tensor<f32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// A branch function two ops use holds the executions of both.
// CHECK-LABEL: func.func @shared_branch
// CHECK-NOT: profiler_branch_counts
// CHECK: return
#n3 = {count = 3 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
func.func @shared_branch(%p: tensor<i1>, %x: tensor<f32>) -> tensor<f32> {
  // expected-remark @below {{profile-guided: no branch counts for tf.If: the counts of then @shared are not its own: @shared has 2 uses}}
  %0 = "tf.If"(%p, %x) <{else_branch = @else, then_branch = @shared, is_stateless = true}> : (tensor<i1>, tensor<f32>) -> tensor<f32>
  // expected-remark @below {{profile-guided: no branch counts for tf.If: the counts of then @shared are not its own: @shared has 2 uses}}
  %1 = "tf.If"(%p, %0) <{else_branch = @else2, then_branch = @shared, is_stateless = true}> : (tensor<i1>, tensor<f32>) -> tensor<f32>
  return %1 : tensor<f32>
}
func.func private @shared(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.Relu"(%x) {profiler_data = #n3} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func private @else(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.Tanh"(%x) {profiler_data = #n3} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func private @else2(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.Tanh"(%x) {profiler_data = #n3} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Malformed functional control flow is reported, never a crash.
// CHECK-LABEL: func.func @missing_function
// CHECK-NOT: profiler_branch_counts
// CHECK: return
#n3 = {count = 3 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
func.func @missing_function(%p: tensor<i1>, %i: tensor<i32>, %x: tensor<f32>) -> tensor<f32> {
  // expected-warning @below {{tf.If names branch function @nowhere, which the module does not define; no branch counts set}}
  %0 = "tf.If"(%p, %x) <{else_branch = @else, then_branch = @nowhere, is_stateless = true}> : (tensor<i1>, tensor<f32>) -> tensor<f32>
  // expected-warning @below {{tf.Case has no `branches` array of functions; no branch counts set}}
  %1 = "tf.Case"(%i, %0) <{is_stateless = true}> : (tensor<i32>, tensor<f32>) -> tensor<f32>
  // expected-warning @below {{tf.While names no body function; no branch counts set}}
  %2 = "tf.While"(%1) <{cond = @else, is_stateless = true}> : (tensor<f32>) -> tensor<f32>
  return %2 : tensor<f32>
}
func.func private @else(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.Tanh"(%x) {profiler_data = #n3} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A While lowered to Enter/Exit has no count of its own: the cond ran once
// per iteration plus once per execution (the GRU of tests/data/tf2_21/gru:
// 3 steps of 5 time steps).
// CHECK-LABEL: func.func @while_functional
// CHECK: "tf.While"{{.*}}profiler_branch_counts = array<i64: 15, 3>, profiler_trip_count = 5.000000e+00 : f64
// MIN-LABEL: func.func @while_functional
// MIN: "tf.While"{{.*}}profiler_branch_counts = array<i64: 15, 3>, profiler_trip_count = 5.000000e+00 : f64
#n15 = {count = 15 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
#n18 = {count = 18 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
func.func @while_functional(%x: tensor<f32>) -> tensor<f32> {
  // expected-remark @below {{profile-guided: trip count 5.00, branch counts [15, 3] for tf.While: body @body ran 15 times (most executions of its profiled ops); the loop ran 3 times (cond @cond ran 18 times, less the 15 iterations)}}
  %0 = "tf.While"(%x) <{body = @body, cond = @cond, is_stateless = true, parallel_iterations = 10 : i64}> : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func private @cond(%x: tensor<f32>) -> tensor<i1> {
  %0 = "tf.Less"(%x, %x) {profiler_data = #n18} : (tensor<f32>, tensor<f32>) -> tensor<i1>
  return %0 : tensor<i1>
}
func.func private @body(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.AddV2"(%x, %x) {profiler_data = #n15} : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// With a count of its own, a While's cond must have run once per iteration
// plus once per execution; and without one, once more per execution than
// the body.
// CHECK-LABEL: func.func @while_inconsistent
// CHECK-NOT: profiler_branch_counts
// CHECK: return
#n3 = {count = 3 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
#n15 = {count = 15 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
#n17 = {count = 17 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
func.func @while_inconsistent(%x: tensor<f32>) -> tensor<f32> {
  // expected-warning @below {{inconsistent profile for tf.While: cond @cond ran 17 times, but a loop evaluates its cond once per iteration (15) plus once per execution (3); no branch counts set}}
  %0 = "tf.While"(%x) <{body = @body, cond = @cond, is_stateless = true}> {profiler_data = #n3} : (tensor<f32>) -> tensor<f32>
  // expected-warning @below {{inconsistent profile for tf.While: cond @cond2 ran 15 times, body @body2 15 times: a loop evaluates its cond once more per execution than it runs its body; no branch counts set}}
  %1 = "tf.While"(%0) <{body = @body2, cond = @cond2, is_stateless = true}> : (tensor<f32>) -> tensor<f32>
  return %1 : tensor<f32>
}
func.func private @cond(%x: tensor<f32>) -> tensor<i1> {
  %0 = "tf.Less"(%x, %x) {profiler_data = #n17} : (tensor<f32>, tensor<f32>) -> tensor<i1>
  return %0 : tensor<i1>
}
func.func private @body(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.AddV2"(%x, %x) {profiler_data = #n15} : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func private @cond2(%x: tensor<f32>) -> tensor<i1> {
  %0 = "tf.Less"(%x, %x) {profiler_data = #n15} : (tensor<f32>, tensor<f32>) -> tensor<i1>
  return %0 : tensor<i1>
}
func.func private @body2(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.AddV2"(%x, %x) {profiler_data = #n15} : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Region forms count the ops directly in each region: the IfRegion nested in
// the loop body runs once per iteration, and its ops count for it, not for
// the loop.
// CHECK-LABEL: func.func @regions
// CHECK: "tf.WhileRegion"
// CHECK: "tf.IfRegion"
// CHECK: profiler_branch_counts = array<i64: 4, 6>
// CHECK: profiler_branch_counts = array<i64: 10, 2>, profiler_trip_count = 5.000000e+00 : f64
#n4 = {count = 4 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
#n6 = {count = 6 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
#n10 = {count = 10 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
#n12 = {count = 12 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
func.func @regions(%x: tensor<f32>, %p: tensor<i1>) -> tensor<f32> {
  // expected-remark @below {{trip count 5.00, branch counts [10, 2] for tf.WhileRegion: body ran 10 times (most executions of its profiled ops); the loop ran 2 times (cond ran 12 times, less the 10 iterations)}}
  %0 = "tf.WhileRegion"(%x) ({
  ^bb0(%a: tensor<f32>):
    %c = "tf.Less"(%a, %a) {profiler_data = #n12} : (tensor<f32>, tensor<f32>) -> tensor<i1>
    "tf.Yield"(%c, %a) : (tensor<i1>, tensor<f32>) -> ()
  }, {
  ^bb0(%a: tensor<f32>):
    %s = "tf.AddV2"(%a, %a) {profiler_data = #n10} : (tensor<f32>, tensor<f32>) -> tensor<f32>
    // expected-remark @below {{branch counts [4, 6] for tf.IfRegion: then ran 4 times (most executions of its profiled ops); else ran 6 times (most executions of its profiled ops)}}
    %r = "tf.IfRegion"(%p) ({
      %t = "tf.Relu"(%s) {profiler_data = #n4} : (tensor<f32>) -> tensor<f32>
      "tf.Yield"(%t) : (tensor<f32>) -> ()
    }, {
      %e = "tf.Neg"(%s) {profiler_data = #n6} : (tensor<f32>) -> tensor<f32>
      "tf.Yield"(%e) : (tensor<f32>) -> ()
    }) {is_stateless = true} : (tensor<i1>) -> tensor<f32>
    "tf.Yield"(%r) : (tensor<f32>) -> ()
  }) {is_stateless = true, parallel_iterations = 10 : i64} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Nothing profiled, nothing decided; stale counts are cleared.
// CHECK-LABEL: func.func @unprofiled
// CHECK-NOT: profiler_branch_counts
// CHECK: return
func.func @unprofiled(%p: tensor<i1>, %x: tensor<f32>) -> tensor<f32> {
  // expected-remark @below {{profile-guided: no branch counts for tf.If: none of the ops directly in its branches was profiled}}
  %0 = "tf.If"(%p, %x) <{else_branch = @else, then_branch = @then, is_stateless = true}> {profiler_branch_counts = array<i64: 9, 9>} : (tensor<i1>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func private @then(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.Relu"(%x) : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func private @else(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.Tanh"(%x) : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Lowered control flow: cf.cond_br gets branch_weights from its successor
// blocks.
// CHECK-LABEL: func.func @cond_br
// CHECK: cf.cond_br %{{.*}} weights([3, 1]), ^bb1, ^bb2
// MIN-LABEL: func.func @cond_br
// MIN: cf.cond_br %{{.*}} weights([3, 1]), ^bb1, ^bb2
#n1 = {count = 1 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
#n3 = {count = 3 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
func.func @cond_br(%c: i1, %x: tensor<f32>) -> tensor<f32> {
  // expected-remark @below {{profile-guided: branch_weights [3, 1] for cf.cond_br: successor #0 ran 3 times (most executions of its profiled ops); successor #1 ran 1 times (most executions of its profiled ops)}}
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %0 = "tf.Relu"(%x) {profiler_data = #n3} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
^bb2:
  %1 = "tf.Tanh"(%x) {profiler_data = #n1} : (tensor<f32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// A loop latch: the header has two predecessors, so its count is not the back
// edge's; the back edge takes what the exit leaves of the latch's count.
// CHECK-LABEL: func.func @latch
// CHECK: cf.cond_br %{{.*}} weights([12, 3]), ^bb1, ^bb2
#n3 = {count = 3 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
#n15 = {count = 15 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
func.func @latch(%c: i1, %x: tensor<f32>) -> tensor<f32> {
  cf.br ^bb1
^bb1:
  %0 = "tf.AddV2"(%x, %x) {profiler_data = #n15} : (tensor<f32>, tensor<f32>) -> tensor<f32>
  // expected-remark @below {{branch_weights [12, 3] for cf.cond_br: successor #0 ran 12 times (its block ran 15 times, less the other targets); successor #1 ran 3 times (most executions of its profiled ops)}}
  cf.cond_br %c, ^bb1, ^bb2
^bb2:
  %1 = "tf.Relu"(%0) {profiler_data = #n3} : (tensor<f32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// A successor holding only a return may have run unseen: without its block's
// count there is no decision. Existing weights stay.
// CHECK-LABEL: func.func @unseen_successor
// CHECK: cf.cond_br %{{.*}} weights([1, 1]), ^bb1, ^bb2
#n3 = {count = 3 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
func.func @unseen_successor(%c: i1, %x: tensor<f32>) -> tensor<f32> {
  // expected-remark @below {{profile-guided: no branch counts for cf.cond_br: successor #1 holds no op the profile would show had it run, and its block has no count}}
  cf.cond_br %c weights([1, 1]), ^bb1, ^bb2
^bb1:
  %0 = "tf.Relu"(%x) {profiler_data = #n3} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
^bb2:
  return %x : tensor<f32>
}

// -----

// Counts beyond i32 are scaled down, keeping their ratio: #big's 6000000000
// and #small's 2000000000 divided by 6000000000 / INT32_MAX + 1 = 3.
// CHECK-LABEL: func.func @large_counts
// CHECK: cf.cond_br %{{.*}} weights([2000000000, 666666666]), ^bb1, ^bb2
#big = {count = 6000000000 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
#small = {count = 2000000000 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
func.func @large_counts(%c: i1, %x: tensor<f32>) -> tensor<f32> {
  // expected-remark @below {{branch_weights [2000000000, 666666666] for cf.cond_br: successor #0 ran 6000000000 times}}
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %0 = "tf.Relu"(%x) {profiler_data = #big} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
^bb2:
  %1 = "tf.Tanh"(%x) {profiler_data = #small} : (tensor<f32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// Blocks that other edges also reach hold those executions too: their counts
// are never a successor's own.
// CHECK-LABEL: func.func @merge_blocks
// CHECK-NOT: weights
// CHECK: return
#n2 = {count = 2 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
#n3 = {count = 3 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
func.func @merge_blocks(%c: i1, %d: i1, %x: tensor<f32>) -> tensor<f32> {
  // expected-remark @below {{profile-guided: no branch counts for cf.cond_br: none of the ops directly in its branches was profiled}}
  cf.cond_br %d, ^bb1, ^bb2
^bb1:
  // expected-remark @below {{profile-guided: no branch counts for cf.cond_br: the counts of successor #0 are not its own: other edges also reach its block}}
  cf.cond_br %c, ^bb3, ^bb4
^bb2:
  // expected-remark @below {{profile-guided: no branch counts for cf.cond_br: the counts of successor #0 are not its own: other edges also reach its block}}
  cf.cond_br %c, ^bb3, ^bb4
^bb3:
  %0 = "tf.Relu"(%x) {profiler_data = #n3} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
^bb4:
  %1 = "tf.Tanh"(%x) {profiler_data = #n2} : (tensor<f32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// TensorFlow's graph form: the ops of a branch function sit in islands of a
// tf_executor.graph, which run once per execution of the function.
// CHECK-LABEL: func.func @executor_form
// CHECK: "tf.If"{{.*}}profiler_branch_counts = array<i64: 4, 0>
#n4 = {count = 4 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}
func.func @executor_form(%p: tensor<i1>, %x: tensor<f32>) -> tensor<f32> {
  // expected-remark @below {{branch counts [4, 0] for tf.If: then @then ran 4 times (most executions of its profiled ops); else @else ran 0 times (not profiled, though its tf.Tanh would have been)}}
  %0 = "tf.If"(%p, %x) <{else_branch = @else, then_branch = @then, is_stateless = true}> : (tensor<i1>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func private @then(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf_executor.graph"() ({
    %1:2 = "tf_executor.island"() ({
      %2 = "tf.Relu"(%x) {profiler_data = #n4} : (tensor<f32>) -> tensor<f32>
      "tf_executor.yield"(%2) : (tensor<f32>) -> ()
    }) : () -> (tensor<f32>, !tf_executor.control)
    "tf_executor.fetch"(%1#0) : (tensor<f32>) -> ()
  }) : () -> tensor<f32>
  return %0 : tensor<f32>
}
func.func private @else(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf_executor.graph"() ({
    %1:2 = "tf_executor.island"() ({
      %2 = "tf.Tanh"(%x) : (tensor<f32>) -> tensor<f32>
      "tf_executor.yield"(%2) : (tensor<f32>) -> ()
    }) : () -> (tensor<f32>, !tf_executor.control)
    "tf_executor.fetch"(%1#0) : (tensor<f32>) -> ()
  }) : () -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// The loop of the XLA bridge route at StableHLO (the GRU of the built-in rnn,
// 2 steps of 4 time steps): the lowered ops carry their tf ops' records, the
// loop its tf.While's (count = executions), so the trip count is measured at
// this level too. Not a tf dialect op: generic form, unregistered.
// CHECK-LABEL: func.func @stablehlo_while
// CHECK: "stablehlo.while"
// CHECK: profiler_branch_counts = array<i64: 8, 2>{{.*}}profiler_trip_count = 4.000000e+00 : f64
#w2 = {count = 2 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, source = "gru/while", total = 1 : i64, ts = 0 : i64}
#w8 = {count = 8 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, source = "gru/while/MatMul", total = 1 : i64, ts = 0 : i64}
#w10 = {count = 10 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, source = "gru/while/Less", total = 1 : i64, ts = 0 : i64}
func.func @stablehlo_while(%i: tensor<i32>, %h: tensor<4xf32>) -> tensor<4xf32> {
  // expected-remark @below {{trip count 4.00, branch counts [8, 2] for stablehlo.while: body ran 8 times (most executions of its profiled ops); the loop ran 2 times (the op's own count)}}
  %0:2 = "stablehlo.while"(%i, %h) ({
  ^bb0(%a: tensor<i32>, %b: tensor<4xf32>):
    %c = "stablehlo.compare"(%a, %a) {profiler_data = #w10} : (tensor<i32>, tensor<i32>) -> tensor<i1>
    "stablehlo.return"(%c) : (tensor<i1>) -> ()
  }, {
  ^bb0(%a: tensor<i32>, %b: tensor<4xf32>):
    %d = "stablehlo.tanh"(%b) {profiler_data = #w8} : (tensor<4xf32>) -> tensor<4xf32>
    "stablehlo.return"(%a, %d) : (tensor<i32>, tensor<4xf32>) -> ()
  }) {profiler_data = #w2} : (tensor<i32>, tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>)
  return %0#1 : tensor<4xf32>
}

// -----

// The same loop at linalg (scf.while), where IREE's input conversion lost the
// cond's compare: the loop's own count and its body's give the trip count.
// CHECK-LABEL: func.func @scf_while
// CHECK: scf.while
// CHECK: profiler_branch_counts = array<i64: 8, 2>{{.*}}profiler_trip_count = 4.000000e+00 : f64
#s2 = {count = 2 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, source = "gru/while", total = 1 : i64, ts = 0 : i64}
#s8 = {count = 8 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, source = "gru/while/MatMul", total = 1 : i64, ts = 0 : i64}
func.func @scf_while(%n: i32, %h: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : i32
  // expected-remark @below {{trip count 4.00, branch counts [8, 2] for scf.while: body ran 8 times (most executions of its profiled ops); the loop ran 2 times (the op's own count)}}
  %0:2 = scf.while (%a = %c0, %b = %h) : (i32, tensor<4xf32>) -> (i32, tensor<4xf32>) {
    %c = arith.cmpi slt, %a, %n : i32
    scf.condition(%c) %a, %b : i32, tensor<4xf32>
  } do {
  ^bb0(%a: i32, %b: tensor<4xf32>):
    %d = math.tanh %b {profiler_data = #s8} : tensor<4xf32>
    scf.yield %a, %d : i32, tensor<4xf32>
  } attributes {profiler_data = #s2}
  return %0#1 : tensor<4xf32>
}
