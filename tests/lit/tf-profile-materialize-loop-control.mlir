// An scf.for IREE made of a loop whose cond compares a counter with a bound:
// the compare and the increment are gone into its bounds and step, and their
// records put on the scf.for (tfpgo.mlir.merged_work). The loop carries them
// and takes none of its body's: a loop or a branch does not absorb its
// regions' records, as a linalg.generic does its body's.
//
// RUN: %tfpgo_opt %s --tf-profile-materialize-annotations | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK: scf.for
// CHECK: arith.addf {{.*}}profiler_data = {{{.*}}self = 500 : i64, {{.*}}source = "w/add"
// CHECK: scf.yield
// CHECK-NEXT: } {profiler_data = {{{.*}}fused_parts = [100], fused_sources = ["w/add_1"], {{.*}}self = 400 : i64, {{.*}}source = "w/Less"
func.func @main(%x: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %r = scf.for %i = %c0 to %c6 step %c1 iter_args(%acc = %x) -> (f32) {
    %next = arith.addf %acc, %x : f32 loc(fused<{profiler_data = {count = 6 : i64, dur = 83 : i64, max = 83 : i64, min = 83 : i64, p50 = 83 : i64, p95 = 83 : i64, self = 500 : i64, share = 0.1 : f64, source = "w/add", total = 500 : i64, ts = 0 : i64}}>["w/add"])
    scf.yield %next : f32
  } loc(fused[fused<{profiler_data = {count = 7 : i64, dur = 42 : i64, max = 42 : i64, min = 42 : i64, p50 = 42 : i64, p95 = 42 : i64, self = 300 : i64, share = 0.1 : f64, source = "w/Less", total = 300 : i64, ts = 0 : i64}}>["w/Less"], fused<{profiler_data = {count = 6 : i64, dur = 16 : i64, max = 16 : i64, min = 16 : i64, p50 = 16 : i64, p95 = 16 : i64, self = 100 : i64, share = 0.1 : f64, source = "w/add_1", total = 100 : i64, ts = 0 : i64}}>["w/add_1"]])
  return %r : f32
}
