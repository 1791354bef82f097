// Hot 1x1 convolutions that the compiled program runs far slower than
// TensorFlow become (slice +) dot_general; cold ones, ones near their
// TensorFlow time and other forms stay (tf-profile-guided-conv-to-dot).
// With kernels=kxk the other windows become shifted dot_generals, summed.
// StableHLO is unregistered in tfpgo-opt: the pass matches by name.
//
// RUN: split-file %s %t
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/convs.mlir \
// RUN:   --tf-profile-guided-conv-to-dot="target-profile=%S/Inputs/conv_to_dot_iree_profile.json report-output=%t.report.json" \
// RUN:   | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.report.json
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/convs.mlir -verify-diagnostics \
// RUN:   --tf-profile-guided-conv-to-dot="target-profile=%S/Inputs/conv_to_dot_iree_profile.json remarks=true" -o /dev/null
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/convs.mlir \
// RUN:   --tf-profile-guided-conv-to-dot="target-profile=%S/Inputs/conv_to_dot_iree_profile.json min-slowdown=50" \
// RUN:   | FileCheck %s --check-prefix=STRICT
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/carried.mlir \
// RUN:   --tf-profile-guided-conv-to-dot="target-profile=%S/Inputs/conv_to_dot_iree_profile.json" \
// RUN:   --tf-profile-materialize-annotations | FileCheck %s --check-prefix=CHARGED
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/spatial.mlir \
// RUN:   --tf-profile-guided-conv-to-dot="target-profile=%S/Inputs/conv_to_dot_iree_profile.json kernels=kxk report-output=%t.kxk.json" \
// RUN:   | FileCheck %s --check-prefix=KXK
// RUN: FileCheck %s --check-prefix=KXK-REPORT < %t.kxk.json
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/spatial.mlir -verify-diagnostics \
// RUN:   --tf-profile-guided-conv-to-dot="target-profile=%S/Inputs/conv_to_dot_iree_profile.json kernels=kxk remarks=true" -o /dev/null
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/spatial.mlir \
// RUN:   --tf-profile-guided-conv-to-dot="target-profile=%S/Inputs/conv_to_dot_iree_profile.json kernels=kxk sources=block/down2/BiasAdd,block/deep/BiasAdd report-output=%t.listed.json" \
// RUN:   | FileCheck %s --check-prefix=LISTED
// RUN: FileCheck %s --check-prefix=LISTED-REPORT < %t.listed.json
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/bad_kernels.mlir -verify-diagnostics \
// RUN:   --tf-profile-guided-conv-to-dot="target-profile=%S/Inputs/conv_to_dot_iree_profile.json kernels=3x3"
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/no_profile.mlir -verify-diagnostics \
// RUN:   --tf-profile-guided-conv-to-dot
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/missing.mlir -verify-diagnostics \
// RUN:   --tf-profile-guided-conv-to-dot="target-profile=%t/absent.json"
// RUN: %tfpgo_opt --allow-unregistered-dialect %t/wrong_format.mlir -verify-diagnostics \
// RUN:   --tf-profile-guided-conv-to-dot="target-profile=%S/Inputs/annotate_op_profile.json"

