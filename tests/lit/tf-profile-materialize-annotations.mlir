// The profile below tf: carried in locations (carry-in-location), read back on
// lowered ops of any dialect (tf-profile-materialize-annotations), through
// ProfilerAnnotationsInterface's external models on upstream ops.
//
// RUN: split-file %s %t
// RUN: %tfpgo_opt --allow-unregistered-dialect --mlir-print-debuginfo %t/tf.mlir \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%S/Inputs/annotate_op_profile.json carry-in-location=true" \
// RUN:   | FileCheck %s --check-prefix=CARRY
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/linalg.mlir \
// RUN:   --tf-profile-materialize-annotations="summary-output=%t.summary.json" | FileCheck %s --check-prefix=LINALG
// RUN: FileCheck %s --check-prefix=SUMMARY < %t.summary.json
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/linalg.mlir \
// RUN:   --tf-profile-mark-hotspots="top-k=1" | FileCheck %s --check-prefix=HOT
// RUN: %tfpgo_opt --allow-unregistered-dialect --mlir-print-debuginfo %t/linalg.mlir \
// RUN:   --tf-strip-profile-annotations | FileCheck %s --check-prefix=STRIP
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/stablehlo.mlir \
// RUN:   --tf-profile-materialize-annotations="path-to-profile=%S/Inputs/annotate_op_profile.json" \
// RUN:   | FileCheck %s --check-prefix=NAMES
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/tosa.mlir --tf-profile-materialize-annotations \
// RUN:   | FileCheck %s --check-prefix=TOSA
// RUN: %tfpgo_opt %t/missing.mlir -verify-diagnostics \
// RUN:   --tf-profile-materialize-annotations="path-to-profile=%t/absent.json"
// RUN: %tfpgo_opt %t/unwritable.mlir -verify-diagnostics \
// RUN:   --tf-profile-materialize-annotations="summary-output=%t/no/such/dir/summary.json"

