// XLA-compiled steps (op_profile version 2): entries the trace reader split off
// HLO instructions name their XLA module and fusion; `profiler_data` carries
// them (`xla_module`, and `xla_fusion` when a fusion ran the op), the op graph
// export writes them, and a mistyped one is an error naming the entry.
//
// RUN: split-file %s %t
// RUN: %tfpgo_opt --allow-unregistered-dialect \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%S/Inputs/xla_op_profile.json" \
// RUN:   %t/step.mlir | FileCheck %s
// RUN: %tfpgo_opt --allow-unregistered-dialect \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%S/Inputs/xla_op_profile.json" \
// RUN:   --tf-profile-export-op-graph="output=-" %t/step.mlir -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=GRAPH
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%S/Inputs/bad_xla_fields.json" %t/bad.mlir -verify-diagnostics

//--- step.mlir
// CHECK-LABEL: func.func @step
// A plain HLO instruction: the module only.
// CHECK: "tf.MatMul"{{.*}}profiler_data = {count = 1 : i64, {{.*}}ts = 10 : i64, xla_module = "a_inference_step_7__.3"}
// CHECK: "tf.BiasAdd"{{.*}}profiler_data = {{{.*}}xla_fusion = "broadcast_maximum_fusion", xla_module = "a_inference_step_7__.3"}
// CHECK: "tf.Relu"{{.*}}profiler_data = {{{.*}}xla_fusion = "broadcast_maximum_fusion", xla_module = "a_inference_step_7__.3"}
// CHECK: "tf.StatefulPartitionedCall"
// CHECK-NOT: profiler_data
// CHECK-LABEL: func.func private @head
// Resolved through the call node, like a TF kernel's runtime name.
// CHECK: "tf.Softmax"{{.*}}profiler_data = {{{.*}}xla_fusion = "subtract_exponential_fusion", xla_module = "a_inference_head_9__.5"}
// GRAPH: "name":"model/dense/MatMul",{{.*}}"share":{{[^,]*}},"xla_module":"a_inference_step_7__.3"}
// GRAPH: "name":"model/dense/BiasAdd",{{.*}}"xla_module":"a_inference_step_7__.3","xla_fusion":"broadcast_maximum_fusion"}
func.func @step(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = "tf.MatMul"(%x, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc(fused["MatMul:", "model/dense/MatMul"])
  %1 = "tf.BiasAdd"(%0, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc(fused["BiasAdd:", "model/dense/BiasAdd"])
  %2 = "tf.Relu"(%1) : (tensor<4x4xf32>) -> tensor<4x4xf32> loc(fused["Relu:", "model/dense/Relu"])
  %3 = "tf.StatefulPartitionedCall"(%2) <{config = "", config_proto = "", executor_type = "", f = @head}> {_XlaMustCompile = true} : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("call")
  return %3 : tensor<4x4xf32>
}
func.func private @head(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = "tf.Softmax"(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32> loc(fused["Softmax:", "model/head/Softmax@head"])
  return %0 : tensor<4x4xf32>
}

//--- bad.mlir
// expected-error@+1 {{ops[0] ('model/dense/MatMul'): 'xla_module' and 'xla_fusion' must be strings}}
module {}
