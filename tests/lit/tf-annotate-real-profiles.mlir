// Attribution on real TensorFlow 2.21 profiles (tests/data/tf2_21, made by
// make_fixtures.py): dense, conv (fused Conv2D), GRU (while loop), tf.cond,
// tf.switch_case, nested tf.function calls, and Keras training steps of a
// dense and a conv model. At least 99% of op self time must land on ops and
// totals must match exactly.
// This file holds no IR of its own; the RUN lines drive the fixtures.
//
// RUN: for s in dense conv gru cond case call train conv_train; do \
// RUN:   %tfpgo_opt --allow-unregistered-dialect %test_data/tf2_21/$s/module.mlir \
// RUN:     --tf-annotate-operations-profile="path-to-profile=%test_data/tf2_21/$s/op_profile.json" \
// RUN:     --tf-profile-export-op-graph="output=%t.$s.json" -o /dev/null && \
// RUN:   %python %S/Inputs/check_attribution.py %test_data/tf2_21/$s/op_profile.json %t.$s.json \
// RUN:     || exit 1; done | FileCheck %s
//
// CHECK-COUNT-8: attributed {{1\.0000|0\.99[0-9]+}} of op self time
//
// Runtime names that had to be resolved through control flow and calls:
// RUN: %tfpgo_opt --allow-unregistered-dialect %test_data/tf2_21/gru/module.mlir \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%test_data/tf2_21/gru/op_profile.json" \
// RUN:   | FileCheck %s --check-prefix=GRU
// GRU-LABEL: func.func private @sequential_2_1_gru_1_while_body_
// GRU: "tf.MatMul"{{.*}}profiler_data = {fused_into = "sequential_2_1/gru_1/while/gru_cell_1/
// GRU: "tf.AddV2"{{.*}}profiler_data = {count = 15 : i64
// GRU-LABEL: func.func private @sequential_2_1_gru_1_while_cond_
// GRU: "tf.Less"{{.*}}profiler_data = {count = 18 : i64
//
// RUN: %tfpgo_opt --allow-unregistered-dialect %test_data/tf2_21/conv/module.mlir \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%test_data/tf2_21/conv/op_profile.json" \
// RUN:   | FileCheck %s --check-prefix=CONV
// CONV: "tf.Conv2D"{{.*}}profiler_data = {fused_into = "sequential_1_1/conv2d_1/Relu"}
// CONV: "tf.BiasAdd"{{.*}}profiler_data = {fused_into = "sequential_1_1/conv2d_1/Relu"}
// CONV: "tf.Relu"{{.*}}profiler_data = {count = 3 : i64
//
// The conv training step's filter gradient ran as
// `_MklNativeConv2DBackpropFilterWithBias`, which also did the BiasAddGrad.
// RUN: %tfpgo_opt --allow-unregistered-dialect %test_data/tf2_21/conv_train/module.mlir \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%test_data/tf2_21/conv_train/op_profile.json" \
// RUN:   | FileCheck %s --check-prefix=CONVTRAIN
// CONVTRAIN: "tf.BiasAddGrad"{{.*}}profiler_data = {fused_into = "gradient_tape/sequential_1/conv2d_1/convolution/Conv2DBackpropFilter"}
// CONVTRAIN: "tf.Conv2DBackpropFilter"{{.*}}profiler_data = {count = 3 : i64
//
// RUN: %tfpgo_opt --allow-unregistered-dialect %test_data/tf2_21/call/module.mlir \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%test_data/tf2_21/call/op_profile.json" \
// RUN:   | FileCheck %s --check-prefix=CALL
// CALL-LABEL: func.func private @__inference_inner_
// CALL: "tf.MatMul"{{.*}}profiler_data = {count = 6 : i64
