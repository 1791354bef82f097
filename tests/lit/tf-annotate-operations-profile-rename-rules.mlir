// TensorFlow names a node it creates for another after it (the rules, with the
// source that names them, are in docs/attribution_rules.md):
//  * Grappler's UnaryOpsComposition: `<root>/unary_ops_composition` runs the
//    chain of unary ops ending in `<root>` (seen in a GELU gradient);
//  * the graph partitioner: `<src>/_<k>` (`<src>/ctrl/_<k>` for a control edge)
//    is the `_Send`/`_Recv` of `<src>`'s value (seen under MirroredStrategy);
//  * Grappler's dependency optimizer: `GroupCrossDeviceControlEdges_<k>/<node>`;
//  * Grappler's auto mixed precision casts `<node>-<port>-CastTo<T>-<id>-AutoMixedPrecision`,
//    its layout optimizer's transposes `<node>-<port>-...-LayoutOptimizer`, its
//    memory optimizer's recomputation `Recomputed/<node>`, constant folding's
//    `ConstantFolding/<node>-<suffix>`, the loop optimizer's `LoopOptimizer/<node>`;
//  * an argument's `_Arg` name (`tf.entry_function` inputs): its readers.
// Each entry's rule is in attribution.json; a name that follows a rule to a
// node the module lacks says so in its reason.
//
// RUN: %tfpgo_opt --allow-unregistered-dialect \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%S/Inputs/rename_rules_op_profile.json attribution-output=%t.json report-unresolved=true" \
// RUN:   %s 2>%t.remarks | FileCheck %s
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: FileCheck %s --check-prefix=REMARK < %t.remarks

// CHECK-LABEL: func.func @main
// The composed chain feeding the root (one use each) is fused into it; the
// Neg whose value is used twice is not part of the chain.
// CHECK: %[[NEG:.*]] = "tf.Neg"(%arg1)
// CHECK-NOT: profiler_data
// CHECK: "tf.Square"(%[[NEG]]){{.*}}profiler_data = {fused_into = "model/gelu/Exp"}
// CHECK: "tf.Exp"{{.*}}profiler_data = {count = 1 : i64, {{.*}}self = 120 : i64
// The transfer of argument x is split between the two ops that read it.
// CHECK: "tf.MatMul"(%arg0, %arg1){{.*}}profiler_data = {{{.*}}merged = 1 : i64, {{.*}}self = 26 : i64
// CHECK: "tf.MatMul"(%arg0, {{.*}}profiler_data = {{{.*}}merged = 1 : i64, {{.*}}self = 20 : i64
// CHECK: "tf.AddV2"{{.*}}profiler_data = {count = 3 : i64, {{.*}}self = 10 : i64
// CHECK: "tf.AssignVariableOp"{{.*}}profiler_data = {count = 2 : i64, {{.*}}self = 24 : i64
// CHECK: "tf.Identity"{{.*}}profiler_data = {count = 1 : i64, {{.*}}self = 30 : i64
func.func @main(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>, %v: tensor<!tf_type.resource<tensor<4x4xf32>>>) -> (tensor<4x4xf32>, tensor<4x4xf32>) attributes {tf.entry_function = {inputs = "x,w,v", outputs = "out"}} {
  %neg = "tf.Neg"(%w) : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("model/gelu/Neg")
  %sq = "tf.Square"(%neg) : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("model/gelu/Square")
  %exp = "tf.Exp"(%sq) : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("model/gelu/Exp")
  %m0 = "tf.MatMul"(%x, %w) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("replica_0/dense/MatMul")
  %m1 = "tf.MatMul"(%x, %exp) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("replica_1/dense/MatMul")
  %sum = "tf.AddV2"(%m0, %neg) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("model/add")
  "tf.AssignVariableOp"(%v, %sum) : (tensor<!tf_type.resource<tensor<4x4xf32>>>, tensor<4x4xf32>) -> () loc("model/update/AssignVariableOp")
  %out = "tf.Identity"(%m1) : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("Identity")
  return %out, %sum : tensor<4x4xf32>, tensor<4x4xf32>
}

// JSON: "name": "model/gelu/Exp/unary_ops_composition"
// JSON: "match": "resolved"
// JSON-NEXT: "rule": "grappler_unary_ops_composition"
// JSON: "name": "x/_1"
// JSON: "rule": "graph_partitioner+function_argument"
// JSON-NEXT: "ops": [
// JSON-NEXT: "replica_0/dense/MatMul",
// JSON-NEXT: "replica_1/dense/MatMul"
// JSON: "name": "GroupCrossDeviceControlEdges_0/Identity/_3"
// JSON: "rule": "graph_partitioner+grappler_group_control_edges"
// JSON: "name": "model/update/AssignVariableOp/ctrl/_4"
// JSON: "rule": "graph_partitioner"
// JSON: "name": "missing/_7"
// JSON: "match": "unresolved"
// JSON-NEXT: "reason": "matches no op; follows graph_partitioner (tensorflow/core/graph/graph_partition.cc): stands for 'missing', which no op carries"
// JSON: "rule": "grappler_auto_mixed_precision"
// JSON-NEXT: "ops": [
// JSON-NEXT: "replica_0/dense/MatMul"
// JSON: "rule": "grappler_layout_optimizer"
// JSON-NEXT: "ops": [
// JSON-NEXT: "model/add"
// JSON: "rule": "grappler_memory_recompute"
// JSON: "rule": "grappler_constant_folding"
// JSON: "rule": "grappler_loop_optimizer"

// REMARK: remark: profile entry 'missing/_7' (9 ps self) matches no op; follows graph_partitioner
