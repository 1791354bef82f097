// Nodes Grappler's optimizers create while rewriting a node carry the name of
// the node they replace under `<scope>/<Name>Optimizer/<Stage>_<node>`
// (seen on a TF 2.21 transformer's LayerNorm: an add tree rewritten by
// ArithmeticOptimizer's AddOpsRewrite). Their time lands on `<scope>/<node>`,
// and the inner adds the rewritten tree absorbed are `fused_into` it.
//
// RUN: %tfpgo_opt --allow-unregistered-dialect \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%S/Inputs/grappler_op_profile.json report-unresolved=true" \
// RUN:   %s 2>%t.remarks | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remarks

// CHECK-LABEL: func.func @main
// The tree's inner add (one use) was absorbed by the rewrite; an add whose
// value is also used elsewhere was not part of it (and never ran).
// CHECK: %[[SHARED:.*]] = "tf.AddV2"(%arg0, %arg0)
// CHECK-NOT: profiler_data
// CHECK: "tf.AddV2"(%arg0, %[[SHARED]]){{.*}}profiler_data = {fused_into = "model/norm/add_2"}
// Root and leaf of the rewritten add tree both land on `norm/add_2`.
// CHECK: "tf.AddV2"{{.*}}profiler_data = {count = 2 : i64, {{.*}}self = 300 : i64, {{.*}}total = 300 : i64
// Inside a while body the same rewrite resolves through the body function.
// CHECK: "tf.While"
// CHECK-LABEL: func.func private @body
// CHECK: "tf.AddV2"{{.*}}profiler_data = {count = 1 : i64, {{.*}}self = 50 : i64
func.func @main(%x: tensor<4xf32>, %p: tensor<i1>) -> tensor<4xf32> {
  %shared = "tf.AddV2"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("model/norm/add")
  %inner = "tf.AddV2"(%x, %shared) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("model/norm/add_1")
  %0 = "tf.AddV2"(%inner, %shared) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc(fused["AddV2:", "model/norm/add_2"])
  %1:2 = "tf.While"(%p, %0) <{body = @body, cond = @cond, is_stateless = true}> : (tensor<i1>, tensor<4xf32>) -> (tensor<i1>, tensor<4xf32>) loc("model/while")
  return %1#1 : tensor<4xf32>
}
func.func private @body(%c: tensor<i1>, %v: tensor<4xf32>) -> (tensor<i1>, tensor<4xf32>) {
  %0 = "tf.AddV2"(%v, %v) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("model/while/add@body_3")
  return %c, %0 : tensor<i1>, tensor<4xf32>
}
func.func private @cond(%c: tensor<i1>, %v: tensor<4xf32>) -> tensor<i1> {
  return %c : tensor<i1>
}

// A name that only looks like a rewrite of a node the module lacks stays
// unresolved, and so does an optimizer scope without a stage prefix.
// REMARK: remark: profile entry 'model/norm/ArithmeticOptimizer/AddOpsRewrite_add_9' (7 ps self) matches no op
// REMARK: remark: profile entry 'model/norm/ArithmeticOptimizer/add_2' (5 ps self) matches no op
// REMARK: remark: annotated 2 ops and 1 fused ops from 5 profile entries; 350 of 362 ps self time attributed
