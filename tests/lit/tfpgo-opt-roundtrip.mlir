// tfpgo-opt parses and prints MLIR exported by TensorFlow 2.21: generic tf ops,
// !tf_type types, tf.versions, fused/callsite locations and location aliases.
// RUN: %tfpgo_opt --allow-unregistered-dialect %test_data/dense_tf2_21.mlir | FileCheck %s
// RUN: %tfpgo_opt --allow-unregistered-dialect --mlir-print-debuginfo %test_data/dense_tf2_21.mlir \
// RUN:   | %tfpgo_opt --allow-unregistered-dialect --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC
// RUN: not %tfpgo_opt %test_data/dense_tf2_21.mlir 2>&1 | FileCheck %s --check-prefix=STRICT

// CHECK: module attributes {tf.versions = {bad_consumers = [], min_consumer = 0 : i32, producer = 2474 : i32}}
// CHECK-LABEL: func.func @__inference_f_76
// CHECK-SAME: tensor<*x!tf_type.resource>
// CHECK: %[[READ:.*]] = "tf.ReadVariableOp"(%arg1)
// CHECK: %[[MM:.*]] = "tf.MatMul"(%arg0, %[[READ]])
// CHECK-SAME: transpose_a = false
// CHECK: "tf.BiasAdd"(%[[MM]]
// CHECK: "tf.Relu"
// CHECK: return

// The node name survives a second round trip inside its fused location.
// LOC: "sequential_1/dense_1/MatMul"
// LOC: loc(fused[

// STRICT: error: `!"tf_type"<"resource">` type created with unregistered dialect
