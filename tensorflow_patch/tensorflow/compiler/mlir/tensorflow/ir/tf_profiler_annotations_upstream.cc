//===- tf_profiler_annotations_upstream.cc - Upstream op models -----------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// The op lists come from the dialects' generated `GET_OP_LIST` sections (the
// way IREE attaches its interfaces to every linalg op), so ops a new MLIR
// release adds are covered without editing this file.
//
//===----------------------------------------------------------------------===//

#include "tensorflow/compiler/mlir/tensorflow/ir/tf_profiler_annotations_upstream.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/Index/IR/IndexOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shape/IR/Shape.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "tensorflow/compiler/mlir/tensorflow/ir/tf_profiler_annotations.h"

namespace mlir {
namespace TF {
namespace {

/// ProfilerAnnotationsInterface for an upstream op: the same attribute (and
/// carried-location) storage as the ProfileAnnotation trait of tf ops.
template <typename ConcreteOp>
struct UpstreamProfilerAnnotations
    : public ProfilerAnnotationsInterface::ExternalModel<
          UpstreamProfilerAnnotations<ConcreteOp>, ConcreteOp> {
  void AttachProfilerData(Operation *op, const ProfilerData &data) const {
    SetProfilerDataAttr(op, data);
  }
  void AttachEncodedProfilerData(Operation *op, const ProfilerData &data,
                                 const ProfilerDataEncoder &encoder) const {
    encoder.SetAttr(op, data);
  }
  std::optional<ProfilerData> GetProfilerData(Operation *op) const {
    return ReadProfilerDataAttr(op);
  }
  bool HasProfilerData(Operation *op) const { return HasProfilerDataAttr(op); }
};

/// Attaches the model to each op of `Ops`.
template <typename... Ops> void AttachTo(MLIRContext *context) {
  (Ops::template attachInterface<UpstreamProfilerAnnotations<Ops>>(*context),
   ...);
}

} // namespace

void RegisterProfilerAnnotationsForUpstreamDialects(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, affine::AffineDialect *) {
    AttachTo<
#define GET_OP_LIST
#include "mlir/Dialect/Affine/IR/AffineOps.cpp.inc"
        >(context);
  });
  registry.addExtension(+[](MLIRContext *context, arith::ArithDialect *) {
    AttachTo<
#define GET_OP_LIST
#include "mlir/Dialect/Arith/IR/ArithOps.cpp.inc"
        >(context);
  });
  registry.addExtension(
      +[](MLIRContext *context, bufferization::BufferizationDialect *) {
        AttachTo<
#define GET_OP_LIST
#include "mlir/Dialect/Bufferization/IR/BufferizationOps.cpp.inc"
            >(context);
      });
  registry.addExtension(+[](MLIRContext *context, cf::ControlFlowDialect *) {
    AttachTo<
#define GET_OP_LIST
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.cpp.inc"
        >(context);
  });
  registry.addExtension(+[](MLIRContext *context, complex::ComplexDialect *) {
    AttachTo<
#define GET_OP_LIST
#include "mlir/Dialect/Complex/IR/ComplexOps.cpp.inc"
        >(context);
  });
  registry.addExtension(+[](MLIRContext *context, func::FuncDialect *) {
    AttachTo<
#define GET_OP_LIST
#include "mlir/Dialect/Func/IR/FuncOps.cpp.inc"
        >(context);
  });
  registry.addExtension(+[](MLIRContext *context, index::IndexDialect *) {
    AttachTo<
#define GET_OP_LIST
#include "mlir/Dialect/Index/IR/IndexOps.cpp.inc"
        >(context);
  });
  registry.addExtension(+[](MLIRContext *context, linalg::LinalgDialect *) {
    AttachTo<
#define GET_OP_LIST
#include "mlir/Dialect/Linalg/IR/LinalgOps.cpp.inc"
        >(context);
    AttachTo<
#define GET_OP_LIST
#include "mlir/Dialect/Linalg/IR/LinalgStructuredOps.cpp.inc"
        >(context);
    AttachTo<
#define GET_OP_LIST
#include "mlir/Dialect/Linalg/IR/LinalgRelayoutOps.cpp.inc"
        >(context);
  });
  registry.addExtension(+[](MLIRContext *context, math::MathDialect *) {
    AttachTo<
#define GET_OP_LIST
#include "mlir/Dialect/Math/IR/MathOps.cpp.inc"
        >(context);
  });
  registry.addExtension(+[](MLIRContext *context, memref::MemRefDialect *) {
    AttachTo<
#define GET_OP_LIST
#include "mlir/Dialect/MemRef/IR/MemRefOps.cpp.inc"
        >(context);
  });
  registry.addExtension(
      +[](MLIRContext *context, ml_program::MLProgramDialect *) {
        AttachTo<
#define GET_OP_LIST
#include "mlir/Dialect/MLProgram/IR/MLProgramOps.cpp.inc"
            >(context);
      });
  registry.addExtension(+[](MLIRContext *context, scf::SCFDialect *) {
    AttachTo<
#define GET_OP_LIST
#include "mlir/Dialect/SCF/IR/SCFOps.cpp.inc"
        >(context);
  });
  registry.addExtension(+[](MLIRContext *context, shape::ShapeDialect *) {
    AttachTo<
#define GET_OP_LIST
#include "mlir/Dialect/Shape/IR/ShapeOps.cpp.inc"
        >(context);
  });
  registry.addExtension(+[](MLIRContext *context, tensor::TensorDialect *) {
    AttachTo<
#define GET_OP_LIST
#include "mlir/Dialect/Tensor/IR/TensorOps.cpp.inc"
        >(context);
  });
  registry.addExtension(+[](MLIRContext *context, tosa::TosaDialect *) {
    AttachTo<
#define GET_OP_LIST
#include "mlir/Dialect/Tosa/IR/TosaOps.cpp.inc"
        >(context);
  });
  registry.addExtension(+[](MLIRContext *context, vector::VectorDialect *) {
    AttachTo<
#define GET_OP_LIST
#include "mlir/Dialect/Vector/IR/VectorOps.cpp.inc"
        >(context);
  });
}

} // namespace TF
} // namespace mlir
