// Kernels of TF's oneDNN passes that do more than the op they are named after
// (seen on TF 2.21 CNN and ResNet50 profiles).
//
// A training step's filter gradient run as
// `_MklNativeConv2DBackpropFilterWithBias` also computes the BiasAddGrad that
// reads the same output gradient. The kernel is named after the
// Conv2DBackpropFilter; the BiasAddGrad sibling is `fused_into` it. A
// BiasAddGrad of a plain (unfused) filter gradient, or one that ran on its
// own, keeps its own state.
//
// RUN: %tfpgo_opt --allow-unregistered-dialect \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%S/Inputs/onednn_op_profile.json report-unresolved=true" \
// RUN:   %s 2>%t.remarks | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remarks

// CHECK-LABEL: func.func @train_step
// CHECK: %[[DY:.*]] = "tf.Relu"
// CHECK-NOT: profiler_data
// CHECK: "tf.BiasAddGrad"(%[[DY]]){{.*}}profiler_data = {fused_into = "gradient_tape/cnn/conv/convolution/Conv2DBackpropFilter"}
// CHECK: "tf.Conv2DBackpropFilter"(%{{.*}}, %{{.*}}, %[[DY]]){{.*}}profiler_data = {count = 1 : i64, {{.*}}self = 300 : i64
// CHECK: %[[DY2:.*]] = "tf.Tanh"
// CHECK: "tf.BiasAddGrad"(%[[DY2]])
// CHECK-NOT: profiler_data
// CHECK: "tf.Conv2DBackpropFilter"(%{{.*}}, %{{.*}}, %[[DY2]]){{.*}}profiler_data = {count = 1 : i64, {{.*}}self = 80 : i64
// CHECK: "tf.BiasAddGrad"{{.*}}profiler_data = {count = 1 : i64, {{.*}}self = 10 : i64
func.func @train_step(%x: tensor<1x4x4x1xf32>, %sizes: tensor<4xi32>, %g: tensor<1x4x4x1xf32>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) {
  %0 = "tf.Relu"(%g) : (tensor<1x4x4x1xf32>) -> tensor<1x4x4x1xf32> loc("gradient_tape/cnn/conv/Relu/ReluGrad")
  %1 = "tf.BiasAddGrad"(%0) <{data_format = "NHWC"}> : (tensor<1x4x4x1xf32>) -> tensor<*xf32> loc(fused["BiasAddGrad:", "gradient_tape/cnn/conv/BiasAdd/BiasAddGrad"])
  %2 = "tf.Conv2DBackpropFilter"(%x, %sizes, %0) <{padding = "SAME", strides = [1, 1, 1, 1]}> : (tensor<1x4x4x1xf32>, tensor<4xi32>, tensor<1x4x4x1xf32>) -> tensor<*xf32> loc(fused["Conv2DBackpropFilter:", "gradient_tape/cnn/conv/convolution/Conv2DBackpropFilter"])
  %3 = "tf.Tanh"(%g) : (tensor<1x4x4x1xf32>) -> tensor<1x4x4x1xf32> loc("gradient_tape/cnn/conv2/Tanh/TanhGrad")
  %4 = "tf.BiasAddGrad"(%3) <{data_format = "NHWC"}> : (tensor<1x4x4x1xf32>) -> tensor<*xf32> loc("gradient_tape/cnn/conv2/BiasAdd/BiasAddGrad")
  %5 = "tf.Conv2DBackpropFilter"(%x, %sizes, %3) <{padding = "SAME", strides = [1, 1, 1, 1]}> : (tensor<1x4x4x1xf32>, tensor<4xi32>, tensor<1x4x4x1xf32>) -> tensor<*xf32> loc("gradient_tape/cnn/conv2/convolution/Conv2DBackpropFilter")
  %6 = "tf.BiasAddGrad"(%g) <{data_format = "NHWC"}> : (tensor<1x4x4x1xf32>) -> tensor<*xf32> loc("gradient_tape/cnn/logits/BiasAdd/BiasAddGrad")
  return %1, %2, %4, %5, %6 : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>
}

// `_MklNativePadWithFusedConv2D` (named after the chain's last node) and
// `_MklPadWithConv2D` (named after the Conv2D) also did the Pad in front.
// A Pad that ran as its own kernel keeps its timing.
// CHECK-LABEL: func.func @stem
// CHECK: "tf.Pad"{{.*}}profiler_data = {fused_into = "resnet/conv1_conv/BiasAdd"}
// CHECK: "tf.Conv2D"{{.*}}profiler_data = {fused_into = "resnet/conv1_conv/BiasAdd"}
// CHECK: "tf.BiasAdd"{{.*}}profiler_data = {count = 1 : i64, {{.*}}self = 500 : i64
// CHECK: "tf.Pad"{{.*}}profiler_data = {fused_into = "resnet/conv2_conv/convolution"}
// CHECK: "tf.Conv2D"{{.*}}profiler_data = {count = 1 : i64, {{.*}}self = 200 : i64
// CHECK: "tf.Pad"{{.*}}profiler_data = {count = 1 : i64, {{.*}}self = 20 : i64
func.func @stem(%x: tensor<1x8x8x3xf32>, %pads: tensor<4x2xi32>, %w: tensor<3x3x3x4xf32>, %b: tensor<4xf32>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) {
  %0 = "tf.Pad"(%x, %pads) : (tensor<1x8x8x3xf32>, tensor<4x2xi32>) -> tensor<*xf32> loc("resnet/conv1_pad/Pad")
  %1 = "tf.Conv2D"(%0, %w) <{padding = "VALID", strides = [1, 2, 2, 1]}> : (tensor<*xf32>, tensor<3x3x3x4xf32>) -> tensor<*xf32> loc("resnet/conv1_conv/convolution")
  %2 = "tf.BiasAdd"(%1, %b) : (tensor<*xf32>, tensor<4xf32>) -> tensor<*xf32> loc("resnet/conv1_conv/BiasAdd")
  %3 = "tf.Pad"(%2, %pads) : (tensor<*xf32>, tensor<4x2xi32>) -> tensor<*xf32> loc("resnet/conv2_pad/Pad")
  %4 = "tf.Conv2D"(%3, %w) <{padding = "VALID", strides = [1, 1, 1, 1]}> : (tensor<*xf32>, tensor<3x3x3x4xf32>) -> tensor<*xf32> loc("resnet/conv2_conv/convolution")
  %5 = "tf.Pad"(%4, %pads) : (tensor<*xf32>, tensor<4x2xi32>) -> tensor<*xf32> loc("resnet/pool1_pad/Pad")
  return %2, %4, %5 : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>
}

// REMARK: remark: annotated 6 ops and 4 fused ops from 6 profile entries; 1110 of 1110 ps self time attributed
