// RUN: split-file %s %t
// RUN: %tfpgo_opt --allow-unregistered-dialect \
// RUN:   --tf-profile-export-op-graph="output=-" %t/graph.mlir -o /dev/null | FileCheck %s
// RUN: %tfpgo_opt --allow-unregistered-dialect \
// RUN:   --tf-profile-export-op-graph="output=%t/op_graph.json" %t/graph.mlir -o /dev/null
// RUN: %python -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['format']=='tfpgo.op_graph' and len(d['nodes'])==7, d" %t/op_graph.json
// RUN: %tfpgo_opt --tf-profile-export-op-graph="output=-" %t/empty.mlir -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=EMPTY
// RUN: %tfpgo_opt --tf-profile-export-op-graph %t/no_output.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-profile-export-op-graph="output=%t/missing_dir/x/op_graph.json" %t/unwritable.mlir -verify-diagnostics

//--- graph.mlir
func.func @main(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tf.MatMul"(%x, %x) {profiler_data = {fused_into = "dense/Relu"}} : (tensor<f32>, tensor<f32>) -> tensor<f32> loc("dense/MatMul")
  %1 = "tf.Relu"(%0) {profiler_data = {count = 2 : i64, dur = 5 : i64, max = 6 : i64, min = 4 : i64, p50 = 4 : i64, p95 = 6 : i64, self = 10 : i64, share = 1.000000e+00 : f64, total = 10 : i64, ts = 7 : i64}, profiler_hot = 1 : i64} : (tensor<f32>) -> tensor<f32> loc(fused["Relu:", "dense/Relu"])
  %2 = "tf.WhileRegion"(%1) ({
  ^bb0(%a: tensor<f32>):
    "tf.Yield"(%a) : (tensor<f32>) -> ()
  }) {profiler_trip_count = 3.000000e+00 : f64} : (tensor<f32>) -> tensor<f32> loc("w")
  %3 = "tf.PartitionedCall"(%2) <{f = @callee}> : (tensor<f32>) -> tensor<f32>
  return %3 : tensor<f32>
}
func.func private @callee(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
// One record per line, compact.
// CHECK:      {"format":"tfpgo.op_graph","version":1,"time_unit":"ps",
// CHECK-NEXT: "functions": [
// CHECK-NEXT:  {"name":"main","entry":true},
// CHECK-NEXT:  {"name":"callee","entry":false}
// CHECK-NEXT: ],
// CHECK-NEXT: "nodes": [
// CHECK-NEXT:  {"id":0,"op":"tf.MatMul","name":"dense/MatMul","function":"main","parent":null,"profiler_data":null,"fused_into":"dense/Relu","hot":false,"hot_rank":null,"trip_count":null},
// CHECK-NEXT:  {"id":1,"op":"tf.Relu","name":"dense/Relu","function":"main","parent":null,"profiler_data":{"ts":7,"dur":5,"count":2,"total":10,"self":10,"min":4,"max":6,"p50":4,"p95":6,"share":1},"fused_into":null,"hot":true,"hot_rank":1,"trip_count":null},
// CHECK-NEXT:  {"id":2,"op":"tf.WhileRegion","name":"w","function":"main","parent":null,{{.*}}"trip_count":3},
// CHECK-NEXT:  {"id":3,"op":"tf.Yield","name":null,"function":"main","parent":2,
// CHECK-NEXT:  {"id":4,"op":"tf.PartitionedCall",
// CHECK-NEXT:  {"id":5,"op":"func.return","name":null,"function":"main",
// CHECK-NEXT:  {"id":6,"op":"func.return","name":null,"function":"callee",
// CHECK-NEXT: ],
// CHECK-NEXT: "edges": [
// CHECK-NEXT:  {"from":0,"to":1,"kind":"data"},
// CHECK-NEXT:  {"from":1,"to":2,"kind":"data"},
// CHECK-NEXT:  {"from":2,"to":4,"kind":"data"},
// CHECK-NEXT:  {"from":4,"to":6,"kind":"call","callee":"callee","attr":"f"},
// CHECK-NEXT:  {"from":4,"to":5,"kind":"data"}
// CHECK-NEXT: ]}

//--- empty.mlir
// EMPTY:      {"format":"tfpgo.op_graph","version":1,"time_unit":"ps",
// EMPTY-NEXT: "functions": [],
// EMPTY-NEXT: "nodes": [],
// EMPTY-NEXT: "edges": []}
module {}

//--- no_output.mlir
// expected-error@+1 {{tf-profile-export-op-graph needs 'output'}}
module {}

//--- unwritable.mlir
// expected-error@+1 {{cannot write op graph}}
module {}
