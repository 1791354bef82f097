// Resolution of runtime node names onto ops, merging, fused kernels, the
// trait/interface path (registered tfpgo_test ops) and the fallback path
// (unregistered tf ops), and every user-facing error.
//
// RUN: split-file %s %t
// RUN: %tfpgo_test_opt --allow-unregistered-dialect -split-input-file \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%S/Inputs/annotate_op_profile.json" \
// RUN:   %t/annotate.mlir | FileCheck %s
// The pass reads, resolves and attaches in parallel when MLIR may use threads;
// serially it must give the same IR.
// RUN: %tfpgo_test_opt --allow-unregistered-dialect -split-input-file --mlir-disable-threading \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%S/Inputs/annotate_op_profile.json" \
// RUN:   %t/annotate.mlir | FileCheck %s
// RUN: %tfpgo_test_opt --allow-unregistered-dialect -split-input-file \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%S/Inputs/annotate_op_profile.json report-unresolved=true" \
// RUN:   %t/annotate.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: %tfpgo_opt --tf-annotate-operations-profile %t/no_option.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/absent.json" %t/missing.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%S/Inputs/not_json.json" %t/not_json.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%S/Inputs/wrong_format.json" %t/wrong_format.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%S/Inputs/newer_version.json" %t/newer_version.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%S/Inputs/bad_durations.json" %t/bad_durations.mlir -verify-diagnostics

