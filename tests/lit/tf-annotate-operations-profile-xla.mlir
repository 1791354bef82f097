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
//
// Rule xla_function_body: XLA names the instructions of a compiled while
// body/cond, if branch or callee after the function's own node (`loop/add`,
// no `loop/body/_1/` prefix); such a name resolves in the one function body
// the entry functions reach that has it, and stays unresolved, with a reason,
// when several do. A TF kernel's bare name (no xla_module) never does.
// RUN: %tfpgo_opt --allow-unregistered-dialect \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%S/Inputs/xla_while_op_profile.json attribution-output=%t/while.json report-unresolved=true" \
// RUN:   %t/while.mlir 2>%t/while.remarks | FileCheck %s --check-prefix=WHILE
// RUN: FileCheck %s --check-prefix=WHILE-JSON < %t/while.json
// RUN: FileCheck %s --check-prefix=WHILE-REMARK < %t/while.remarks

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

//--- while.mlir
// WHILE-LABEL: func.func @step
// WHILE: "tf.While"{{.*}}profiler_data = {count = 1 : i64, {{.*}}self = 400 : i64
// WHILE: "tf.If"
// WHILE-NOT: profiler_data
// WHILE-LABEL: func.func private @loop_body_10
// WHILE: "tf.AddV2"{{.*}}profiler_data = {{{.*}}self = 100 : i64{{.*}}xla_fusion = "wrapped_add", xla_module = "a_inference_step_12__.4"}
// The ambiguous Identity and the TF kernel's bare `loop/Sub` stay unannotated.
// WHILE-NOT: profiler_data
// WHILE-LABEL: func.func private @loop_cond_9
// WHILE: "tf.Less"{{.*}}profiler_data = {{{.*}}self = 60 : i64{{.*}}xla_fusion = "wrapped_compare"
// WHILE-NOT: profiler_data
// WHILE-LABEL: func.func private @helper_3
// Reached through the call in the loop body.
// WHILE: "tf.Mul"{{.*}}profiler_data = {{{.*}}self = 50 : i64
// WHILE-LABEL: func.func private @then_5
// WHILE: "tf.Relu"{{.*}}profiler_data = {{{.*}}self = 40 : i64
// WHILE-LABEL: func.func private @else_6
// WHILE-NOT: profiler_data
func.func @step(%x: tensor<i32>, %p: tensor<i1>) -> tensor<i32> {
  %0 = "tf.While"(%x) <{body = @loop_body_10, cond = @loop_cond_9, is_stateless = true}> : (tensor<i32>) -> tensor<i32> loc(fused["StatelessWhile:", "loop"])
  %1 = "tf.If"(%p, %0) <{then_branch = @then_5, else_branch = @else_6, is_stateless = true}> : (tensor<i1>, tensor<i32>) -> tensor<i32> loc(fused["StatelessIf:", "branch"])
  return %1 : tensor<i32>
}
func.func private @loop_body_10(%i: tensor<i32>) -> tensor<i32> {
  %0 = "tf.AddV2"(%i, %i) : (tensor<i32>, tensor<i32>) -> tensor<i32> loc(fused["AddV2:", "loop/add@loop_body_1"])
  %1 = "tf.Sub"(%0, %i) : (tensor<i32>, tensor<i32>) -> tensor<i32> loc(fused["Sub:", "loop/Sub@loop_body_1"])
  %2 = "tf.StatefulPartitionedCall"(%1) <{config = "", config_proto = "", executor_type = "", f = @helper_3}> : (tensor<i32>) -> tensor<i32> loc(fused["StatefulPartitionedCall:", "loop/call@loop_body_1"])
  %3 = "tf.Identity"(%2) : (tensor<i32>) -> tensor<i32> loc(fused["Identity:", "loop/Identity@loop_body_1"])
  return %3 : tensor<i32>
}
func.func private @loop_cond_9(%i: tensor<i32>) -> tensor<i1> {
  %0 = "tf.Less"(%i, %i) : (tensor<i32>, tensor<i32>) -> tensor<i1> loc(fused["Less:", "loop/Less@loop_cond_9"])
  %1 = "tf.Identity"(%0) : (tensor<i1>) -> tensor<i1> loc(fused["Identity:", "loop/Identity@loop_cond_9"])
  return %1 : tensor<i1>
}
func.func private @helper_3(%x: tensor<i32>) -> tensor<i32> {
  %0 = "tf.Mul"(%x, %x) : (tensor<i32>, tensor<i32>) -> tensor<i32> loc(fused["Mul:", "helper/Mul@helper"])
  return %0 : tensor<i32>
}
func.func private @then_5(%x: tensor<i32>) -> tensor<i32> {
  %0 = "tf.Relu"(%x) : (tensor<i32>) -> tensor<i32> loc(fused["Relu:", "branch/Relu@then"])
  return %0 : tensor<i32>
}
func.func private @else_6(%x: tensor<i32>) -> tensor<i32> {
  %0 = "tf.Neg"(%x) : (tensor<i32>) -> tensor<i32> loc(fused["Neg:", "branch/Neg@else"])
  return %0 : tensor<i32>
}

// WHILE-JSON: "attributed_self_ps": 650
// WHILE-JSON: "name": "loop/add"
// WHILE-JSON-NEXT: "self_ps": 100
// WHILE-JSON-NEXT: "match": "resolved"
// WHILE-JSON-NEXT: "rule": "xla_function_body"
// WHILE-JSON-NEXT: "ops": [
// WHILE-JSON-NEXT: "loop/add"
// WHILE-JSON: "name": "loop/Less"
// WHILE-JSON: "rule": "xla_function_body"
// WHILE-JSON: "name": "helper/Mul"
// WHILE-JSON: "rule": "xla_function_body"
// WHILE-JSON: "name": "branch/Relu"
// WHILE-JSON: "rule": "xla_function_body"
// WHILE-JSON: "name": "loop/Identity"
// WHILE-JSON: "match": "unresolved"
// WHILE-JSON-NEXT: "reason": "ambiguous; follows xla_function_body (tensorflow/compiler/tf2xla/xla_compilation_device.cc): 'loop/Identity' names ops in @loop_body_10 and @loop_cond_9, the op_name does not say which"
// WHILE-JSON: "name": "loop/Sub"
// WHILE-JSON: "match": "unresolved"
// WHILE-JSON-NEXT: "reason": "matches no op"

// WHILE-REMARK: remark: profile entry 'loop/Identity' (30 ps self) ambiguous; follows xla_function_body
// WHILE-REMARK: remark: profile entry 'loop/Sub' (20 ps self) matches no op
// WHILE-REMARK: remark: annotated 5 ops and 0 fused ops from 7 profile entries; 650 of 700 ps self time attributed
