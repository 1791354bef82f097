// The TEST ONLY tfpgo_test dialect is registered by the lit suite's driver
// (tfpgo-test-opt), never by the user-facing tfpgo-opt.
//
// RUN: not %tfpgo_opt %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %tfpgo_test_opt %s | FileCheck %s --check-prefix=TEST

// CHECK: error: operation being parsed with an unregistered dialect
// TEST: tfpgo_test.Relu
func.func @f(%x: tensor<f32>) -> tensor<f32> {
  %0 = "tfpgo_test.Relu"(%x) : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