//--- tf.mlir
// The record also goes into the location, with the op's node name as source;
// the node name stays findable inside.
// CARRY-LABEL: func.func @main
// CARRY: "tf.MatMul"{{.*}}profiler_data = {fused_into = "model/dense/Relu"}{{.*}} loc([[MM:#loc[0-9]+]])
// CARRY: "tf.Relu"{{.*}}profiler_data = {count = 2 : i64{{.*}} loc([[RELU:#loc[0-9]+]])
// CARRY-DAG: [[MMNAME:#loc[0-9]+]] = loc("model/dense/MatMul")
// CARRY-DAG: [[RELUNAME:#loc[0-9]+]] = loc("model/dense/Relu")
// A swallowed op carries its kernel's record: below tf it is part of that work.
// CARRY-DAG: [[MM]] = loc(fused<{profiler_data = {count = 2 : i64, {{.*}}, source = "model/dense/Relu", total = 3000 : i64, ts = 100 : i64}}>[[[MMNAME]]])
// CARRY-DAG: [[RELU]] = loc(fused<{profiler_data = {count = 2 : i64, dur = 1500 : i64, max = 2000 : i64, min = 1000 : i64, p50 = 1000 : i64, p95 = 2000 : i64, self = 3000 : i64, share = {{.*}}, source = "model/dense/Relu", total = 3000 : i64, ts = 100 : i64}}>[[[RELUNAME]]])
func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = "tf.MatMul"(%x, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("model/dense/MatMul")
  %1 = "tf.BiasAdd"(%0, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("model/dense/BiasAdd")
  %2 = "tf.Relu"(%1) : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("model/dense/Relu")
  return %2 : tensor<4x4xf32>
}

//--- linalg.mlir
// What IREE makes of it: the Relu became tensor.empty + linalg.generic (fan-out
// 2; the body's arith op is inside an op of the same source), the MatMul a
// fill + matmul whose records say "fused"; an elementwise fusion left another
// source's location on an op inside the generic: fused_sources.
#relu = loc(fused<{profiler_data = {count = 2 : i64, dur = 1500 : i64, max = 2000 : i64, min = 1000 : i64, p50 = 1000 : i64, p95 = 2000 : i64, self = 3000 : i64, share = 1.0 : f64, source = "model/dense/Relu", total = 3000 : i64, ts = 100 : i64}}>["model/dense/Relu"])
#add = loc(fused<{profiler_data = {count = 1 : i64, dur = 1000 : i64, max = 1000 : i64, min = 1000 : i64, p50 = 1000 : i64, p95 = 1000 : i64, self = 1000 : i64, share = 1.0 : f64, source = "model/add", total = 1000 : i64, ts = 900 : i64}}>["model/add"])
#mm = loc(fused<{profiler_data = {fused_into = "model/dense/Relu"}}>["model/dense/MatMul"])
// LINALG-LABEL: func.func @main
// LINALG: tensor.empty() {profiler_data = {fused_into = "model/dense/Relu"}}
// LINALG: linalg.fill {{.*}}profiler_data = {fused_into = "model/dense/Relu"}
// LINALG: linalg.matmul {{.*}}profiler_data = {fused_into = "model/dense/Relu"}
// LINALG: tensor.empty() {profiler_data = {count = 2 : i64, dur = 1500 : i64, fanout = 2 : i64, max = 2000 : i64, {{.*}}self = 3000 : i64, share = 7.500000e-01 : f64, source = "model/dense/Relu", total = 3000 : i64
// LINALG: linalg.generic {{.*}}profiler_data = {count = 2 : i64, dur = 1500 : i64, fanout = 2 : i64, fused_sources = ["model/add"], max = 2000 : i64, {{.*}}source = "model/dense/Relu"
// LINALG: arith.maximumf
// LINALG-NOT: profiler_data
// LINALG: arith.addf
// LINALG-NOT: profiler_data
// LINALG: linalg.yield
// A source held as a fused one counts in the fan-out too (and once in sums).
// LINALG: arith.constant {profiler_data = {count = 1 : i64, dur = 1000 : i64, fanout = 2 : i64, {{.*}}share = 2.500000e-01 : f64, source = "model/add"
// LINALG: return
func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4x4xf32> loc(#mm)
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x4xf32>) -> tensor<4x4xf32> loc(#mm)
  %m = linalg.matmul ins(%x, %x : tensor<4x4xf32>, tensor<4x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32> loc(#mm)
  %e1 = tensor.empty() : tensor<4x4xf32> loc(#relu)
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<4x4xf32>) outs(%e1 : tensor<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %y = arith.maximumf %in, %zero : f32 loc(#relu)
    %z = arith.addf %y, %y : f32 loc(#add)
    linalg.yield %z : f32 loc(#relu)
  } -> tensor<4x4xf32> loc(#relu)
  %c = arith.constant 1.0 : f32 loc(#add)
  return %r : tensor<4x4xf32>
}
// The interface reads a record carried in the location when there is no
// attribute: the first op of the hottest source is found without
// materializing.
// HOT-LABEL: func.func @main
// HOT: tensor.empty() {profiler_hot = 1 : i64}
// HOT-NOT: profiler_hot
// Stripping removes the carried record and keeps the original location.
// STRIP-LABEL: func.func @main
// STRIP-NOT: profiler_data
// STRIP: loc("model/dense/Relu")
// STRIP-NOT: profiler_data

// SUMMARY: "format": "tfpgo.level_profile"
// SUMMARY: "annotated_ops": 6
// SUMMARY: "source_self_ps": 4000
// SUMMARY: "name": "model/dense/Relu",
// SUMMARY-NEXT: "self_ps": 3000,
// SUMMARY-NEXT: "total_ps": 3000,
// SUMMARY-NEXT: "count": 2,
// SUMMARY-NEXT: "ops": 2
// SUMMARY: "name": "model/add",
// SUMMARY-NEXT: "self_ps": 1000,
// SUMMARY-NEXT: "total_ps": 1000,
// SUMMARY-NEXT: "count": 1,
// SUMMARY-NEXT: "ops": 2

//--- stablehlo.mlir
// StableHLO (no dialect upstream: generic, unregistered) and an upstream op,
// matched by node name against op_profile.json. The profile has no entry for
// the MatMul the fused kernel swallowed (only the tf-level pass knows it was
// fused, which is why the flow carries records in locations).
// NAMES-LABEL: func.func @main
// NAMES: "stablehlo.dot"(%arg0, %arg0) : (
// NAMES: "stablehlo.maximum"{{.*}}profiler_data = {count = 2 : i64, {{.*}}fanout = 2 : i64, {{.*}}source = "model/dense/Relu"
// NAMES: arith.negf {{.*}}profiler_data = {count = 2 : i64, {{.*}}fanout = 2 : i64, {{.*}}source = "model/dense/Relu"
// NAMES: "stablehlo.unknown_name"
// NAMES-NOT: profiler_data
// NAMES: return
func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = "stablehlo.dot"(%x, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc(fused["MatMul:", "model/dense/MatMul"])
  %1 = "stablehlo.maximum"(%0, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc(fused["Relu:", "model/dense/Relu"])
  %2 = arith.negf %1 : tensor<4x4xf32> loc("model/dense/Relu")
  %3 = "stablehlo.unknown_name"(%2) : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("nobody")
  return %3 : tensor<4x4xf32>
}

//--- tosa.mlir
// TOSA ops answer the interface too.
#conv = loc(fused<{profiler_data = {count = 1 : i64, dur = 5 : i64, max = 5 : i64, min = 5 : i64, p50 = 5 : i64, p95 = 5 : i64, self = 5 : i64, share = 1.0 : f64, source = "net/Relu", total = 5 : i64, ts = 1 : i64}}>["net/Relu"])
// TOSA-LABEL: func.func @main
// TOSA: tosa.clamp {{.*}}profiler_data = {count = 1 : i64, dur = 5 : i64, fanout = 1 : i64, {{.*}}share = 1.000000e+00 : f64, source = "net/Relu"
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tosa.clamp %x {min_val = 0.0 : f32, max_val = 6.0 : f32} : (tensor<4xf32>) -> tensor<4xf32> loc(#conv)
  return %0 : tensor<4xf32>
}

//--- missing.mlir
// expected-error@+1 {{absent.json': No such file or directory}}
module {}

//--- unwritable.mlir
// expected-error@+1 {{cannot write level summary}}
module {}
