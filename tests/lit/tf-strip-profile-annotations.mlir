// RUN: %tfpgo_opt --allow-unregistered-dialect -split-input-file \
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
