//===- tfpgo-test-opt.cc - tfpgo-opt plus the TEST ONLY dialect -*- C++ -*-===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// TEST ONLY: the lit suite's driver. Registers what tfpgo-opt registers plus
// the `tfpgo_test` dialect, whose ops carry the ProfileAnnotation trait the way
// tf ops do after the TensorFlow patch series, so the trait/interface path of
// the passes is tested without TensorFlow. Users get tfpgo-opt, which never
// registers that dialect (tests/lit/tfpgo-opt-no-test-dialect.mlir).
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "tensorflow/compiler/mlir/tensorflow/ir/tf_profiler_annotations_upstream.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/testing/test_dialect.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::TF::RegisterProfilerAnnotationsForUpstreamDialects(registry);
  registry.insert<mlir::tfpgo_test::TFPGOTestDialect>();
  mlir::TF::registerProfileGuidedPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "tfpgo test driver (TEST ONLY dialect tfpgo_test)\n",
      registry));
}
