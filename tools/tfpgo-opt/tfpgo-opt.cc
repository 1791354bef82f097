//===- tfpgo-opt.cc - tfpgo's mlir-opt driver -------------------*- C++ -*-===//
//
// An MlirOptMain driver for TensorFlow-exported MLIR and what it is lowered
// to. Upstream MLIR has no tf dialect (nor StableHLO), so tf ops and !tf_type
// types parse as unregistered entities (--allow-unregistered-dialect); every
// upstream dialect is registered, with ProfilerAnnotationsInterface attached
// to the ops of the ones compilers lower through. Registers the
// profile-guided passes and `tf-profile-guided-pipeline`. The TEST ONLY
// `tfpgo_test` dialect is registered by the lit suite's own driver,
// tfpgo-test-opt, never here.
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "tensorflow/compiler/mlir/tensorflow/ir/tf_profiler_annotations_upstream.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::TF::RegisterProfilerAnnotationsForUpstreamDialects(registry);
  mlir::TF::registerProfileGuidedPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tfpgo optimizer driver\n", registry));
}
