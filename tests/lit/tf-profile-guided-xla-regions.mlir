// XLA regions chosen from the profile (tf-profile-guided-xla-regions): chains
// of ops XLA fuses well are marked with TensorFlow's jit scope attributes,
// heavy oneDNN kernels are declined, and every region obeys
// mark_for_compilation's rules (clusterable ops, resource variables, no
// control flow, no cycles through ops left out).
//
// The clustering rules are checked with reductions and variables allowed
// (with-reductions, the choice for XLA:GPU; with-variables); the CPU defaults
// keep them out (DEFAULT, TRAIN-DEFAULT below).
// RUN: split-file %s %t
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/regions.mlir \
// RUN:   --tf-profile-guided-xla-regions="with-reductions=true with-variables=true report-output=%t.report.json" | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.report.json
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/regions.mlir \
// RUN:   --tf-profile-guided-xla-regions="with-reductions=true with-variables=true min-share=0.05" | FileCheck %s --check-prefix=SHARE
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/regions.mlir \
// RUN:   --tf-profile-guided-xla-regions="with-reductions=true with-variables=true include-heavy=true" | FileCheck %s --check-prefix=HEAVY
// A second run clears the first run's marks and decides the same.
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/regions.mlir \
// RUN:   --tf-profile-guided-xla-regions="min-share=0.05" --tf-profile-guided-xla-regions > %t.twice.mlir
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/regions.mlir \
// RUN:   --tf-profile-guided-xla-regions > %t.once.mlir
// RUN: diff %t.once.mlir %t.twice.mlir
// By default (XLA:CPU) a reduction stays with TensorFlow's kernel and splits
// its chain: the Mean of @chain is declined, its Sub and Square stay a region.
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/regions.mlir \
// RUN:   --tf-profile-guided-xla-regions="report-output=%t.default.json" | FileCheck %s --check-prefix=DEFAULT
// RUN: FileCheck %s --check-prefix=DEFAULT-REPORT < %t.default.json
// On a real Keras training step (tests/data/tf2_21/train: Dense-ReLU-Dense,
// MSE, SGD), annotated from its real profile: the loss and its gradient, the
// SGD updates and the ReLU/bias gradients become regions; the matmuls (and
// the ops TensorFlow ran as _FusedMatMul) stay with oneDNN.
// RUN: %tfpgo_opt --allow-unregistered-dialect %test_data/tf2_21/train/module.mlir \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%test_data/tf2_21/train/op_profile.json" \
// RUN:   --tf-profile-guided-xla-regions="with-reductions=true with-variables=true report-output=%t.train.json" | FileCheck %s --check-prefix=TRAIN
// RUN: FileCheck %s --check-prefix=TRAIN-REPORT < %t.train.json
// By default, the loss's Mean and the bias gradients' BiasAddGrad stay with
// TensorFlow, and so do the variable reads and updates; the SGD's products of
// the learning rate and the gradients are still a region.
// RUN: %tfpgo_opt --allow-unregistered-dialect %test_data/tf2_21/train/module.mlir \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%test_data/tf2_21/train/op_profile.json" \
// RUN:   --tf-profile-guided-xla-regions="report-output=%t.train-default.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=TRAIN-DEFAULT < %t.train-default.json
// TRAIN-NOT: "tf.MatMul"{{.*}}_Xla
// TRAIN-COUNT-4: "tf.AssignSubVariableOp"{{.*}}{_XlaCompile = true, _XlaScope = "tfpgo_xla_region_1"
// TRAIN-REPORT: "name": "tfpgo_xla_region_0",
// TRAIN-REPORT: "node": "sub",
// TRAIN-REPORT: "node": "Mean",
// TRAIN-REPORT: "node": "gradient_tape/sequential_3_1/dense_4_1/Add/Sum",
// TRAIN-REPORT: "name": "tfpgo_xla_region_1",
// TRAIN-REPORT: "node": "sgd/Cast/ReadVariableOp",
// TRAIN-REPORT: "node": "sgd/AssignSubVariableOp_3",
// TRAIN-REPORT: "reason": "13 variable read/elementwise/optimizer update ops run as 12 TF kernels ({{[0-9.]+}}% of profiled time)
// TRAIN-REPORT: "name": "tfpgo_xla_region_2",
// TRAIN-REPORT: "node": "gradient_tape/sequential_3_1/dense_3_1/ReluGrad",
// TRAIN-REPORT: "node": "gradient_tape/sequential_3_1/dense_3_1/BiasAdd/BiasAddGrad",
// TRAIN-REPORT: "declined": [
// TRAIN-REPORT: "node": "sequential_3_1/dense_3_1/Relu",
// TRAIN-REPORT: "reason": "heavy oneDNN kernel: XLA's CPU dot is slower (TensorFlow fused sequential_3_1/dense_3_1/MatMul into it)"
// TRAIN-REPORT: "node": "gradient_tape/sequential_3_1/dense_3_1/MatMul/MatMul",
// TRAIN-REPORT-NEXT: "op": "tf.MatMul",
//
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/remarks.mlir -verify-diagnostics \
// RUN:   --tf-profile-guided-xla-regions="remarks=true" -o /dev/null
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/bad_share.mlir -verify-diagnostics \
// RUN:   --tf-profile-guided-xla-regions="min-share=1.5"
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/bad_min_ops.mlir -verify-diagnostics \
// RUN:   --tf-profile-guided-xla-regions="min-ops=0"
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/unannotated.mlir -verify-diagnostics \
// RUN:   --tf-profile-guided-xla-regions
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/unwritable.mlir -verify-diagnostics \
// RUN:   --tf-profile-guided-xla-regions="report-output=%t.missing/dir/xla_regions.json"