//--- convs.mlir
// CHECK-LABEL: func.func @block
func.func @block(%x: tensor<2x8x8x16xf32>, %w: tensor<1x1x16x32xf32>, %w3: tensor<3x3x16x16xf32>, %y: tensor<2x4x4x32xf32>) -> (tensor<2x4x4x32xf32>, tensor<2x8x8x32xf32>, tensor<2x6x6x16xf32>, tensor<2x8x8x32xf32>, tensor<2x8x8x32xf32>, tensor<2x10x10x32xf32>) {
  // Hot (40%) and 30x slower than TensorFlow, strided: slice + dot_general.
  // CHECK: %[[KEPT:.*]] = "stablehlo.slice"(%arg0) <{limit_indices = array<i64: 2, 8, 8, 16>, start_indices = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 2, 2, 1>}> : (tensor<2x8x8x16xf32>) -> tensor<2x4x4x16xf32>
  // CHECK: %[[MATRIX:.*]] = "stablehlo.reshape"(%arg1) : (tensor<1x1x16x32xf32>) -> tensor<16x32xf32>
  // CHECK: %[[SHORTCUT:.*]] = "stablehlo.dot_general"(%[[KEPT]], %[[MATRIX]]) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [3], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> {profiler_data = {{{.*}}source = "block/shortcut/BiasAdd"{{.*}}}, profiler_hot = 1 : i64} : (tensor<2x4x4x16xf32>, tensor<16x32xf32>) -> tensor<2x4x4x32xf32>
  // CHECK-NOT: stablehlo.convolution"(%arg0, %arg1){{.*}}window_strides = array<i64: 2, 2>
  // STRICT: "stablehlo.convolution"(%arg0, %arg1){{.*}}window_strides = array<i64: 2, 2>
  // expected-remark@+1 {{rewrote block/shortcut/BiasAdd: share 40.00%, compiled/TensorFlow 30.0x, now slice + dot_general}}
  %0 = "stablehlo.convolution"(%x, %w) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, padding = dense<0> : tensor<2x2xi64>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>], rhs_dilation = array<i64: 1, 1>, window_strides = array<i64: 2, 2>}> {profiler_data = {count = 1 : i64, dur = 40 : i64, max = 40 : i64, min = 40 : i64, p50 = 40 : i64, p95 = 40 : i64, self = 40 : i64, share = 4.000000e-01 : f64, source = "block/shortcut/BiasAdd", source_self = 40 : i64, total = 40 : i64, ts = 0 : i64}, profiler_hot = 1 : i64} : (tensor<2x8x8x16xf32>, tensor<1x1x16x32xf32>) -> tensor<2x4x4x32xf32>
  // Unit strides, hot and 3x slower: no slice.
  // CHECK: %[[MATRIX2:.*]] = "stablehlo.reshape"(%arg1) : (tensor<1x1x16x32xf32>) -> tensor<16x32xf32>
  // CHECK: %[[EXPAND:.*]] = "stablehlo.dot_general"(%arg0, %[[MATRIX2]]) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [3], rhs_contracting_dimensions = [0]>}> {profiler_data = {{{.*}}source = "block/expand/BiasAdd"{{.*}}}} : (tensor<2x8x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x8x32xf32>
  // expected-remark@+1 {{rewrote block/expand/BiasAdd: share 20.00%, compiled/TensorFlow 3.0x, now dot_general}}
  %1 = "stablehlo.convolution"(%x, %w) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64}> {profiler_data = {count = 1 : i64, dur = 20 : i64, max = 20 : i64, min = 20 : i64, p50 = 20 : i64, p95 = 20 : i64, self = 20 : i64, share = 2.000000e-01 : f64, source = "block/expand/BiasAdd", source_self = 20 : i64, total = 20 : i64, ts = 0 : i64}} : (tensor<2x8x8x16xf32>, tensor<1x1x16x32xf32>) -> tensor<2x8x8x32xf32>
  // Hot and slow, but 3x3: kept, with the reason.
  // CHECK: "stablehlo.convolution"(%arg0, %arg2)
  // expected-remark@+1 {{kept block/spatial/BiasAdd: share 15.00%, compiled/TensorFlow 4.0x: kernel is not 1x1 (kernels=kxk rewrites it)}}
  %2 = "stablehlo.convolution"(%x, %w3) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, padding = dense<0> : tensor<2x2xi64>}> {profiler_data = {count = 1 : i64, dur = 15 : i64, max = 15 : i64, min = 15 : i64, p50 = 15 : i64, p95 = 15 : i64, self = 15 : i64, share = 1.500000e-01 : f64, source = "block/spatial/BiasAdd", source_self = 15 : i64, total = 15 : i64, ts = 0 : i64}} : (tensor<2x8x8x16xf32>, tensor<3x3x16x16xf32>) -> tensor<2x6x6x16xf32>
  // Hot but near TensorFlow's time (1.1x): kept.
  // CHECK: "stablehlo.convolution"(%arg0, %arg1){{.*}}source = "block/fast/BiasAdd"
  // expected-remark@+1 {{kept block/fast/BiasAdd: share 15.00%, compiled/TensorFlow 1.1x: within min-slowdown of TensorFlow's time}}
  %3 = "stablehlo.convolution"(%x, %w) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64}> {profiler_data = {count = 1 : i64, dur = 15 : i64, max = 15 : i64, min = 15 : i64, p50 = 15 : i64, p95 = 15 : i64, self = 15 : i64, share = 1.500000e-01 : f64, source = "block/fast/BiasAdd", source_self = 15 : i64, total = 15 : i64, ts = 0 : i64}} : (tensor<2x8x8x16xf32>, tensor<1x1x16x32xf32>) -> tensor<2x8x8x32xf32>
  // 30x slower but cold (0.5%): not even considered.
  // CHECK: "stablehlo.convolution"(%arg0, %arg1){{.*}}source = "block/tiny/BiasAdd"
  %4 = "stablehlo.convolution"(%x, %w) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64}> {profiler_data = {count = 1 : i64, dur = 1 : i64, max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 5.000000e-03 : f64, source = "block/tiny/BiasAdd", source_self = 1 : i64, total = 1 : i64, ts = 0 : i64}} : (tensor<2x8x8x16xf32>, tensor<1x1x16x32xf32>) -> tensor<2x8x8x32xf32>
  // Hot, in the slow dispatch, but padded: kept.
  // CHECK: "stablehlo.convolution"(%arg0, %arg1){{.*}}padding = dense<1>
  // expected-remark@+1 {{kept block/add/Add: share 10.00%, compiled/TensorFlow 120.0x: padded}}
  %5 = "stablehlo.convolution"(%x, %w) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, padding = dense<1> : tensor<2x2xi64>}> {profiler_data = {count = 1 : i64, dur = 10 : i64, max = 10 : i64, min = 10 : i64, p50 = 10 : i64, p95 = 10 : i64, self = 10 : i64, share = 1.000000e-01 : f64, source = "block/add/Add", source_self = 10 : i64, total = 10 : i64, ts = 0 : i64}} : (tensor<2x8x8x16xf32>, tensor<1x1x16x32xf32>) -> tensor<2x10x10x32xf32>
  // CHECK: return %[[SHORTCUT]], %[[EXPAND]]
  return %0, %1, %2, %3, %4, %5 : tensor<2x4x4x32xf32>, tensor<2x8x8x32xf32>, tensor<2x6x6x16xf32>, tensor<2x8x8x32xf32>, tensor<2x8x8x32xf32>, tensor<2x10x10x32xf32>
}

