// Convolutions whose windows tile the input (a patch embedding and its
// filter gradient, any layout) become one reshape + dot_general (+ a
// transpose into the output layout) with kernels=tiles; overlapping windows
// stay, and kernels=kxk leaves tiling ones to kernels=tiles
// (tf-profile-guided-conv-to-dot).
//
// RUN: %tfpgo_opt --allow-unregistered-dialect %s \
// RUN:   --tf-profile-guided-conv-to-dot="target-profile=%S/Inputs/conv_to_tiles_iree_profile.json kernels=tiles report-output=%t.json" \
// RUN:   | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// RUN: %tfpgo_opt --allow-unregistered-dialect %s -verify-diagnostics \
// RUN:   --tf-profile-guided-conv-to-dot="target-profile=%S/Inputs/conv_to_tiles_iree_profile.json kernels=tiles remarks=true" -o /dev/null
// RUN: %tfpgo_opt --allow-unregistered-dialect %s \
// RUN:   --tf-profile-guided-conv-to-dot="target-profile=%S/Inputs/conv_to_tiles_iree_profile.json kernels=kxk remarks=true" -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=KXK

// CHECK-LABEL: func.func @vit
func.func @vit(%x: tensor<2x8x8x3xf32>, %w: tensor<4x4x3x16xf32>, %dy: tensor<2x2x2x16xf32>, %w3: tensor<3x3x3x16xf32>) -> (tensor<2x2x2x16xf32>, tensor<4x4x3x16xf32>, tensor<2x16x2x2xf32>, tensor<2x6x6x16xf32>) {
  // A 4x4 patch embedding (stride 4): each pixel row is (patch, tap).
  // CHECK: %[[PATCHES:.*]] = "stablehlo.reshape"(%arg0) : (tensor<2x8x8x3xf32>) -> tensor<2x2x4x2x4x3xf32>
  // CHECK: %[[EMBED:.*]] = "stablehlo.dot_general"(%[[PATCHES]], %arg1) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [5, 2, 4], rhs_contracting_dimensions = [2, 0, 1]>}> {profiler_data = {{{.*}}source = "vit/patches/Conv2D"{{.*}}}, profiler_hot = 1 : i64} : (tensor<2x2x4x2x4x3xf32>, tensor<4x4x3x16xf32>) -> tensor<2x2x2x16xf32>
  // expected-remark@+1 {{rewrote vit/patches/Conv2D: share 30.00%, compiled/TensorFlow 4.0x, now reshape + dot_general}}
  %0 = "stablehlo.convolution"(%x, %w) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, padding = dense<0> : tensor<2x2xi64>, rhs_dilation = array<i64: 1, 1>, window_reversal = array<i1: false, false>, window_strides = array<i64: 4, 4>}> {profiler_data = {count = 1 : i64, dur = 100 : i64, max = 100 : i64, min = 100 : i64, p50 = 100 : i64, p95 = 100 : i64, self = 100 : i64, share = 3.000000e-01 : f64, source = "vit/patches/Conv2D", source_self = 100 : i64, total = 100 : i64, ts = 0 : i64}, profiler_hot = 1 : i64} : (tensor<2x8x8x3xf32>, tensor<4x4x3x16xf32>) -> tensor<2x2x2x16xf32>
  // Its filter gradient: the taps 4 apart (kernel dilation 4), the batch contracted.
  // CHECK: %[[TAPS:.*]] = "stablehlo.reshape"(%arg0) : (tensor<2x8x8x3xf32>) -> tensor<2x2x4x2x4x3xf32>
  // CHECK: %[[GRADIENT:.*]] = "stablehlo.dot_general"(%[[TAPS]], %arg2) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [0, 1, 3], rhs_contracting_dimensions = [0, 1, 2]>}> {profiler_data = {{{.*}}source = "gradient_tape/vit/patches/Conv2DBackpropFilter"{{.*}}}, profiler_hot = 1 : i64} : (tensor<2x2x4x2x4x3xf32>, tensor<2x2x2x16xf32>) -> tensor<4x4x3x16xf32>
  // expected-remark@+1 {{rewrote gradient_tape/vit/patches/Conv2DBackpropFilter: share 40.00%, compiled/TensorFlow 9.0x, now reshape + dot_general}}
  %1 = "stablehlo.convolution"(%x, %dy) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]>, feature_group_count = 1 : i64, padding = dense<0> : tensor<2x2xi64>, rhs_dilation = array<i64: 4, 4>, window_strides = array<i64: 1, 1>}> {profiler_data = {count = 1 : i64, dur = 100 : i64, max = 100 : i64, min = 100 : i64, p50 = 100 : i64, p95 = 100 : i64, self = 100 : i64, share = 4.000000e-01 : f64, source = "gradient_tape/vit/patches/Conv2DBackpropFilter", source_self = 100 : i64, total = 100 : i64, ts = 0 : i64}, profiler_hot = 1 : i64} : (tensor<2x8x8x3xf32>, tensor<2x2x2x16xf32>) -> tensor<4x4x3x16xf32>
  // An output in another layout: the product transposed into it.
  // CHECK: %[[PRODUCT:.*]] = "stablehlo.dot_general"({{.*}}) <{{.*}}> : (tensor<2x2x4x2x4x3xf32>, tensor<4x4x3x16xf32>) -> tensor<2x2x2x16xf32>
  // CHECK: %[[NCHW:.*]] = "stablehlo.transpose"(%[[PRODUCT]]) <{permutation = array<i64: 0, 3, 1, 2>}> {profiler_data = {{{.*}}source = "vit/nchw/Conv2D"{{.*}}}, profiler_hot = 1 : i64} : (tensor<2x2x2x16xf32>) -> tensor<2x16x2x2xf32>
  // expected-remark@+1 {{rewrote vit/nchw/Conv2D: share 10.00%, compiled/TensorFlow 5.0x, now reshape + dot_general + transpose}}
  %2 = "stablehlo.convolution"(%x, %w) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, f, 0, 1]>, feature_group_count = 1 : i64, padding = dense<0> : tensor<2x2xi64>, rhs_dilation = array<i64: 1, 1>, window_strides = array<i64: 4, 4>}> {profiler_data = {count = 1 : i64, dur = 20 : i64, max = 20 : i64, min = 20 : i64, p50 = 20 : i64, p95 = 20 : i64, self = 20 : i64, share = 1.000000e-01 : f64, source = "vit/nchw/Conv2D", source_self = 20 : i64, total = 20 : i64, ts = 0 : i64}, profiler_hot = 1 : i64} : (tensor<2x8x8x3xf32>, tensor<4x4x3x16xf32>) -> tensor<2x16x2x2xf32>
  // Overlapping 3x3 windows (stride 1): kept.
  // CHECK: "stablehlo.convolution"(%arg0, %arg3)
  // expected-remark@+1 {{kept vit/overlap/Conv2D: share 10.00%, compiled/TensorFlow 5.0x: windows overlap or leave input out}}
  %3 = "stablehlo.convolution"(%x, %w3) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, padding = dense<0> : tensor<2x2xi64>, rhs_dilation = array<i64: 1, 1>, window_strides = array<i64: 1, 1>}> {profiler_data = {count = 1 : i64, dur = 20 : i64, max = 20 : i64, min = 20 : i64, p50 = 20 : i64, p95 = 20 : i64, self = 20 : i64, share = 1.000000e-01 : f64, source = "vit/overlap/Conv2D", source_self = 20 : i64, total = 20 : i64, ts = 0 : i64}, profiler_hot = 1 : i64} : (tensor<2x8x8x3xf32>, tensor<3x3x3x16xf32>) -> tensor<2x6x6x16xf32>
  // CHECK: return %[[EMBED]], %[[GRADIENT]], %[[NCHW]]
  return %0, %1, %2, %3 : tensor<2x2x2x16xf32>, tensor<4x4x3x16xf32>, tensor<2x16x2x2xf32>, tensor<2x6x6x16xf32>
}

// REPORT: "kernels": "tiles"
// REPORT: "rewritten": [
// REPORT: "source": "vit/patches/Conv2D"
// REPORT: "form": "reshape + dot_general"
// REPORT: "strides": [
// REPORT-NEXT: 4,
// REPORT-NEXT: 4
// REPORT: "kernel_dilation": [
// REPORT-NEXT: 1,
// REPORT-NEXT: 1
// REPORT: "source": "gradient_tape/vit/patches/Conv2DBackpropFilter"
// REPORT: "kernel_dilation": [
// REPORT-NEXT: 4,
// REPORT-NEXT: 4
// REPORT: "declined": [
// REPORT: "source": "vit/overlap/Conv2D"
// REPORT: "reason": "windows overlap or leave input out"

// KXK: kept vit/patches/Conv2D: {{.*}}: windows tile the input (kernels=tiles rewrites it)
