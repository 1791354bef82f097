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