// REPORT: "format": "tfpgo.rewrites"
// REPORT: "pass": "tf-profile-guided-conv-to-dot"
// REPORT: "min_share": 0.01
// REPORT: "min_slowdown": 2
// REPORT: "rewritten": [
// REPORT: "source": "block/shortcut/BiasAdd"
// REPORT-NEXT: "share": 0.4
// REPORT-NEXT: "tf_ps": 100
// REPORT-NEXT: "target_ps": 1200
// REPORT-NEXT: "tf_execution_ps": 40
// REPORT-NEXT: "target_invocation_ps": 1200
// REPORT-NEXT: "slowdown": 30
// REPORT: "main_dispatch_0_reduction"
// REPORT: "form": "slice + dot_general"
// REPORT-NEXT: "input": "2x8x8x16xf32"
// REPORT-NEXT: "kernel": "1x1x16x32xf32"
// REPORT: "source": "block/expand/BiasAdd"
// REPORT: "form": "dot_general"
// REPORT: "declined": [
// REPORT: "source": "block/spatial/BiasAdd"
// REPORT: "reason": "kernel is not 1x1 (kernels=kxk rewrites it)"
// REPORT: "source": "block/fast/BiasAdd"
// REPORT: "reason": "within min-slowdown of TensorFlow's time"
// REPORT-NOT: block/tiny
// REPORT: "reason": "padded"

