// RUN: split-file %s %t
// RUN: %tfpgo_opt --allow-unregistered-dialect \
// RUN:   --tf-profile-export-op-graph="output=-" %t/graph.mlir -o /dev/null | FileCheck %s
// RUN: %tfpgo_opt --allow-unregistered-dialect \
// RUN:   --tf-profile-export-op-graph="output=%t/op_graph.json" %t/graph.mlir -o /dev/null
// RUN: %python -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['format']=='tfpgo.op_graph' and len(d['nodes'])==7, d" %t/op_graph.json
// RUN: %tfpgo_opt --tf-profile-export-op-graph %t/no_output.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-profile-export-op-graph="output=%t/missing_dir/x/op_graph.json" %t/unwritable.mlir -verify-diagnostics

//--- graph.mlir
func.func @main(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.MatMul"(%x, %x) {profiler_data = {fused_into = "dense/Relu"}} : (tensor<f32>, tensor<f32>) -> tensor<f32> loc("dense/MatMul")
  %1 = "tf.Relu"(%0) {profiler_data = {count = 2 : i64, dur = 5 : i64, max = 6 : i64, min = 4 : i64, p50 = 4 : i64, p95 = 6 : i64, self = 10 : i64, share = 1.000000e+00 : f64, total = 10 : i64, ts = 7 : i64}, profiler_hot = 1 : i64} : (tensor<f32>) -> tensor<f32> loc(fused["Relu:", "dense/Relu"])
  %2 = "tf.WhileRegion"(%1) ({
  ^bb0(%a: tensor<f32>):
    "tf.Yield"(%a) : (tensor<f32>) -> ()
  }) : (tensor<f32>) -> tensor<f32> loc("w")
  %3 = "tf.PartitionedCall"(%2) <{f = @callee}> : (tensor<f32>) -> tensor<f32>
  return %3 : tensor<f32>
}
func.func private @callee(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
// CHECK: "format": "tfpgo.op_graph",
// CHECK-NEXT: "version": 1,
// CHECK-NEXT: "time_unit": "ps",
// CHECK: "name": "main",
// CHECK-NEXT: "entry": true
// CHECK: "name": "callee",
// CHECK-NEXT: "entry": false
// CHECK: "nodes": [
// CHECK:      "id": 0,
// CHECK-NEXT: "op": "tf.MatMul",
// CHECK-NEXT: "name": "dense/MatMul",
// CHECK-NEXT: "function": "main",
// CHECK-NEXT: "parent": null,
// CHECK-NEXT: "profiler_data": null,
// CHECK-NEXT: "fused_into": "dense/Relu",
// CHECK-NEXT: "hot": false,
// CHECK-NEXT: "hot_rank": null
// CHECK:      "id": 1,
// CHECK-NEXT: "op": "tf.Relu",
// CHECK-NEXT: "name": "dense/Relu",
// CHECK:      "profiler_data": {
// CHECK-NEXT:  "ts": 7,
// CHECK-NEXT:  "dur": 5,
// CHECK-NEXT:  "count": 2,
// CHECK-NEXT:  "total": 10,
// CHECK-NEXT:  "self": 10,
// CHECK-NEXT:  "min": 4,
// CHECK-NEXT:  "max": 6,
// CHECK-NEXT:  "p50": 4,
// CHECK-NEXT:  "p95": 6,
// CHECK-NEXT:  "share": 1
// CHECK-NEXT: },
// CHECK-NEXT: "fused_into": null,
// CHECK-NEXT: "hot": true,
// CHECK-NEXT: "hot_rank": 1
// CHECK:      "id": 3,
// CHECK-NEXT: "op": "tf.Yield",
// CHECK-NEXT: "name": null,
// CHECK-NEXT: "function": "main",
// CHECK-NEXT: "parent": 2,
// CHECK:      "id": 6,
// CHECK-NEXT: "op": "func.return",
// CHECK-NEXT: "name": null,
// CHECK-NEXT: "function": "callee",
// CHECK: "edges": [
// CHECK:      "from": 0,
// CHECK-NEXT: "to": 1,
// CHECK-NEXT: "kind": "data"
// CHECK:      "from": 4,
// CHECK-NEXT: "to": 6,
// CHECK-NEXT: "kind": "call",
// CHECK-NEXT: "callee": "callee",
// CHECK-NEXT: "attr": "f"

//--- no_output.mlir
// expected-error@+1 {{tf-profile-export-op-graph needs 'output'}}
module {}

//--- unwritable.mlir
// expected-error@+1 {{cannot write op graph}}
module {}
