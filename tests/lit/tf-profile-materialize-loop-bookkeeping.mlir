// Loop bookkeeping carried down to linalg and IREE's flow level: what a
// TensorList loop's reads and writes, counter and compare become (a
// stablehlo.dynamic_slice or dynamic_update_slice, then tensor.extract_slice,
// tensor.insert_slice or flow.tensor.update; the counter and compare scalar
// arith ops in an scf.while's regions) each keep their tf op's record, are
// charged its time, and are nodes of the op graph. The loop itself carries no
// record and takes none of its body's.
//
// RUN: %tfpgo_opt --allow-unregistered-dialect %s \
// RUN:   --tf-profile-materialize-annotations="summary-output=%t.summary.json" \
// RUN:   --tf-profile-export-op-graph="output=%t.graph.json" | FileCheck %s
// RUN: FileCheck %s --check-prefix=SUMMARY < %t.summary.json
// RUN: FileCheck %s --check-prefix=GRAPH < %t.graph.json

// CHECK-LABEL: func.func @main
// CHECK: scf.while
// CHECK-NOT: profiler_data
// CHECK: arith.cmpi slt{{.*}}profiler_data = {{{.*}}self = 300 : i64, {{.*}}source = "while/Less"
// CHECK: scf.condition
// CHECK: arith.addi{{.*}}profiler_data = {{{.*}}self = 100 : i64, {{.*}}source = "while/add_1"
// CHECK: tensor.extract_slice{{.*}}profiler_data = {{{.*}}self = 1100 : i64, {{.*}}source = "while/TensorListGetItem"
// CHECK: tensor.insert_slice{{.*}}profiler_data = {{{.*}}self = 1200 : i64, {{.*}}source = "while/TensorListSetItem"
// CHECK: "flow.tensor.update"{{.*}}profiler_data = {{{.*}}self = 900 : i64, {{.*}}source = "while/TensorListSetItem_1"
// CHECK: scf.yield
// CHECK-NOT: profiler_data
// CHECK: return
// SUMMARY: "source_self_ps": 3600
// GRAPH-DAG: "op":"arith.cmpi","name":"while/Less"
// GRAPH-DAG: "op":"arith.addi","name":"while/add_1"
// GRAPH-DAG: "op":"tensor.extract_slice","name":"while/TensorListGetItem"
// GRAPH-DAG: "op":"tensor.insert_slice","name":"while/TensorListSetItem"
// GRAPH-DAG: "op":"flow.tensor.update","name":"while/TensorListSetItem_1"
func.func @main(%items: tensor<6x4xf32>, %buffer: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c6 = arith.constant 6 : i32
  %r:2 = scf.while (%i = %c0, %acc = %buffer) : (i32, tensor<6x4xf32>) -> (i32, tensor<6x4xf32>) {
    %less = arith.cmpi slt, %i, %c6 : i32 loc(fused<{profiler_data = {count = 7 : i64, dur = 42 : i64, max = 42 : i64, min = 42 : i64, p50 = 42 : i64, p95 = 42 : i64, self = 300 : i64, share = 0.1 : f64, source = "while/Less", total = 300 : i64, ts = 0 : i64}}>["while/Less"])
    scf.condition(%less) %i, %acc : i32, tensor<6x4xf32>
  } do {
  ^bb0(%j: i32, %b: tensor<6x4xf32>):
    %next = arith.addi %j, %c1 : i32 loc(fused<{profiler_data = {count = 6 : i64, dur = 16 : i64, max = 16 : i64, min = 16 : i64, p50 = 16 : i64, p95 = 16 : i64, self = 100 : i64, share = 0.1 : f64, source = "while/add_1", total = 100 : i64, ts = 0 : i64}}>["while/add_1"])
    %k = arith.index_cast %j : i32 to index
    %row = tensor.extract_slice %items[%k, 0] [1, 4] [1, 1] : tensor<6x4xf32> to tensor<1x4xf32> loc(fused<{profiler_data = {count = 6 : i64, dur = 183 : i64, max = 183 : i64, min = 183 : i64, p50 = 183 : i64, p95 = 183 : i64, self = 1100 : i64, share = 0.1 : f64, source = "while/TensorListGetItem", total = 1100 : i64, ts = 0 : i64}}>["while/TensorListGetItem"])
    %written = tensor.insert_slice %row into %b[%k, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<6x4xf32> loc(fused<{profiler_data = {count = 6 : i64, dur = 200 : i64, max = 200 : i64, min = 200 : i64, p50 = 200 : i64, p95 = 200 : i64, self = 1200 : i64, share = 0.1 : f64, source = "while/TensorListSetItem", total = 1200 : i64, ts = 0 : i64}}>["while/TensorListSetItem"])
    %updated = "flow.tensor.update"(%row, %written, %k, %k) : (tensor<1x4xf32>, tensor<6x4xf32>, index, index) -> tensor<6x4xf32> loc(fused<{profiler_data = {count = 6 : i64, dur = 150 : i64, max = 150 : i64, min = 150 : i64, p50 = 150 : i64, p95 = 150 : i64, self = 900 : i64, share = 0.1 : f64, source = "while/TensorListSetItem_1", total = 900 : i64, ts = 0 : i64}}>["while/TensorListSetItem_1"])
    scf.yield %next, %updated : i32, tensor<6x4xf32>
  }
  return %r#1 : tensor<6x4xf32>
}