//--- carried.mlir
// The profile carried in the location (a lowering's form) travels to the new
// ops; re-materialized, the dot_general that does the work is charged all of
// it, the slice and the reshape nothing.
// CHARGED-LABEL: func.func @carried
// CHARGED: "stablehlo.slice"{{.*}}profiler_data = {{{.*}}fanout = 3 : i64{{.*}}self = 0 : i64
// CHARGED: "stablehlo.reshape"{{.*}}profiler_data = {{{.*}}self = 0 : i64
// CHARGED: "stablehlo.dot_general"{{.*}}profiler_data = {{{.*}}self = 40 : i64{{.*}}source = "block/shortcut/BiasAdd", source_self = 40 : i64
func.func @carried(%x: tensor<2x8x8x16xf32>, %w: tensor<1x1x16x32xf32>) -> tensor<2x4x4x32xf32> {
  %0 = "stablehlo.convolution"(%x, %w) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, window_strides = array<i64: 2, 2>}> : (tensor<2x8x8x16xf32>, tensor<1x1x16x32xf32>) -> tensor<2x4x4x32xf32> loc(#shortcut)
  return %0 : tensor<2x4x4x32xf32>
}
#shortcut = loc(fused<{profiler_data = {count = 1 : i64, dur = 40 : i64, max = 40 : i64, min = 40 : i64, p50 = 40 : i64, p95 = 40 : i64, self = 40 : i64, share = 4.000000e-01 : f64, source = "block/shortcut/BiasAdd", total = 40 : i64, ts = 0 : i64}}>["block/shortcut/BiasAdd"])

