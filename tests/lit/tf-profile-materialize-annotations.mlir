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
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/twice.mlir \
// RUN:   --tf-profile-materialize-annotations="path-to-profile=%S/Inputs/op_profile_one_node_twice.json" \
// RUN:   | FileCheck %s --check-prefix=TWICE
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/linalg.mlir \
// RUN:   --tf-profile-materialize-annotations --tf-profile-mark-hotspots="top-k=1" \
// RUN:   | FileCheck %s --check-prefix=CHARGED-HOT
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/split.mlir --tf-profile-materialize-annotations \
// RUN:   | FileCheck %s --check-prefix=SPLIT
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/tosa.mlir --tf-profile-materialize-annotations \
// RUN:   | FileCheck %s --check-prefix=TOSA
// RUN: %tfpgo_opt --allow-unregistered-dialect --mlir-print-debuginfo %t/inlined.mlir \
// RUN:   --tf-profile-materialize-annotations --tf-profile-export-op-graph="output=%t.inlined.json" \
// RUN:   | FileCheck %s --check-prefix=INLINED
// RUN: FileCheck %s --check-prefix=INLINED-GRAPH < %t.inlined.json
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
// What IREE makes of it: the Relu became tensor.empty + linalg.generic, the
// MatMul a fill + matmul whose records say "fused into the Relu's kernel" (so
// they carry the Relu as their source); an elementwise fusion left another
// source's location on an op inside the generic: fused_sources. Each source's
// time goes to its carriers that do the most work: the kernel's to the matmul
// (a reduction), the add's to the generic; constants, empty tensors and a fill
// of a constant are charged nothing but keep the source's whole time in
// `source_self`.
#relu = loc(fused<{profiler_data = {count = 2 : i64, dur = 1500 : i64, max = 2000 : i64, min = 1000 : i64, p50 = 1000 : i64, p95 = 2000 : i64, self = 3000 : i64, share = 1.0 : f64, source = "model/dense/Relu", total = 3000 : i64, ts = 100 : i64}}>["model/dense/Relu"])
#add = loc(fused<{profiler_data = {count = 1 : i64, dur = 1000 : i64, max = 1000 : i64, min = 1000 : i64, p50 = 1000 : i64, p95 = 1000 : i64, self = 1000 : i64, share = 1.0 : f64, source = "model/add", total = 1000 : i64, ts = 900 : i64}}>["model/add"])
#mm = loc(fused<{profiler_data = {fused_into = "model/dense/Relu"}}>["model/dense/MatMul"])
// LINALG-LABEL: func.func @main
// LINALG: tensor.empty() {profiler_data = {count = 2 : i64, dur = 0 : i64, fanout = 5 : i64, {{.*}}self = 0 : i64, share = 0.000000e+00 : f64, source = "model/dense/Relu", source_self = 3000 : i64, total = 0 : i64
// LINALG: linalg.fill {profiler_data = {{{.*}}self = 0 : i64, {{.*}}source = "model/dense/Relu", source_self = 3000 : i64
// LINALG: linalg.matmul {profiler_data = {count = 2 : i64, dur = 1500 : i64, fanout = 5 : i64, {{.*}}self = 3000 : i64, share = 7.500000e-01 : f64, source = "model/dense/Relu", source_self = 3000 : i64, total = 3000 : i64
// LINALG: tensor.empty() {profiler_data = {{{.*}}self = 0 : i64
// The generic holds the Relu (charged 0: the matmul did the kernel's work) and
// the add fused into its body (charged its 1000 ps).
// LINALG: linalg.generic {{.*}}profiler_data = {count = 2 : i64, dur = 500 : i64, fanout = 5 : i64, fused_parts = [1000], fused_sources = ["model/add"], {{.*}}self = 1000 : i64, share = 2.500000e-01 : f64, source = "model/dense/Relu", source_self = 3000 : i64, total = 1000 : i64
// LINALG: arith.maximumf
// LINALG-NOT: profiler_data
// LINALG: arith.addf
// LINALG-NOT: profiler_data
// LINALG: linalg.yield
// A source held as a fused one counts in the fan-out too; the constant
// computes nothing.
// LINALG: arith.constant {profiler_data = {count = 1 : i64, dur = 0 : i64, fanout = 2 : i64, {{.*}}self = 0 : i64, share = 0.000000e+00 : f64, source = "model/add", source_self = 1000 : i64
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
// Once materialized, the hot mark follows the charged time: the matmul that
// did the kernel's work, not the empty tensor that comes first.
// CHARGED-HOT-LABEL: func.func @main
// CHARGED-HOT-NOT: profiler_hot
// CHARGED-HOT: linalg.matmul {profiler_data = {{{.*}}}, profiler_hot = 1 : i64}
// CHARGED-HOT-NOT: profiler_hot
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
// SUMMARY-NEXT: "ops": 5,
// SUMMARY-NEXT: "charged_ops": 1
// SUMMARY: "name": "model/add",
// SUMMARY-NEXT: "self_ps": 1000,
// SUMMARY-NEXT: "total_ps": 1000,
// SUMMARY-NEXT: "count": 1,
// SUMMARY-NEXT: "ops": 2,
// SUMMARY-NEXT: "charged_ops": 1

