// RUN: %tfpgo_test_opt --allow-unregistered-dialect -split-input-file \
// RUN:   --mlir-print-debuginfo --mlir-print-local-scope \
// RUN:   --tf-strip-profile-annotations %s | FileCheck %s

// CHECK-LABEL: func.func @f
// CHECK-NOT: profiler_
// CHECK: "tf.A"(%{{.*}}) {device = ""}
// CHECK-NOT: profiler_
// CHECK: tfpgo_test.Relu
// CHECK-NOT: profiler_
// CHECK: return
func.func @f(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.A"(%x) {device = "", profiler_data = {fused_into = "B"}} : (tensor<f32>) -> tensor<f32>
  %1 = "tf.B"(%0) {profiler_data = {count = 1 : i64, dur = 50 : i64, max = 50 : i64, min = 50 : i64, p50 = 50 : i64, p95 = 50 : i64, self = 50 : i64, share = 1.000000e+00 : f64, total = 50 : i64, ts = 0 : i64}, profiler_hot = 1 : i64} : (tensor<f32>) -> tensor<f32>
  %2 = "tfpgo_test.Relu"(%1) {profiler_data = {fused_into = "B"}} : (tensor<f32>) -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// Ops in nested regions are stripped too.
// CHECK-LABEL: func.func @nested
// CHECK-NOT: profiler_
// CHECK: return
func.func @nested(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.WhileRegion"(%x) ({
  ^bb0(%a: tensor<f32>):
    %c = "tf.Less"(%a, %a) {profiler_hot = 2 : i64} : (tensor<f32>, tensor<f32>) -> tensor<i1>
    "tf.Yield"(%c, %a) : (tensor<i1>, tensor<f32>) -> ()
  }, {
  ^bb0(%a: tensor<f32>):
    "tf.Yield"(%a) : (tensor<f32>) -> ()
  }) {is_stateless = true} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// The counts of tf-profile-branch-weights are annotations and go; the
// branch_weights it set on upstream branch ops are its result and stay.
// CHECK-LABEL: func.func @branch_counts
// CHECK: "tf.While"(%{{.*}}) <{body = @body, cond = @cond, is_stateless = true}> : (tensor<f32>) -> tensor<f32>
// CHECK: cf.cond_br %{{.*}} weights([12, 3]), ^bb1, ^bb2
// CHECK-NOT: profiler_
func.func @branch_counts(%c: i1, %x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.While"(%x) <{body = @body, cond = @cond, is_stateless = true}> {profiler_branch_counts = array<i64: 15, 3>, profiler_trip_count = 5.000000e+00 : f64} : (tensor<f32>) -> tensor<f32>
  cf.cond_br %c weights([12, 3]), ^bb1, ^bb2
^bb1:
  return %0 : tensor<f32>
^bb2:
  return %x : tensor<f32>
}

// -----

// A record carried in a location goes, on the ops and on their regions'
// arguments (a lowered reduction's body has its op's location); the node
// names a dispatch is attributed by stay.
// CHECK-LABEL: func.func @carried
// CHECK-NOT: profiler_data
// CHECK: ^bb0(%{{.*}}: tensor<f32> loc("pool"), %{{.*}}: tensor<f32> loc("pool")):
// CHECK-NOT: profiler_data
// CHECK: loc("pool")
func.func @carried(%x: tensor<4xf32>, %init: tensor<f32>) -> tensor<f32> {
  %0 = "stablehlo.reduce"(%x, %init) ({
  ^bb0(%a: tensor<f32> loc(fused<{profiler_data = {count = 1 : i64, self = 7 : i64, source = "pool"}}>["pool"]), %b: tensor<f32> loc(fused<{profiler_data = {count = 1 : i64, self = 7 : i64, source = "pool"}}>["pool"])):
    %m = "stablehlo.maximum"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc(fused<{profiler_data = {count = 1 : i64, self = 7 : i64, source = "pool"}}>["pool"])
    "stablehlo.return"(%m) : (tensor<f32>) -> ()
  }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32> loc(fused<{profiler_data = {count = 1 : i64, self = 7 : i64, source = "pool"}}>["pool"])
  return %0 : tensor<f32>
}
