// The weights tf-profile-branch-weights sets on cf.cond_br reach LLVM IR: the
// upstream lowering keeps them on llvm.cond_br, and the translation emits
// them as branch_weights metadata. The successors' ops here carry profiles
// the way tf-profile-materialize-annotations leaves them on lowered ops.
// RUN: %tfpgo_opt %s --tf-profile-branch-weights | mlir-opt --convert-to-llvm \
// RUN:   | mlir-translate --mlir-to-llvmir | FileCheck %s

// CHECK-LABEL: define i32 @select
// CHECK: br i1 %{{.*}}, label %{{.*}}, label %{{.*}}, !prof ![[W:[0-9]+]]
// CHECK: ![[W]] = !{!"branch_weights", i32 3, i32 1}
func.func @select(%c: i1, %x: i32) -> i32 {
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %0 = arith.muli %x, %x {profiler_data = {count = 3 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}} : i32
  return %0 : i32
^bb2:
  %1 = arith.addi %x, %x {profiler_data = {count = 1 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.000000e-01 : f64, total = 1 : i64, ts = 0 : i64}} : i32
  return %1 : i32
}
