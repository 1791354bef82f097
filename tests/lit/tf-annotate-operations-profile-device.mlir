// Device (GPU) time, op profile version 3: `profiler_data` gains
// `device_self`, `device_count` and `device_share` (over the annotated ops'
// device time); an op that ran only on the device (host `count` 0) is annotated;
// mark-hotspots ranks by device time when the module has some; the op graph and
// attribution.json carry it; materialize matches names onto lowered ops with
// their device time; malformed device fields are one error naming the entry.
//
// RUN: split-file %s %t
// RUN: %tfpgo_opt --allow-unregistered-dialect \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%S/Inputs/device_op_profile.json attribution-output=%t/attribution.json" \
// RUN:   --tf-profile-mark-hotspots="top-k=2" \
// RUN:   --tf-profile-export-op-graph="output=%t/graph.json" %t/step.mlir | FileCheck %s
// RUN: FileCheck %s --check-prefix=GRAPH < %t/graph.json
// RUN: FileCheck %s --check-prefix=ATTRIBUTION < %t/attribution.json
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/lowered.mlir \
// RUN:   --tf-profile-materialize-annotations="path-to-profile=%S/Inputs/device_op_profile.json summary-output=%t/summary.json" \
// RUN:   | FileCheck %s --check-prefix=LOWERED
// RUN: FileCheck %s --check-prefix=SUMMARY < %t/summary.json
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%S/Inputs/bad_device_fields.json" %t/bad.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%S/Inputs/no_executions.json" %t/empty.mlir -verify-diagnostics

//--- step.mlir
// CHECK-LABEL: func.func @step
// Host and device time; the device share is 700 of the 1000 ps on ops.
// CHECK: "tf.MatMul"{{.*}}profiler_data = {count = 1 : i64, device_count = 2 : i64, device_self = 700 : i64, device_share = {{0\.69999|7\.0+e-01}}{{[0-9]*}} : f64, dur = 100 : i64,{{.*}}profiler_hot = 1 : i64
// CHECK: "tf.BiasAdd"{{.*}}profiler_data = {count = 1 : i64, device_count = 1 : i64, device_self = 50 : i64, device_share = 5.000000e-02 : f64,
// CHECK-NOT: profiler_hot
// Device only: no host execution, first start from the device.
// CHECK: "tf.Relu"{{.*}}profiler_data = {count = 0 : i64, device_count = 1 : i64, device_self = 250 : i64, device_share = 2.500000e-01 : f64, dur = 0 : i64, max = 0 : i64, min = 0 : i64,{{.*}}ts = 900 : i64}{{.*}}profiler_hot = 2 : i64
// Host only: the record has no device fields, and it is not hot although its
// host self time beats the device-only Relu's.
// CHECK: "tf.Softmax"{{.*}}profiler_data = {count = 1 : i64, dur = 50 : i64,
// CHECK-NOT: profiler_hot
// CHECK-SAME: }
func.func @step(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = "tf.MatMul"(%x, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc(fused["MatMul:", "model/dense/MatMul"])
  %1 = "tf.BiasAdd"(%0, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc(fused["BiasAdd:", "model/dense/BiasAdd"])
  %2 = "tf.Relu"(%1) : (tensor<4x4xf32>) -> tensor<4x4xf32> loc(fused["Relu:", "model/dense/Relu"])
  %3 = "tf.Softmax"(%2) : (tensor<4x4xf32>) -> tensor<4x4xf32> loc(fused["Softmax:", "model/head/Softmax"])
  return %3 : tensor<4x4xf32>
}
// GRAPH: "name":"model/dense/MatMul",{{.*}}"share":{{[^,]*}},"device_self":700,"device_count":2,"device_share":0.69999{{[0-9]*}}}
// GRAPH: "name":"model/head/Softmax",{{.*}}"share":{{[^,}]*}}}
// ATTRIBUTION: "profile_self_ps": 300,
// ATTRIBUTION-NEXT: "attributed_self_ps": 300,
// ATTRIBUTION-NEXT: "profile_device_ps": 1000,
// ATTRIBUTION-NEXT: "attributed_device_ps": 1000,

//--- lowered.mlir
// Lowered ops found by their node names carry the device time too.
// LOWERED: "stablehlo.dot_general"{{.*}}device_count = 2 : i64, device_self = 700 : i64, device_share = {{[0-9.e+-]+}} : f64
// LOWERED: "stablehlo.maximum"{{.*}}device_count = 1 : i64, device_self = 250 : i64
// SUMMARY: "source_device_ps": 950,
// SUMMARY: "name": "model/dense/MatMul",
// SUMMARY: "device_ps": 700
func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = "stablehlo.dot_general"(%x, %x) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}> : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("model/dense/MatMul")
  %1 = "stablehlo.maximum"(%0, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("model/dense/Relu")
  return %1 : tensor<4x4xf32>
}

//--- bad.mlir
// expected-error@+1 {{ops[0] ('model/dense/Relu'): 'device_self_ps' must be a non-negative integer}}
module {}

//--- empty.mlir
// expected-error@+1 {{ops[0] ('model/dense/Relu'): 'count' and 'device_count' are both 0: an entry must have run on the host or on a device}}
module {}
