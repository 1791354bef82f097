//===- tf_profiler_annotations_upstream.h - Upstream op models --*- C++ -*-===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// ProfilerAnnotationsInterface on the ops of upstream MLIR dialects, attached
// as external models, so that a profile stays readable and writable on the
// IR a compiler lowers tf ops into (StableHLO -> linalg, TOSA, scf/cf, ...).
//
//===----------------------------------------------------------------------===//

#ifndef TENSORFLOW_COMPILER_MLIR_TENSORFLOW_IR_TF_PROFILER_ANNOTATIONS_UPSTREAM_H_
#define TENSORFLOW_COMPILER_MLIR_TENSORFLOW_IR_TF_PROFILER_ANNOTATIONS_UPSTREAM_H_

#include "mlir/IR/DialectRegistry.h"

namespace mlir {
namespace TF {

/// Registers, for each of these dialects, an extension that attaches
/// ProfilerAnnotationsInterface to every one of its ops when the dialect is
/// loaded: affine, arith, bufferization, cf, complex, func, index, linalg,
/// math, memref, ml_program, scf, shape, tensor, tosa, vector. The models
/// store the record as the `profiler_data` attribute, like the
/// ProfileAnnotation trait, and read a profile carried in the location too.
/// A driver calls this next to its dialect registration (tfpgo-opt, tf-opt).
void RegisterProfilerAnnotationsForUpstreamDialects(DialectRegistry &registry);

} // namespace TF
} // namespace mlir

#endif // TENSORFLOW_COMPILER_MLIR_TENSORFLOW_IR_TF_PROFILER_ANNOTATIONS_UPSTREAM_H_
