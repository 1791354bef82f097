// RUN: %tfpgo_opt --allow-unregistered-dialect %s \
// RUN:   --tf-profile-guided-pipeline="enable-profile=false path-to-profile=%t/absent.json" \
// RUN:   | FileCheck %s --check-prefix=OFF
// RUN: %tfpgo_opt --allow-unregistered-dialect %s \
// RUN:   --tf-profile-guided-pipeline="enable-profile=true path-to-profile=%S/Inputs/annotate_op_profile.json top-k=1 op-graph-output=%t.json" \
// RUN:   | FileCheck %s --check-prefix=ON
// RUN: %python -c "import json,sys; d=json.load(open(sys.argv[1])); assert [n['hot_rank'] for n in d['nodes'] if n['hot']]==[1], d" %t.json
// RUN: %tfpgo_opt --allow-unregistered-dialect %s \
// RUN:   --pass-pipeline="builtin.module(tf-profile-guided-pipeline{enable-profile=true path-to-profile=%S/Inputs/annotate_op_profile.json},tf-strip-profile-annotations)" \
// RUN:   | FileCheck %s --check-prefix=OFF

// The profile-guided transformation runs in the pipeline: measured branch and
// trip counts on the real TensorFlow 2.21 exports of tests/data/tf2_21, and
// with `remarks` the explanation of each decision.
// RUN: for s in cond case gru; do \
// RUN:   %tfpgo_opt --allow-unregistered-dialect %test_data/tf2_21/$s/module.mlir \
// RUN:     --tf-profile-guided-pipeline="enable-profile=true path-to-profile=%test_data/tf2_21/$s/op_profile.json remarks=true" \
// RUN:     2>%t.$s.remarks || exit 1; cat %t.$s.remarks; done | FileCheck %s --check-prefix=REAL
// REAL: "tf.If"{{.*}}profiler_branch_counts = array<i64: 3, 0>
// REAL: remark: profile-guided: branch counts [3, 0] for tf.If "cond": then @cond_true_4050 ran 3 times (most executions of its profiled ops); else @cond_false_4060 ran 0 times (not profiled, though its tf.Tanh would have been)
// REAL: "tf.Case"{{.*}}profiler_branch_counts = array<i64: 0, 3, 0>
// REAL: remark: profile-guided: branch counts [0, 3, 0] for tf.Case "switch_case/indexed_case"
// REAL: "tf.While"{{.*}}profiler_branch_counts = array<i64: 15, 3>, profiler_trip_count = 5.000000e+00 : f64
// REAL: remark: profile-guided: trip count 5.00, branch counts [15, 3] for tf.While "sequential_2_1/gru_1/while": body @sequential_2_1_gru_1_while_body_2860 ran 15 times (most executions of its profiled ops); the loop ran 3 times (cond @sequential_2_1_gru_1_while_cond_2850 ran 18 times, less the 15 iterations)

// Disabled, the pipeline is empty: it does not even read the profile.
// OFF-LABEL: func.func @main
// OFF-NOT: profiler_
// ON-LABEL: func.func @main
// ON: "tf.MatMul"{{.*}}profiler_data = {fused_into = "model/dense/Relu"}
// ON: "tf.Relu"{{.*}}profiler_hot = 1 : i64
// ON: "tf.PartitionedCall"
// ON-NOT: profiler_hot
func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = "tf.MatMul"(%x, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("model/dense/MatMul")
  %1 = "tf.Relu"(%0) : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("model/dense/Relu")
  %2 = "tf.PartitionedCall"(%1) <{f = @inner_30}> : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("PartitionedCall")
  return %2 : tensor<4x4xf32>
}
func.func private @inner_30(%v: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = "tf.MatMul"(%v, %v) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("MatMul@inner_3")
  return %0 : tensor<4x4xf32>
}