//--- regions.mlir
// Self times in ps; the module's profiled time is 7960 ps, so min-share=0.01
// is 79.6 ps and min-share=0.05 is 398 ps.
#t5 = {count = 1 : i64, dur = 5 : i64, max = 5 : i64, min = 5 : i64, p50 = 5 : i64, p95 = 5 : i64, self = 5 : i64, share = 0.000000e+00 : f64, total = 5 : i64, ts = 0 : i64}
#t50 = {count = 1 : i64, dur = 50 : i64, max = 50 : i64, min = 50 : i64, p50 = 50 : i64, p95 = 50 : i64, self = 50 : i64, share = 0.000000e+00 : f64, total = 50 : i64, ts = 0 : i64}
#t60 = {count = 1 : i64, dur = 60 : i64, max = 60 : i64, min = 60 : i64, p50 = 60 : i64, p95 = 60 : i64, self = 60 : i64, share = 0.000000e+00 : f64, total = 60 : i64, ts = 0 : i64}
#t70 = {count = 1 : i64, dur = 70 : i64, max = 70 : i64, min = 70 : i64, p50 = 70 : i64, p95 = 70 : i64, self = 70 : i64, share = 0.000000e+00 : f64, total = 70 : i64, ts = 0 : i64}
#t80 = {count = 1 : i64, dur = 80 : i64, max = 80 : i64, min = 80 : i64, p50 = 80 : i64, p95 = 80 : i64, self = 80 : i64, share = 0.000000e+00 : f64, total = 80 : i64, ts = 0 : i64}
#t90 = {count = 1 : i64, dur = 90 : i64, max = 90 : i64, min = 90 : i64, p50 = 90 : i64, p95 = 90 : i64, self = 90 : i64, share = 0.000000e+00 : f64, total = 90 : i64, ts = 0 : i64}
#t100 = {count = 1 : i64, dur = 100 : i64, max = 100 : i64, min = 100 : i64, p50 = 100 : i64, p95 = 100 : i64, self = 100 : i64, share = 0.000000e+00 : f64, total = 100 : i64, ts = 0 : i64}
#t110 = {count = 1 : i64, dur = 110 : i64, max = 110 : i64, min = 110 : i64, p50 = 110 : i64, p95 = 110 : i64, self = 110 : i64, share = 0.000000e+00 : f64, total = 110 : i64, ts = 0 : i64}
#t120 = {count = 1 : i64, dur = 120 : i64, max = 120 : i64, min = 120 : i64, p50 = 120 : i64, p95 = 120 : i64, self = 120 : i64, share = 0.000000e+00 : f64, total = 120 : i64, ts = 0 : i64}
#t150 = {count = 1 : i64, dur = 150 : i64, max = 150 : i64, min = 150 : i64, p50 = 150 : i64, p95 = 150 : i64, self = 150 : i64, share = 0.000000e+00 : f64, total = 150 : i64, ts = 0 : i64}
#t200 = {count = 1 : i64, dur = 200 : i64, max = 200 : i64, min = 200 : i64, p50 = 200 : i64, p95 = 200 : i64, self = 200 : i64, share = 0.000000e+00 : f64, total = 200 : i64, ts = 0 : i64}
#t300 = {count = 1 : i64, dur = 300 : i64, max = 300 : i64, min = 300 : i64, p50 = 300 : i64, p95 = 300 : i64, self = 300 : i64, share = 0.000000e+00 : f64, total = 300 : i64, ts = 0 : i64}
#t400 = {count = 1 : i64, dur = 400 : i64, max = 400 : i64, min = 400 : i64, p50 = 400 : i64, p95 = 400 : i64, self = 400 : i64, share = 0.000000e+00 : f64, total = 400 : i64, ts = 0 : i64}
#t500 = {count = 1 : i64, dur = 500 : i64, max = 500 : i64, min = 500 : i64, p50 = 500 : i64, p95 = 500 : i64, self = 500 : i64, share = 0.000000e+00 : f64, total = 500 : i64, ts = 0 : i64}
#t1000 = {count = 1 : i64, dur = 1000 : i64, max = 1000 : i64, min = 1000 : i64, p50 = 1000 : i64, p95 = 1000 : i64, self = 1000 : i64, share = 0.000000e+00 : f64, total = 1000 : i64, ts = 0 : i64}
#t1500 = {count = 1 : i64, dur = 1500 : i64, max = 1500 : i64, min = 1500 : i64, p50 = 1500 : i64, p95 = 1500 : i64, self = 1500 : i64, share = 0.000000e+00 : f64, total = 1500 : i64, ts = 0 : i64}
#t2000 = {count = 1 : i64, dur = 2000 : i64, max = 2000 : i64, min = 2000 : i64, p50 = 2000 : i64, p95 = 2000 : i64, self = 2000 : i64, share = 0.000000e+00 : f64, total = 2000 : i64, ts = 0 : i64}

