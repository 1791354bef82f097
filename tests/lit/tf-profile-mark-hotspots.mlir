// RUN: %tfpgo_opt --allow-unregistered-dialect -split-input-file \
// RUN:   --tf-profile-mark-hotspots="top-k=2" %s | FileCheck %s
// RUN: %tfpgo_opt --allow-unregistered-dialect -split-input-file \
// RUN:   --tf-profile-mark-hotspots="top-k=0 min-share=0.25" %s | FileCheck %s --check-prefix=SHARE

// Ranks by self time across functions; fused and unannotated ops never rank;
// ties keep IR order; stale ranks are cleared.
// CHECK-LABEL: func.func @f
// CHECK: "tf.A"{{.*}}profiler_hot = 2 : i64
// CHECK: "tf.B"{{.*}}profiler_hot = 1 : i64
// CHECK: %[[C:.*]] = "tf.C"(
// CHECK-NOT: profiler_hot
// CHECK: return %[[C]]
// SHARE-LABEL: func.func @f
// SHARE: "tf.A"{{.*}}profiler_hot = 2 : i64
// SHARE: "tf.B"{{.*}}profiler_hot = 1 : i64
// SHARE: "tf.C"(
// SHARE-NOT: profiler_hot
// SHARE: return
func.func @f(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.A"(%x) {profiler_data = {count = 1 : i64, dur = 30 : i64, max = 30 : i64, min = 30 : i64, p50 = 30 : i64, p95 = 30 : i64, self = 30 : i64, share = 3.000000e-01 : f64, total = 30 : i64, ts = 0 : i64}} : (tensor<f32>) -> tensor<f32>
  %1 = "tf.B"(%0) {profiler_data = {count = 1 : i64, dur = 50 : i64, max = 50 : i64, min = 50 : i64, p50 = 50 : i64, p95 = 50 : i64, self = 50 : i64, share = 5.000000e-01 : f64, total = 50 : i64, ts = 0 : i64}} : (tensor<f32>) -> tensor<f32>
  %2 = "tf.Fused"(%1) {profiler_data = {fused_into = "B"}, profiler_hot = 7 : i64} : (tensor<f32>) -> tensor<f32>
  %3 = "tf.C"(%2) {profiler_data = {count = 1 : i64, dur = 20 : i64, max = 20 : i64, min = 20 : i64, p50 = 20 : i64, p95 = 20 : i64, self = 20 : i64, share = 2.000000e-01 : f64, total = 20 : i64, ts = 0 : i64}} : (tensor<f32>) -> tensor<f32>
  return %3 : tensor<f32>
}

// -----

// A malformed profiler_data is ignored, never a crash.
// CHECK-LABEL: func.func @malformed
// CHECK-NOT: profiler_hot
// SHARE-LABEL: func.func @malformed
// SHARE-NOT: profiler_hot
func.func @malformed(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.A"(%x) {profiler_data = {self = "many"}} : (tensor<f32>) -> tensor<f32>
  %1 = "tf.B"(%0) {profiler_data = 3 : i64} : (tensor<f32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// Fields this reader does not know (here sorting before, between and after
// the known ones) are skipped; a record missing one known field (`ts`) is
// not data.
// CHECK-LABEL: func.func @decode
// CHECK: "tf.Extra"{{.*}}profiler_hot = 1 : i64
// CHECK: "tf.NoTs"(
// CHECK-NOT: profiler_hot
// CHECK: return
// SHARE-LABEL: func.func @decode
// SHARE: "tf.Extra"{{.*}}profiler_hot = 1 : i64
// SHARE: "tf.NoTs"(
// SHARE-NOT: profiler_hot
// SHARE: return
func.func @decode(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.Extra"(%x) {profiler_data = {a_note = "x", count = 1 : i64, dur = 5 : i64, max = 5 : i64, min = 5 : i64, note = 7 : i64, p50 = 5 : i64, p95 = 5 : i64, self = 5 : i64, share = 5.000000e-01 : f64, total = 5 : i64, ts = 0 : i64, zz = 1 : i64}} : (tensor<f32>) -> tensor<f32>
  %1 = "tf.NoTs"(%0) {profiler_data = {count = 1 : i64, dur = 9 : i64, max = 9 : i64, min = 9 : i64, p50 = 9 : i64, p95 = 9 : i64, self = 9 : i64, share = 5.000000e-01 : f64, total = 9 : i64}} : (tensor<f32>) -> tensor<f32>
  return %1 : tensor<f32>
}