//--- stablehlo.mlir
// StableHLO (no dialect upstream: generic, unregistered) and an upstream op,
// matched by node name against op_profile.json. The profile has no entry for
// the MatMul the fused kernel swallowed (only the tf-level pass knows it was
// fused, which is why the flow carries records in locations).
// NAMES-LABEL: func.func @main
// NAMES: "stablehlo.dot"(%arg0, %arg0) : (
// Two ops compute the Relu: its 3000 ps in two exact parts.
// NAMES: "stablehlo.maximum"{{.*}}profiler_data = {count = 2 : i64, {{.*}}fanout = 2 : i64, {{.*}}self = 1500 : i64, {{.*}}source = "model/dense/Relu", source_self = 3000 : i64
// NAMES: arith.negf {{.*}}profiler_data = {count = 2 : i64, {{.*}}fanout = 2 : i64, {{.*}}self = 1500 : i64, {{.*}}source = "model/dense/Relu", source_self = 3000 : i64
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

//--- twice.mlir
// Two runtime entries that landed on one node (Grappler's add-tree rewrite
// ran it as two kernels), renamed to it: one record, counts and times summed.
// TWICE: "stablehlo.add"{{.*}}profiler_data = {count = 3 : i64, {{.*}}max = 600 : i64, min = 400 : i64, {{.*}}self = 1500 : i64, {{.*}}source = "model/norm/add_2", source_self = 1500 : i64, total = 1500 : i64, ts = 50 : i64
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "stablehlo.add"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("model/norm/add_2")
  return %0 : tensor<4xf32>
}

