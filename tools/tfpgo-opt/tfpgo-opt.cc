//===- tfpgo-opt.cc - tfpgo's mlir-opt driver -------------------*- C++ -*-===//
//
// An MlirOptMain driver for TensorFlow-exported MLIR. Upstream MLIR has no tf
// dialect, so tf ops and !tf_type types parse as unregistered entities
// (--allow-unregistered-dialect); func and the builtin dialect are registered so
// that functions, calls and attributes print in their usual form.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tfpgo optimizer driver\n", registry));
}