//--- spatial.mlir
// KXK-LABEL: func.func @spatial
func.func @spatial(%x: tensor<1x4x4x2xf32>, %w3: tensor<3x3x2x3xf32>, %w: tensor<1x1x2x3xf32>) -> (tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x4x4x3xf32>, tensor<1x2x2x3xf32>, tensor<1x4x4x3xf32>) {
  // Hot (30%) and 9x slower, 3x3 with padding 1 and strides 2: zero padding,
  // then per tap (i, j) the pixels i + 2r, j + 2c of the padded input times
  // the tap's 2x3 matrix; nine products, eight adds, the last one annotated.
  // KXK: %[[ZERO:.*]] = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}>
  // KXK: %[[PADDED:.*]] = "stablehlo.pad"(%arg0, %[[ZERO]]) <{edge_padding_high = array<i64: 0, 1, 1, 0>, edge_padding_low = array<i64: 0, 1, 1, 0>, interior_padding = array<i64: 0, 0, 0, 0>}> : (tensor<1x4x4x2xf32>, tensor<f32>) -> tensor<1x6x6x2xf32>
  // KXK: %[[TAP00:.*]] = "stablehlo.slice"(%[[PADDED]]) <{limit_indices = array<i64: 1, 3, 3, 2>, start_indices = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 2, 2, 1>}> : (tensor<1x6x6x2xf32>) -> tensor<1x2x2x2xf32>
  // KXK: %[[W00:.*]] = "stablehlo.slice"(%arg1) <{limit_indices = array<i64: 1, 1, 2, 3>, start_indices = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1, 1, 1>}> : (tensor<3x3x2x3xf32>) -> tensor<1x1x2x3xf32>
  // KXK: %[[M00:.*]] = "stablehlo.reshape"(%[[W00]]) : (tensor<1x1x2x3xf32>) -> tensor<2x3xf32>
  // KXK: %[[P00:.*]] = "stablehlo.dot_general"(%[[TAP00]], %[[M00]]) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [3], rhs_contracting_dimensions = [0]>}> : (tensor<1x2x2x2xf32>, tensor<2x3xf32>) -> tensor<1x2x2x3xf32>
  // KXK: %[[TAP01:.*]] = "stablehlo.slice"(%[[PADDED]]) <{limit_indices = array<i64: 1, 3, 4, 2>, start_indices = array<i64: 0, 0, 1, 0>
  // KXK: %[[P01:.*]] = "stablehlo.dot_general"(%[[TAP01]]
  // KXK: %[[S01:.*]] = "stablehlo.add"(%[[P00]], %[[P01]])
  // KXK-COUNT-6: "stablehlo.dot_general"
  // KXK: %[[TAP22:.*]] = "stablehlo.slice"(%[[PADDED]]) <{limit_indices = array<i64: 1, 5, 5, 2>, start_indices = array<i64: 0, 2, 2, 0>, strides = array<i64: 1, 2, 2, 1>}>
  // KXK: %[[W22:.*]] = "stablehlo.slice"(%arg1) <{limit_indices = array<i64: 3, 3, 2, 3>, start_indices = array<i64: 2, 2, 0, 0>
  // KXK: %[[P22:.*]] = "stablehlo.dot_general"(%[[TAP22]]
  // KXK: %[[DOWN:.*]] = "stablehlo.add"(%{{.*}}, %[[P22]]) {profiler_data = {{{.*}}source = "block/down/BiasAdd"{{.*}}}, profiler_hot = 1 : i64}
  // KXK-NOT: "stablehlo.convolution"(%arg0, %arg1)
  // expected-remark@+1 {{rewrote block/down/BiasAdd: share 30.00%, compiled/TensorFlow 9.0x, now pad + 9 shifted slices + dot_generals, summed}}
  %0 = "stablehlo.convolution"(%x, %w3) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, padding = dense<1> : tensor<2x2xi64>, rhs_dilation = array<i64: 1, 1>, window_strides = array<i64: 2, 2>}> {profiler_data = {count = 1 : i64, dur = 30 : i64, max = 30 : i64, min = 30 : i64, p50 = 30 : i64, p95 = 30 : i64, self = 30 : i64, share = 3.000000e-01 : f64, source = "block/down/BiasAdd", source_self = 30 : i64, total = 30 : i64, ts = 0 : i64}, profiler_hot = 1 : i64} : (tensor<1x4x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<1x2x2x3xf32>
  // Its dispatch took 52 against the op's 20, but it ran twice a run (IREE's
  // one executable for two identical sites): an invocation takes 26, 1.3x
  // one TensorFlow execution, within min-slowdown.
  // KXK: "stablehlo.convolution"(%arg0, %arg1){{.*}}source = "block/deep/BiasAdd"
  // expected-remark@+1 {{kept block/deep/BiasAdd: share 20.00%, compiled/TensorFlow 1.3x: within min-slowdown of TensorFlow's time}}
  %1 = "stablehlo.convolution"(%x, %w3) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, padding = dense<1> : tensor<2x2xi64>, window_strides = array<i64: 2, 2>}> {profiler_data = {count = 1 : i64, dur = 20 : i64, max = 20 : i64, min = 20 : i64, p50 = 20 : i64, p95 = 20 : i64, self = 20 : i64, share = 2.000000e-01 : f64, source = "block/deep/BiasAdd", source_self = 20 : i64, total = 20 : i64, ts = 0 : i64}} : (tensor<1x4x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<1x2x2x3xf32>
  // Hot and slow, but 1x1: the other run's kind.
  // KXK: "stablehlo.convolution"(%arg0, %arg2)
  // expected-remark@+1 {{kept block/expand/BiasAdd: share 20.00%, compiled/TensorFlow 3.0x: kernel is 1x1 (kernels=1x1 rewrites it)}}
  %2 = "stablehlo.convolution"(%x, %w) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64}> {profiler_data = {count = 1 : i64, dur = 20 : i64, max = 20 : i64, min = 20 : i64, p50 = 20 : i64, p95 = 20 : i64, self = 20 : i64, share = 2.000000e-01 : f64, source = "block/expand/BiasAdd", source_self = 20 : i64, total = 20 : i64, ts = 0 : i64}} : (tensor<1x4x4x2xf32>, tensor<1x1x2x3xf32>) -> tensor<1x4x4x3xf32>
  // No dispatch names it, but it has block/down's form: IREE ran both as one
  // executable, whose invocation is 18x this op's TensorFlow execution.
  // KXK: %[[DOWN2:.*]] = "stablehlo.add"({{.*}}) {profiler_data = {{{.*}}source = "block/down2/BiasAdd"
  // expected-remark@+1 {{rewrote block/down2/BiasAdd: share 15.00%, compiled/TensorFlow 18.0x (in the dispatches of block/down/BiasAdd, same form), now pad + 9 shifted slices + dot_generals, summed}}
  %3 = "stablehlo.convolution"(%x, %w3) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, padding = dense<1> : tensor<2x2xi64>, rhs_dilation = array<i64: 1, 1>, window_strides = array<i64: 2, 2>}> {profiler_data = {count = 1 : i64, dur = 15 : i64, max = 15 : i64, min = 15 : i64, p50 = 15 : i64, p95 = 15 : i64, self = 15 : i64, share = 1.500000e-01 : f64, source = "block/down2/BiasAdd", source_self = 15 : i64, total = 15 : i64, ts = 0 : i64}} : (tensor<1x4x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<1x2x2x3xf32>
  // No dispatch names it and no convolution of its form has one: kept.
  // KXK: "stablehlo.convolution"(%arg0, %arg1){{.*}}source = "block/other/BiasAdd"
  // expected-remark@+1 {{kept block/other/BiasAdd: share 10.00%: no dispatch of the target profile names its source, nor that of a convolution of the same form}}
  %4 = "stablehlo.convolution"(%x, %w3) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, padding = dense<1> : tensor<2x2xi64>}> {profiler_data = {count = 1 : i64, dur = 10 : i64, max = 10 : i64, min = 10 : i64, p50 = 10 : i64, p95 = 10 : i64, self = 10 : i64, share = 1.000000e-01 : f64, source = "block/other/BiasAdd", source_self = 10 : i64, total = 10 : i64, ts = 0 : i64}} : (tensor<1x4x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<1x4x4x3xf32>
  // KXK: return %[[DOWN]], %{{.*}}, %{{.*}}, %[[DOWN2]]
  return %0, %1, %2, %3, %4 : tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>, tensor<1x4x4x3xf32>, tensor<1x2x2x3xf32>, tensor<1x4x4x3xf32>
}

