//===- test_dialect.h - TEST ONLY dialect with ProfileAnnotation -*- C++
//-*-===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// TEST ONLY: see test_dialect.td. Registered by tfpgo-opt for lit tests of
// the trait/interface path; never part of a production pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_TESTING_TEST_DIALECT_H_
#define TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_TESTING_TEST_DIALECT_H_

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "tensorflow/compiler/mlir/tensorflow/ir/tf_profiler_annotations.h"

#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/testing/test_dialect.h.inc"

#define GET_OP_CLASSES
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/testing/test_ops.h.inc"

#endif // TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_TESTING_TEST_DIALECT_H_