//--- split.mlir
// Exact integer parts: 1001 ps over three elementwise ops of one source are
// 334 + 334 + 333. The broadcast of a constant computes nothing. Of the
// StableHLO ops of a Mean, the reduce carries the time, not the division by
// the count that follows it.
#three = loc(fused<{profiler_data = {count = 1 : i64, dur = 1001 : i64, max = 1001 : i64, min = 1001 : i64, p50 = 1001 : i64, p95 = 1001 : i64, self = 1001 : i64, share = 1.0 : f64, source = "net/gelu", total = 1001 : i64, ts = 1 : i64}}>["net/gelu"])
#mean = loc(fused<{profiler_data = {count = 1 : i64, dur = 7 : i64, max = 7 : i64, min = 7 : i64, p50 = 7 : i64, p95 = 7 : i64, self = 7 : i64, share = 1.0 : f64, source = "net/Mean", total = 7 : i64, ts = 1 : i64}}>["net/Mean"])
// SPLIT-LABEL: func.func @main
// SPLIT: "stablehlo.constant"(){{.*}}self = 0 : i64, {{.*}}source = "net/gelu", source_self = 1001 : i64
// SPLIT: "stablehlo.broadcast_in_dim"{{.*}}self = 0 : i64, {{.*}}source = "net/gelu"
// SPLIT: "stablehlo.multiply"{{.*}}self = 334 : i64, {{.*}}source = "net/gelu"
// SPLIT: "stablehlo.tanh"{{.*}}self = 334 : i64, {{.*}}source = "net/gelu"
// SPLIT: "stablehlo.add"{{.*}}self = 333 : i64, {{.*}}source = "net/gelu"
// SPLIT: "stablehlo.reduce"
// SPLIT: "stablehlo.add"
// SPLIT-NOT: profiler_data
// SPLIT: }) {{.*}}self = 7 : i64, {{.*}}source = "net/Mean"
// SPLIT: "stablehlo.divide"{{.*}}self = 0 : i64, {{.*}}source = "net/Mean"
func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %c = "stablehlo.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32> loc(#three)
  %b = "stablehlo.broadcast_in_dim"(%c) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4xf32> loc(#three)
  %0 = "stablehlo.multiply"(%x, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc(#three)
  %1 = "stablehlo.tanh"(%0) : (tensor<4xf32>) -> tensor<4xf32> loc(#three)
  %2 = "stablehlo.add"(%1, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc(#three)
  %s = "stablehlo.reduce"(%2, %c) ({
  ^bb0(%a: tensor<f32>, %y: tensor<f32>):
    %t = "stablehlo.add"(%a, %y) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc(#mean)
    "stablehlo.return"(%t) : (tensor<f32>) -> () loc(#mean)
  }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32> loc(#mean)
  %m = "stablehlo.divide"(%s, %c) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc(#mean)
  return %m : tensor<f32>
}

//--- inlined.mlir
// A loop body inlined by the XLA bridge route: its ops' records sit inside the
// callee of a CallSiteLoc. The linalg.generic carries the record once; the ops
// of its body keep no copy of it, in their attributes or their locations, so
// the op graph charges the source once (it charged it three times).
#less = loc(fused<{profiler_data = {count = 5 : i64, dur = 9 : i64, max = 9 : i64, min = 9 : i64, p50 = 9 : i64, p95 = 9 : i64, self = 45 : i64, share = 1.0 : f64, source = "w/Less", total = 45 : i64, ts = 1 : i64}}>["w/Less"])
#caller = loc("w")
// INLINED-LABEL: func.func @main
// INLINED: tensor.empty() {profiler_data = {{.*}}self = 0 : i64
// INLINED: linalg.generic {{.*}} attrs = {profiler_data = {{.*}}self = 45 : i64, {{.*}}source = "w/Less"
// INLINED-NOT: profiler_data
// INLINED: arith.cmpi slt
// INLINED-NOT: profiler_data
// INLINED: #[[LESS:loc[0-9]+]] = loc("w/Less")
// INLINED-NOT: profiler_data
// INLINED: loc(callsite(#[[LESS]] at
// INLINED-GRAPH: "op":"linalg.generic"{{.*}}"self":45
// INLINED-GRAPH-NOT: "self":45
func.func @main(%x: tensor<4xi32>, %y: tensor<4xi32>) -> tensor<4xi1> {
  %e = tensor.empty() : tensor<4xi1> loc(callsite(#less at #caller))
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x, %y : tensor<4xi32>, tensor<4xi32>) outs(%e : tensor<4xi1>) {
  ^bb0(%a: i32, %b: i32, %o: i1):
    %c = arith.cmpi slt, %a, %b : i32 loc(callsite(#less at #caller))
    linalg.yield %c : i1 loc(callsite(#less at #caller))
  } -> tensor<4xi1> loc(callsite(#less at #caller))
  return %0 : tensor<4xi1>
}

//--- tosa.mlir
// TOSA ops answer the interface too.
#conv = loc(fused<{profiler_data = {count = 1 : i64, dur = 5 : i64, max = 5 : i64, min = 5 : i64, p50 = 5 : i64, p95 = 5 : i64, self = 5 : i64, share = 1.0 : f64, source = "net/Relu", total = 5 : i64, ts = 1 : i64}}>["net/Relu"])
// TOSA-LABEL: func.func @main
// TOSA: tosa.clamp {{.*}}profiler_data = {count = 1 : i64, dur = 5 : i64, fanout = 1 : i64, {{.*}}share = 1.000000e+00 : f64, source = "net/Relu", source_self = 5 : i64
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
