// Names TensorFlow's default export pipeline (tf-standard-pipeline) merged
// away: a rewrite fused locations (Sub + Square -> SquaredDifference), CSE
// kept one of identical ops (adam/Pow_2, adam/Cast_8), folding left a
// constant (gradient_tape/truediv), canonicalization dropped an Identity.
//
// RUN: %tfpgo_opt --allow-unregistered-dialect %s \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%S/Inputs/merged_op_profile.json attribution-output=%t.json" \
// RUN:   | FileCheck %s
// RUN: FileCheck %s --check-prefix=DOC < %t.json
// RUN: %tfpgo_opt --allow-unregistered-dialect %s --mlir-disable-threading \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%S/Inputs/merged_op_profile.json" \
// RUN:   | FileCheck %s
// RUN: not %tfpgo_opt --allow-unregistered-dialect %s \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%S/Inputs/merged_op_profile.json attribution-output=%t.missing/dir/a.json" \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNWRITABLE

// CHECK-LABEL: func.func @main
// The folded RealDiv's constant is not annotated: no op does that work.
// CHECK: "tf.Const"() <{value = dense<7.812500e-03> : tensor<f32>}> : () -> tensor<f32>
// adam/Pow_2 (203 ps, 2 runs) is split equally between the two candidates,
// in integer parts that sum to it (102 + 101 ps, 1 + 1 runs); its durations
// stay out of their percentiles.
// CHECK: "tf.Pow"{{.*}}profiler_data = {count = 2 : i64, dur = 101 : i64, max = 102 : i64, merged = 1 : i64, min = 100 : i64, p50 = 100 : i64, p95 = 100 : i64, self = 202 : i64, {{.*}}total = 202 : i64
// CHECK: "tf.Pow"{{.*}}profiler_data = {count = 2 : i64, dur = 151 : i64, max = 200 : i64, merged = 1 : i64, min = 101 : i64, p50 = 200 : i64, p95 = 200 : i64, self = 301 : i64, {{.*}}total = 301 : i64
// adam/Cast_8 has one candidate: all of it, its durations included.
// CHECK: "tf.Cast"{{.*}}profiler_data = {count = 2 : i64, {{.*}}merged = 1 : i64, min = 50 : i64, p50 = 50 : i64, p95 = 60 : i64, self = 110 : i64
// The rewrite fused both locations: both entries land on it.
// CHECK: "tf.SquaredDifference"{{.*}}profiler_data = {count = 2 : i64, {{.*}}merged = 1 : i64, {{.*}}self = 70 : i64
// CHECK: "tf.Conv2D"(%4, %4) : (tensor<f32>, tensor<f32>) -> tensor<f32>
// An optimizer's read CSE merged with the step's read of the same counter:
// the same name once its scope is dropped.
// CHECK: "tf.ReadVariableOp"{{.*}}profiler_data = {count = 1 : i64, {{.*}}merged = 1 : i64, {{.*}}self = 11 : i64
func.func @main(%x: tensor<f32>, %y: tensor<f32>, %h: tensor<!tf_type.resource>) -> tensor<f32> {
  %c = "tf.Const"() <{value = dense<7.812500e-03> : tensor<f32>}> : () -> tensor<f32> loc(fused["RealDiv:", "gradient_tape/truediv"])
  %p0 = "tf.Pow"(%x, %c) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc("adam/Pow")
  %p1 = "tf.Pow"(%y, %c) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc("adam/Pow_1")
  %k = "tf.Cast"(%p0) : (tensor<f32>) -> tensor<f32> loc("adam/Cast_2")
  %d = "tf.SquaredDifference"(%k, %p1) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc(fused["Square:", "Square", "Sub:", "sub"])
  %v = "tf.Conv2D"(%d, %d) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc("model/Conv2D")
  %r = "tf.ReadVariableOp"(%h) : (tensor<!tf_type.resource>) -> tensor<f32> loc("Add/ReadVariableOp")
  return %v : tensor<f32>
}

// DOC: "format": "tfpgo.attribution"
// DOC: "profile_self_ps": 715
// DOC: "attributed_self_ps": 694
// DOC: "annotated_ops": 5
// DOC: "exact": {
// DOC-NEXT: "entries": 4,
// DOC-NEXT: "self_ps": 380
// DOC: "merged": {
// DOC-NEXT: "entries": 4,
// DOC-NEXT: "self_ps": 314
// DOC: "removed": {
// DOC-NEXT: "entries": 2,
// DOC-NEXT: "self_ps": 12
// DOC: "unresolved": {
// DOC-NEXT: "entries": 1,
// DOC-NEXT: "self_ps": 9
// DOC: "name": "adam/Pow_2",
// DOC-NEXT: "self_ps": 203,
// DOC-NEXT: "match": "merged",
// DOC-NEXT: "merged_by": "name",
// DOC-NEXT: "ops": [
// DOC-NEXT: "adam/Pow",
// DOC-NEXT: "adam/Pow_1"
// DOC: "name": "adam/Cast_8",
// DOC: "merged_by": "name",
// DOC: "name": "sub",
// DOC: "match": "merged",
// DOC-NEXT: "merged_by": "location",
// DOC-NEXT: "ops": [
// DOC-NEXT: "Square"
// DOC: "name": "opt/Add_8/ReadVariableOp",
// DOC: "merged_by": "name",
// DOC-NEXT: "ops": [
// DOC-NEXT: "Add/ReadVariableOp"
// DOC: "name": "gradient_tape/truediv",
// DOC: "match": "folded",
// DOC-NEXT: "reason": "removed by the IR pipeline: folded into a constant"
// DOC: "name": "Identity_3",
// DOC: "match": "removed",
// DOC-NEXT: "reason": "removed by the IR pipeline: an op that only forwards its input"
// DOC: "name": "other/Conv2D",
// DOC: "match": "unresolved",
// DOC-NEXT: "reason": "matches no op"

// UNWRITABLE: error: cannot write attribution: {{.*}}a.json