// sources= narrows the rewrite: block/down is left as it was, block/down2
// rewritten; block/deep, listed, is still within min-slowdown.
// LISTED-LABEL: func.func @spatial
// LISTED: "stablehlo.convolution"(%arg0, %arg1){{.*}}source = "block/down/BiasAdd"
// LISTED: "stablehlo.convolution"(%arg0, %arg1){{.*}}source = "block/deep/BiasAdd"
// LISTED: "stablehlo.add"({{.*}}) {profiler_data = {{{.*}}source = "block/down2/BiasAdd"
// LISTED-REPORT: "rewritten": [
// LISTED-REPORT: "source": "block/down2/BiasAdd"
// LISTED-REPORT: "result": "1x2x2x3xf32"
// LISTED-REPORT: "declined": [
// LISTED-REPORT: "source": "block/down/BiasAdd"
// LISTED-REPORT: "reason": "not among sources="
// LISTED-REPORT: "source": "block/deep/BiasAdd"
// LISTED-REPORT: "reason": "within min-slowdown of TensorFlow's time"

// KXK-REPORT: "kernels": "kxk"
// KXK-REPORT: "rewritten": [
// KXK-REPORT: "source": "block/down/BiasAdd"
// KXK-REPORT: "form": "pad + 9 shifted slices + dot_generals, summed"
// KXK-REPORT: "strides": [
// KXK-REPORT-NEXT: 2,
// KXK-REPORT-NEXT: 2
// KXK-REPORT: "padding": [
// KXK-REPORT-NEXT: 1,
// KXK-REPORT: "source": "block/down2/BiasAdd"
// KXK-REPORT: "main_dispatch_5_conv"
// KXK-REPORT-NEXT: ]
// KXK-REPORT-NEXT: "twin": "block/down/BiasAdd"
// KXK-REPORT: "declined": [
// KXK-REPORT: "source": "block/deep/BiasAdd"
// KXK-REPORT-NEXT: "share": 0.2
// KXK-REPORT-NEXT: "tf_ps": 300
// KXK-REPORT-NEXT: "target_ps": 52
// KXK-REPORT-NEXT: "tf_execution_ps": 20
// KXK-REPORT-NEXT: "target_invocation_ps": 26
// KXK-REPORT-NEXT: "slowdown": 1.3

//--- bad_kernels.mlir
// expected-error@+1 {{tf-profile-guided-conv-to-dot: kernels='3x3' is none of 1x1, kxk, tiles; pass kernels=1x1 (the default), kernels=kxk or kernels=tiles}}
module {}

//--- no_profile.mlir
// expected-error@+1 {{tf-profile-guided-conv-to-dot needs target-profile: the iree_profile.json of a --lower iree run}}
module {}

//--- missing.mlir
// expected-error@+1 {{cannot read target profile '}}
module {}

//--- wrong_format.mlir
// expected-error@+1 {{annotate_op_profile.json: 'format' is not "tfpgo.iree_profile"; pass the iree_profile.json of a --lower iree run}}
module {}
