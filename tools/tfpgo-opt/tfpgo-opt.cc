//===- tfpgo-opt.cc - tfpgo's mlir-opt driver -------------------*- C++ -*-===//
//
// An MlirOptMain driver for TensorFlow-exported MLIR. Upstream MLIR has no tf
// dialect, so tf ops and !tf_type types parse as unregistered entities
// (--allow-unregistered-dialect); func and the builtin dialect are registered so
// that functions, calls and attributes print in their usual form. Registers
// the profile-guided passes and `tf-profile-guided-pipeline`, plus the TEST
// ONLY `tfpgo_test` dialect whose ops carry the ProfileAnnotation trait.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/testing/test_dialect.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::func::FuncDialect>();
  // TEST ONLY: exercises the trait/interface path in lit tests.
  registry.insert<mlir::tfpgo_test::TFPGOTestDialect>();
  mlir::TF::registerProfileGuidedPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tfpgo optimizer driver\n", registry));
}