//--- annotate.mlir
// Functional control flow and calls, unregistered tf ops (fallback path).
// CHECK-LABEL: func.func @main
// The fused kernel's producers point at the node the kernel is named after.
// From Inputs/annotate_op_profile.json: model/dense/Relu ran [1000, 2000] ps
// (mean 1500, nearest-rank p50 1000, p95 2000, self 3000); the ops this module
// annotates hold 3000 + 1400 + 600 + 500 + 400 + 50 + 50 = 6000 ps of self time
// (Relu, the loop's Tanh, add and Less, the then-branch Relu, the two call
// sites' MatMul), so its share is 3000 / 6000 = 0.5.
// CHECK: "tf.MatMul"{{.*}}profiler_data = {fused_into = "model/dense/Relu"}
// CHECK: "tf.BiasAdd"{{.*}}profiler_data = {fused_into = "model/dense/Relu"}
// CHECK: "tf.Relu"{{.*}}profiler_data = {count = 2 : i64, dur = 1500 : i64, max = 2000 : i64, min = 1000 : i64, p50 = 1000 : i64, p95 = 2000 : i64, self = 3000 : i64, share = 5.000000e-01 : f64, total = 3000 : i64, ts = 100 : i64}
// CHECK: "tf.While"(
// CHECK-NOT: profiler_data
// CHECK: %[[ID:.*]] = "tf.Identity"(
// CHECK-NOT: profiler
// CHECK: return %[[ID]]
func.func @main(%x: tensor<4x4xf32>, %p: tensor<i1>) -> tensor<4x4xf32> {
  %0 = "tf.MatMul"(%x, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc(fused["MatMul:", "model/dense/MatMul"])
  %1 = "tf.BiasAdd"(%0, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc(fused["BiasAdd:", "model/dense/BiasAdd"])
  %2 = "tf.Relu"(%1) : (tensor<4x4xf32>) -> tensor<4x4xf32> loc(fused["Relu:", callsite("model/dense/Relu"("m.py":3:1) at "m.py":9:1)])
  %3:2 = "tf.While"(%p, %2) <{body = @body, cond = @cond, is_stateless = true}> : (tensor<i1>, tensor<4x4xf32>) -> (tensor<i1>, tensor<4x4xf32>) loc("model/while")
  %4 = "tf.If"(%p, %3#1) <{then_branch = @then, else_branch = @else, is_stateless = true}> : (tensor<i1>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("model/cond")
  %5 = "tf.PartitionedCall"(%4) <{f = @inner_30}> : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("PartitionedCall")
  %6 = "tf.PartitionedCall"(%5) <{f = @inner_30}> : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("PartitionedCall_1")
  // A stale annotation from an earlier run is dropped.
  %7 = "tf.Identity"(%6) {profiler_data = {fused_into = "old"}, profiler_hot = 3 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("Identity")
  return %7 : tensor<4x4xf32>
}
// Loop iterations land on the op inside the body function: the add ran
// [100, 200, 300] ps (mean and p50 200, self 600, share 600 / 6000 = 0.1, first
// start 500), the Tanh [300, 500, 600] (self 1400).
// CHECK-LABEL: func.func private @body
// CHECK: "tf.AddV2"{{.*}}profiler_data = {count = 3 : i64, dur = 200 : i64, max = 300 : i64, min = 100 : i64, p50 = 200 : i64, p95 = 300 : i64, self = 600 : i64, share = 1.000000e-01 : f64, total = 600 : i64, ts = 500 : i64}
// CHECK: "tf.Tanh"{{.*}}profiler_data = {count = 3 : i64, {{.*}}self = 1400 : i64
func.func private @body(%c: tensor<i1>, %v: tensor<4x4xf32>) -> (tensor<i1>, tensor<4x4xf32>) {
  %0 = "tf.AddV2"(%v, %v) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("model/while/add@body_12")
  %1 = "tf.Tanh"(%0) : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("model/while/Tanh@body_12")
  return %c, %1 : tensor<i1>, tensor<4x4xf32>
}
// CHECK-LABEL: func.func private @cond
// CHECK: "tf.Less"{{.*}}profiler_data = {count = 4 : i64
func.func private @cond(%c: tensor<i1>, %v: tensor<4x4xf32>) -> tensor<i1> {
  %0 = "tf.Less"(%v, %v) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<i1> loc("model/while/Less@cond_11")
  return %0 : tensor<i1>
}
// CHECK-LABEL: func.func private @then
// CHECK: "tf.Relu"{{.*}}profiler_data = {count = 1 : i64
func.func private @then(%v: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = "tf.Relu"(%v) : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("model/cond/Relu@then_1")
  return %0 : tensor<4x4xf32>
}
// CHECK-LABEL: func.func private @else
// CHECK-NOT: profiler_data
// CHECK: return
func.func private @else(%v: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = "tf.Neg"(%v) : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("model/cond/Neg@else_2")
  return %0 : tensor<4x4xf32>
}
// Two call sites merge exactly: percentiles come from all four durations,
// [10, 40] of PartitionedCall/MatMul and [20, 30] of PartitionedCall_1/MatMul:
// mean 100 / 4 = 25, nearest-rank p50 the 2nd of [10, 20, 30, 40] = 20, p95 40,
// first start min(2000, 1000) = 1000.
// CHECK-LABEL: func.func private @inner_30
// CHECK: "tf.MatMul"{{.*}}profiler_data = {count = 4 : i64, dur = 25 : i64, max = 40 : i64, min = 10 : i64, p50 = 20 : i64, p95 = 40 : i64, self = 100 : i64, share = {{.*}} : f64, total = 100 : i64, ts = 1000 : i64}
func.func private @inner_30(%v: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = "tf.MatMul"(%v, %v) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc(fused["MatMul:", callsite("MatMul@inner_3"("m.py":1:1) at "m.py":2:1)])
  return %0 : tensor<4x4xf32>
}

// REMARK: remark: profile entry 'Grappler/ArithmeticOptimizer/AddOpsRewrite_x' (50 ps self) matches no op
// REMARK: remark: annotated 6 ops and 2 fused ops from 11 profile entries; 6000 of 6609 ps self time attributed

// -----

// Region control flow: the body's ops live in the enclosing function.
// CHECK-LABEL: func.func @region
// CHECK: "tf.WhileRegion"
// CHECK: "tf.Mul"{{.*}}profiler_data = {count = 2 : i64, {{.*}}share = 1.000000e+00 : f64
func.func @region(%v: tensor<f32>) -> tensor<f32> {
  %0 = "tf.WhileRegion"(%v) ({
  ^bb0(%a: tensor<f32>):
    %c = "tf.Less"(%a, %a) : (tensor<f32>, tensor<f32>) -> tensor<i1> loc("w/Less@cond_1")
    "tf.Yield"(%c, %a) : (tensor<i1>, tensor<f32>) -> () loc("w/Yield@cond_1")
  }, {
  ^bb0(%a: tensor<f32>):
    %m = "tf.Mul"(%a, %a) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc("w/mul@body_2")
    "tf.Yield"(%m) : (tensor<f32>) -> () loc("w/Yield@body_2")
  }) {is_stateless = true} : (tensor<f32>) -> tensor<f32> loc("w")
  return %0 : tensor<f32>
}

// -----

// Registered ops whose base class carries TF_ProfileAnnotation go through
// ProfilerAnnotationsInterface; a registered op without it is never touched.
// CHECK-LABEL: func.func @registered
// CHECK: tfpgo_test.MatMul{{.*}}profiler_data = {fused_into = "reg/Relu"}
// CHECK: tfpgo_test.BiasAdd{{.*}}profiler_data = {fused_into = "reg/Relu"}
// CHECK: tfpgo_test.Relu{{.*}}profiler_data = {count = 1 : i64, {{.*}}share = 1.000000e+00 : f64
// CHECK: tfpgo_test.Plain
// CHECK-NOT: profiler_data
// CHECK: return
func.func @registered(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "tfpgo_test.MatMul"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("reg/MatMul")
  %1 = "tfpgo_test.BiasAdd"(%0, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("reg/BiasAdd")
  %2 = "tfpgo_test.Relu"(%1) : (tensor<2xf32>) -> tensor<2xf32> loc("reg/Relu")
  %3 = "tfpgo_test.Plain"(%2) : (tensor<2xf32>) -> tensor<2xf32> loc("reg/Plain")
  return %3 : tensor<2xf32>
}
// REMARK: remark: profile entry 'reg/Plain' (9 ps self) matches no annotatable op

//--- no_option.mlir
// expected-error@+1 {{tf-annotate-operations-profile needs 'path-to-profile'}}
module {}

//--- missing.mlir
// expected-error@+1 {{absent.json': No such file or directory}}
module {}

//--- not_json.mlir
// expected-error@+1 {{not_json.json': not JSON: line 2, column 1: unexpected end of input}}
module {}

//--- wrong_format.mlir
// expected-error@+1 {{'format' is not "tfpgo.op_profile"}}
module {}

//--- newer_version.mlir
// expected-error@+1 {{unsupported 'version' (this reader knows 1 to 3)}}
module {}

//--- bad_durations.mlir
// expected-error@+1 {{'durations_ps' must hold 'count' (2) durations}}
module {}
