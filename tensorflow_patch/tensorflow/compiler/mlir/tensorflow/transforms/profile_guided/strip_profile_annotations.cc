//===- strip_profile_annotations.cc - Remove profile attributes -----------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Implements `tf-strip-profile-annotations`. TensorFlow cannot export a
// DictionaryAttr back to a GraphDef NodeDef, so annotated modules must be
// stripped before they leave MLIR.
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "tensorflow/compiler/mlir/tensorflow/ir/tf_profiler_annotations.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h"

namespace mlir {
namespace TF {

#define GEN_PASS_DEF_STRIPPROFILEANNOTATIONSPASS
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h.inc"

namespace {

/// See passes.td.
class StripProfileAnnotationsPass
    : public impl::StripProfileAnnotationsPassBase<
          StripProfileAnnotationsPass> {
public:
  using StripProfileAnnotationsPassBase::StripProfileAnnotationsPassBase;

  void runOnOperation() override {
    getOperation().walk([&](Operation *op) {
      if (RemoveProfileAnnotations(op))
        ++numStrippedOps;
    });
  }
};

} // namespace
} // namespace TF
} // namespace mlir