// An elementwise chain and its reduction become the hottest region; the
// Const of the reduction axes joins it. The MatMul is a heavy oneDNN kernel,
// and so is the Relu that TensorFlow ran as _FusedMatMul (MatMul + BiasAdd +
// Relu): both stay with TensorFlow.
// DEFAULT-LABEL: func.func @chain
// DEFAULT-NEXT: "tf.Const"() <{value = dense<[0, 1]> : tensor<2xi32>}> : () -> tensor<2xi32>{{$}}
// DEFAULT-NEXT: "tf.Sub"{{.*}}{_XlaCompile = true, _XlaScope = "[[CHAIN:tfpgo_xla_region_[0-9]+]]", profiler_data
// DEFAULT-NEXT: "tf.Square"{{.*}}{_XlaCompile = true, _XlaScope = "[[CHAIN]]", profiler_data
// DEFAULT-NEXT: "tf.Mean"({{.*}}) <{keep_dims = false}> {profiler_data
// DEFAULT-REPORT: "with_reductions": false,
// DEFAULT-REPORT-NEXT: "with_variables": false,
// DEFAULT-REPORT: "declined": [
// DEFAULT-REPORT: "node": "chain/Mean",
// DEFAULT-REPORT: "reason": "reduction: XLA's CPU reduction fusions run slower than TensorFlow's kernels (with-reductions=true lets it join)"
// TRAIN-DEFAULT: "with_variables": false,
// TRAIN-DEFAULT: "name": "tfpgo_xla_region_1",
// TRAIN-DEFAULT: "node": "sgd/Mul_3",
// TRAIN-DEFAULT: "declined": [
// TRAIN-DEFAULT-DAG: "node": "Mean",
// TRAIN-DEFAULT-DAG: "node": "gradient_tape/sequential_3_1/dense_3_1/BiasAdd/BiasAddGrad",
// TRAIN-DEFAULT-DAG: "reason": "reduction: XLA's CPU reduction fusions run slower than TensorFlow's kernels (with-reductions=true lets it join)"
// TRAIN-DEFAULT-DAG: "node": "sgd/AssignSubVariableOp_2",
// TRAIN-DEFAULT-DAG: "reason": "optimizer update: a cluster holding variable accesses joins the chains they share and waits for all their inputs (with-variables=true lets it join)"
// TRAIN-DEFAULT-DAG: "node": "sgd/Cast_3/ReadVariableOp",
// TRAIN-DEFAULT-DAG: "reason": "variable read: a cluster holding variable accesses{{.*}}"
// CHECK-LABEL: func.func @chain
// CHECK: "tf.Const"(){{.*}}{_XlaCompile = true, _XlaScope = "tfpgo_xla_region_0"}
// CHECK: "tf.Sub"{{.*}}{_XlaCompile = true, _XlaScope = "tfpgo_xla_region_0", profiler_data
// CHECK: "tf.Square"{{.*}}{_XlaCompile = true, _XlaScope = "tfpgo_xla_region_0", profiler_data
// CHECK: "tf.Mean"{{.*}}{_XlaCompile = true, _XlaScope = "tfpgo_xla_region_0", profiler_data
// CHECK-NOT: _Xla
// CHECK: return
// SHARE-LABEL: func.func @chain
// SHARE-COUNT-4: _XlaScope = "tfpgo_xla_region_0"
// SHARE-NOT: _Xla
// SHARE: return
func.func @chain(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> (tensor<f32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %axes = "tf.Const"() <{value = dense<[0, 1]> : tensor<2xi32>}> : () -> tensor<2xi32> loc("chain/axes")
  %0 = "tf.Sub"(%x, %y) {profiler_data = #t300} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("chain/sub")
  %1 = "tf.Square"(%0) {profiler_data = #t200} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("chain/Square")
  %2 = "tf.Mean"(%1, %axes) <{keep_dims = false}> {profiler_data = #t100} : (tensor<4x8xf32>, tensor<2xi32>) -> tensor<f32> loc("chain/Mean")
  %3 = "tf.MatMul"(%x, %w) {profiler_data = #t2000} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("chain/MatMul")
  %4 = "tf.MatMul"(%x, %w) {profiler_data = {fused_into = "dense/Relu"}} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("dense/MatMul")
  %5 = "tf.BiasAdd"(%4, %b) {profiler_data = {fused_into = "dense/Relu"}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> loc("dense/BiasAdd")
  %6 = "tf.Relu"(%5) {profiler_data = #t1500} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("dense/Relu")
  return %2, %3, %6 : tensor<f32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// A MatMul splits the chain into two regions (one with include-heavy=true).
// CHECK-LABEL: func.func @split
// CHECK: "tf.Neg"{{.*}}_XlaScope = "tfpgo_xla_region_1"
// CHECK: "tf.Exp"{{.*}}_XlaScope = "tfpgo_xla_region_1"
// CHECK: "tf.MatMul"
// CHECK-NOT: _Xla
// CHECK-SAME: -> tensor<4x8xf32>
// CHECK: "tf.Tanh"{{.*}}_XlaScope = "tfpgo_xla_region_2"
// CHECK: "tf.Sigmoid"{{.*}}_XlaScope = "tfpgo_xla_region_2"
// 300 and 240 ps are under min-share=0.05 (398 ps).
// SHARE-LABEL: func.func @split
// SHARE-NOT: _Xla
// SHARE: return
// HEAVY-LABEL: func.func @split
// HEAVY: "tf.Neg"{{.*}}_XlaScope = "tfpgo_xla_region_0"
// HEAVY: "tf.Exp"{{.*}}_XlaScope = "tfpgo_xla_region_0"
// HEAVY: "tf.MatMul"{{.*}}_XlaScope = "tfpgo_xla_region_0"
// HEAVY: "tf.Tanh"{{.*}}_XlaScope = "tfpgo_xla_region_0"
// HEAVY: "tf.Sigmoid"{{.*}}_XlaScope = "tfpgo_xla_region_0"
func.func @split(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = "tf.Neg"(%x) {profiler_data = #t150} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("split/Neg")
  %1 = "tf.Exp"(%0) {profiler_data = #t150} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("split/Exp")
  %2 = "tf.MatMul"(%1, %w) {profiler_data = #t1000} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("split/MatMul")
  %3 = "tf.Tanh"(%2) {profiler_data = #t120} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("split/Tanh")
  %4 = "tf.Sigmoid"(%3) {profiler_data = #t120} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("split/Sigmoid")
  return %4 : tensor<4x8xf32>
}

// CheckNumerics has no XLA kernel on CPU. Putting the add into the region of
// Neg and Exp would make a cycle region -> CheckNumerics -> region, so the
// add and Tanh form a second region.
// CHECK-LABEL: func.func @cycle
// CHECK: "tf.Neg"{{.*}}_XlaScope = "tfpgo_xla_region_3"
// CHECK: "tf.Exp"{{.*}}_XlaScope = "tfpgo_xla_region_3"
// CHECK: "tf.CheckNumerics"
// CHECK-NOT: _Xla
// CHECK-SAME: -> tensor<4xf32>
// CHECK: "tf.AddV2"{{.*}}_XlaScope = "tfpgo_xla_region_4"
// CHECK: "tf.Tanh"{{.*}}_XlaScope = "tfpgo_xla_region_4"
func.func @cycle(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "tf.Neg"(%x) {profiler_data = #t100} : (tensor<4xf32>) -> tensor<4xf32> loc("cycle/Neg")
  %1 = "tf.Exp"(%0) {profiler_data = #t110} : (tensor<4xf32>) -> tensor<4xf32> loc("cycle/Exp")
  %2 = "tf.CheckNumerics"(%1) <{message = "nan"}> {profiler_data = #t400} : (tensor<4xf32>) -> tensor<4xf32> loc("cycle/CheckNumerics")
  %3 = "tf.AddV2"(%1, %2) {profiler_data = #t100} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("cycle/add")
  %4 = "tf.Tanh"(%3) {profiler_data = #t90} : (tensor<4xf32>) -> tensor<4xf32> loc("cycle/Tanh")
  return %4 : tensor<4xf32>
}

// An SGD update: reading the learning rate, scaling the gradient and
// subtracting it from the weights is one region (reads before writes).
// CHECK-LABEL: func.func @sgd
// CHECK: "tf.ReadVariableOp"{{.*}}_XlaScope = "tfpgo_xla_region_5"
// CHECK: "tf.Mul"{{.*}}_XlaScope = "tfpgo_xla_region_5"
// CHECK: "tf.AssignSubVariableOp"{{.*}}_XlaScope = "tfpgo_xla_region_5"
func.func @sgd(%lr: tensor<!tf_type.resource<tensor<f32>>>, %v: tensor<!tf_type.resource<tensor<4xf32>>>, %g: tensor<4xf32>) {
  %0 = "tf.ReadVariableOp"(%lr) {profiler_data = #t50} : (tensor<!tf_type.resource<tensor<f32>>>) -> tensor<f32> loc("sgd/ReadVariableOp")
  %1 = "tf.Mul"(%0, %g) {profiler_data = #t60} : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32> loc("sgd/Mul")
  "tf.AssignSubVariableOp"(%v, %1) {profiler_data = #t70} : (tensor<!tf_type.resource<tensor<4xf32>>>, tensor<4xf32>) -> () loc("sgd/AssignSubVariableOp")
  return
}

// A write followed by a read of the same variable cannot share a region (XLA
// runs a cluster's reads before its writes); the Mul goes with the read, as
// joining Neg's region would make a cycle through the read.
// CHECK-LABEL: func.func @write_then_read
// CHECK: "tf.Neg"{{.*}}_XlaScope = "tfpgo_xla_region_7"
// CHECK: "tf.AssignVariableOp"{{.*}}_XlaScope = "tfpgo_xla_region_7"
// CHECK: "tf.ReadVariableOp"{{.*}}_XlaScope = "tfpgo_xla_region_6"
// CHECK: "tf.Mul"{{.*}}_XlaScope = "tfpgo_xla_region_6"
func.func @write_then_read(%v: tensor<!tf_type.resource<tensor<4xf32>>>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "tf.Neg"(%x) {profiler_data = #t80} : (tensor<4xf32>) -> tensor<4xf32> loc("rule/Neg")
  "tf.AssignVariableOp"(%v, %0) {profiler_data = #t80} : (tensor<!tf_type.resource<tensor<4xf32>>>, tensor<4xf32>) -> () loc("rule/AssignVariableOp")
  %1 = "tf.ReadVariableOp"(%v) {profiler_data = #t80} : (tensor<!tf_type.resource<tensor<4xf32>>>) -> tensor<4xf32> loc("rule/ReadVariableOp")
  %2 = "tf.Mul"(%1, %0) {profiler_data = #t90} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("rule/Mul")
  return %2 : tensor<4xf32>
}

// Calls, control flow (and the ops inside it) and stateful random ops are
// never in a region.
// CHECK-LABEL: func.func @control
// CHECK-NOT: _Xla
// CHECK-LABEL: func.func @cold
// CHECK-NOT: _Xla
// CHECK: return
func.func @control(%c: tensor<i1>, %x: tensor<4xf32>, %s: tensor<1xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = "tf.StatefulPartitionedCall"(%x) <{config = "", config_proto = "", executor_type = "", f = @callee}> {profiler_data = #t500} : (tensor<4xf32>) -> tensor<4xf32> loc("control/call")
  %1 = "tf.RandomUniform"(%s) {profiler_data = #t300} : (tensor<1xi32>) -> tensor<4xf32> loc("control/RandomUniform")
  %2 = "tf.IfRegion"(%c) ({
    %3 = "tf.Neg"(%x) {profiler_data = #t200} : (tensor<4xf32>) -> tensor<4xf32> loc("control/cond/Neg")
    "tf.Yield"(%3) : (tensor<4xf32>) -> ()
  }, {
    "tf.Yield"(%x) : (tensor<4xf32>) -> ()
  }) {is_stateless = true} : (tensor<i1>) -> tensor<4xf32> loc("control/cond")
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

func.func private @callee(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}

// A chain too cold to matter (0.13% of the profiled time).
func.func @cold(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "tf.Neg"(%x) {profiler_data = #t5} : (tensor<4xf32>) -> tensor<4xf32> loc("cold/Neg")
  %1 = "tf.Exp"(%0) {profiler_data = #t5} : (tensor<4xf32>) -> tensor<4xf32> loc("cold/Exp")
  return %1 : tensor<4xf32>
}

// REPORT: "format": "tfpgo.xla_regions",
// REPORT-NEXT: "version": 1,
// REPORT-NEXT: "time_unit": "ps",
// REPORT-NEXT: "pass": "tf-profile-guided-xla-regions",
// REPORT-NEXT: "min_share": 0.01,
// REPORT-NEXT: "min_ops": 2,
// REPORT-NEXT: "include_heavy": false,
// REPORT-NEXT: "with_reductions": true,
// REPORT-NEXT: "with_variables": true,
// REPORT-NEXT: "profiled_ps": 7960,
// REPORT-NEXT: "regions": [
// REPORT: "name": "tfpgo_xla_region_0",
// REPORT-NEXT: "self_ps": 600,
// REPORT-NEXT: "share": 0.07537{{[0-9]+}},
// REPORT-NEXT: "op_count": 4,
// REPORT-NEXT: "kernel_count": 3,
// REPORT-NEXT: "function": "chain",
// REPORT-NEXT: "ops": [
// REPORT: "node": "chain/axes",
// REPORT-NEXT: "op": "tf.Const",
// REPORT-NEXT: "self_ps": 0
// REPORT: "node": "chain/sub",
// REPORT-NEXT: "op": "tf.Sub",
// REPORT-NEXT: "self_ps": 300
// REPORT: "node": "chain/Square",
// REPORT: "node": "chain/Mean",
// REPORT-NEXT: "op": "tf.Mean",
// REPORT-NEXT: "self_ps": 100
// REPORT: "reason": "4 elementwise/reduction ops run as 3 TF kernels (7.5% of profiled time): one XLA cluster fuses what TensorFlow runs as one kernel per op"
// REPORT: "name": "tfpgo_xla_region_3",
// REPORT: "blocked": "joining the region of cycle/Exp would form a cycle through cycle/CheckNumerics"
// REPORT: "name": "tfpgo_xla_region_5",
// REPORT: "node": "sgd/AssignSubVariableOp",
// REPORT: "reason": "3 variable read/elementwise/optimizer update ops run as 3 TF kernels (2.3% of profiled time)
// REPORT: "name": "tfpgo_xla_region_6",
// REPORT: "blocked": "resource variable rule: rule/AssignVariableOp writes before rule/ReadVariableOp accesses, and XLA runs a cluster's reads before its writes"
// REPORT: "name": "tfpgo_xla_region_7",
// REPORT-NOT: "name": "tfpgo_xla_region_8"
// REPORT: "declined": [
// REPORT: "node": "chain/MatMul",
// REPORT-NEXT: "op": "tf.MatMul",
// REPORT-NEXT: "self_ps": 2000,
// REPORT-NEXT: "share": 0.25125{{[0-9]+}},
// REPORT-NEXT: "reason": "heavy oneDNN kernel: XLA's CPU dot is slower"
// REPORT: "node": "dense/Relu",
// REPORT: "reason": "heavy oneDNN kernel: XLA's CPU dot is slower (TensorFlow fused dense/MatMul into it)"
// REPORT: "node": "split/MatMul",
// REPORT: "node": "control/call",
// REPORT: "reason": "control flow or function call: {{.*}}"
// REPORT: "node": "cycle/CheckNumerics",
// REPORT: "reason": "no XLA kernel known to the pass's allow-list (tf2xla/kernels)"
// REPORT: "node": "control/RandomUniform",
// REPORT: "reason": "stateful random op: not compilable on the CPU JIT device"
// REPORT: "node": "control/cond/Neg",
// REPORT: "reason": "inside tf.IfRegion: only ops directly in a function body are clustered"
// REPORT-NOT: "node": "cold/

//--- remarks.mlir
#t100 = {count = 1 : i64, dur = 100 : i64, max = 100 : i64, min = 100 : i64, p50 = 100 : i64, p95 = 100 : i64, self = 100 : i64, share = 0.000000e+00 : f64, total = 100 : i64, ts = 0 : i64}
#t200 = {count = 1 : i64, dur = 200 : i64, max = 200 : i64, min = 200 : i64, p50 = 200 : i64, p95 = 200 : i64, self = 200 : i64, share = 0.000000e+00 : f64, total = 200 : i64, ts = 0 : i64}
#t700 = {count = 1 : i64, dur = 700 : i64, max = 700 : i64, min = 700 : i64, p50 = 700 : i64, p95 = 700 : i64, self = 700 : i64, share = 0.000000e+00 : f64, total = 700 : i64, ts = 0 : i64}
func.func @remarks(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-remark@+1 {{tfpgo_xla_region_0: 2 elementwise ops run as 2 TF kernels (30.0% of profiled time): one XLA cluster fuses what TensorFlow runs as one kernel per op}}
  %0 = "tf.Neg"(%x) {profiler_data = #t100} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "tf.Exp"(%0) {profiler_data = #t200} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark@+1 {{left to TensorFlow (70.0% of profiled time): heavy oneDNN kernel: XLA's CPU dot is slower}}
  %2 = "tf.MatMul"(%1, %w) {profiler_data = #t700} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

//--- bad_share.mlir
// expected-error@+1 {{tf-profile-guided-xla-regions: min-share must be in [0, 1], got 1.5}}
module {}

//--- bad_min_ops.mlir
// expected-error@+1 {{tf-profile-guided-xla-regions: min-ops must be at least 1}}
module {}

//--- unannotated.mlir
// expected-error@+1 {{tf-profile-guided-xla-regions: no op carries measured profiler_data; run tf-annotate-operations-profile first}}
module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "tf.Neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

//--- unwritable.mlir
// expected-error@+1 {{cannot write tfpgo.xla_regions document: }}
module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "tf.Neg"(%x) {profiler_data = {count = 1 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e+00 : f64, total = 1 : i64, ts = 0 : i64}} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
