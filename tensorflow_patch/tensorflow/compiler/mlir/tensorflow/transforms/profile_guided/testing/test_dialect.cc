//===- test_dialect.cc - TEST ONLY dialect with ProfileAnnotation ---------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/testing/test_dialect.h"

#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/testing/test_dialect.cc.inc"

#define GET_OP_CLASSES
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/testing/test_ops.cc.inc"

namespace mlir {
namespace tfpgo_test {

void TFPGOTestDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/testing/test_ops.cc.inc"
      >();
}

} // namespace tfpgo_test
} // namespace mlir
