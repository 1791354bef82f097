//===- xla_clustering_rules.h - What XLA may cluster on CPU -----*- C++ -*-===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// The rules of TensorFlow's XLA auto-clustering that decide whether a tf op
// may join an XLA cluster on CPU, restated for the tf dialect so that
// `tf-profile-guided-xla-regions` only proposes clusters TensorFlow would
// build. Each rule cites its source in TensorFlow 2.21:
// tensorflow/compiler/jit/mark_for_compilation_pass.cc (MFC below),
// compilability_check_util.{h,cc}, resource_operation_safety_analysis.cc and
// tensorflow/compiler/tf2xla/ (kernels/, resource_operation_table.cc).
//
//===----------------------------------------------------------------------===//

#ifndef TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_XLA_CLUSTERING_RULES_H_
#define TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_XLA_CLUSTERING_RULES_H_

#include <optional>
#include <string>

#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringRef.h"

namespace mlir {
namespace TF {

/// What an XLA kernel of a TF op does, for the ops of the pass's allow-list.
enum class XlaOpKind {
  kNoKernel,        ///< Not in the allow-list: no XLA kernel known to the pass.
  kElementwise,     ///< MFC's "PW" category (unary, binary, activations).
  kReduction,       ///< MFC's "RED" and "REDUCEWINDOWPW" (BiasAddGrad, L2Loss).
  kSoftmax,         ///< MFC's "PWRED" (softmax, cross entropy, arg max).
  kNormalization,   ///< MFC's "BN" (FusedBatchNorm*) and LRN.
  kDataMovement,    ///< MFC's "MISC" (reshape, slice, concat, pad, ...).
  kVariableRead,    ///< ReadVariableOp (tf2xla/kernels/variable_ops.cc).
  kOptimizerUpdate, ///< Assign*VariableOp, ResourceApply* (training_ops.cc).
  kHeavyDot,        ///< MatMul family: oneDNN's GEMM beats XLA's CPU dot.
  kHeavyConvolution, ///< Conv family: oneDNN's convolutions beat XLA's.
  kHeavyPooling,     ///< Pooling: oneDNN kernels, XLA's reduce-window.
};

/// Classifies the TF op type `type` (`Relu`, not `tf.Relu`). XLA's kernel
/// registry (REGISTER_XLA_OP in tensorflow/compiler/tf2xla/kernels/) is only
/// known at TensorFlow's runtime; the pass approximates it statically with an
/// explicit allow-list of the op types that fuse well (MFC's
/// GetAllowlistTable, the table behind --tf_xla_ops_to_cluster=FUSIBLE), the
/// variable and optimizer ops, and the heavy ops the pass declines.
XlaOpKind ClassifyXlaOp(llvm::StringRef type);

/// Returns how reports name `kind` ("elementwise", "optimizer update", ...).
llvm::StringRef XlaOpKindName(XlaOpKind kind);

/// True for the kinds TensorFlow runs as large oneDNN kernels.
bool IsHeavyOneDnnKernel(XlaOpKind kind);

/// True for the kinds XLA lowers to reduction fusions: reductions, softmax,
/// batch normalization, LRN and their gradients.
bool IsReductionFusion(XlaOpKind kind);

/// Why a reduction kind stays with TensorFlow by default ("reduction: XLA's
/// CPU reduction fusions ...").
std::string ReductionFusionReason(XlaOpKind kind);

/// Why a variable read or optimizer update (`kind`) stays with TensorFlow by
/// default.
std::string VariableAccessReason(XlaOpKind kind);

/// Why a heavy kind stays with TensorFlow ("heavy oneDNN kernel: XLA's CPU
/// dot is slower").
std::string HeavyKernelReason(XlaOpKind kind);

/// The TF op type of a tf dialect op (`tf.Relu` -> `Relu`); "" for ops of
/// other dialects.
llvm::StringRef TfOpType(Operation *op);

/// Stateful random ops are not clustered on the CPU JIT device:
/// RecursiveCompilabilityChecker::IsStatefulRandomOp
/// (compilability_check_util.h) rejects them unless the device registration
/// sets `cluster_stateful_rng_ops`, which DEVICE_CPU's (xla_op_registry.cc,
/// GetCompilationDevice) does not; the stateful RNG ops of
/// resource_operation_table.cc (StatefulUniform*, RngSkip, ...) are
/// rejected alike.
bool IsStatefulRandomOp(llvm::StringRef type);

/// Functional control flow and function calls are not put into a region: MFC
/// counts on not clustering "functional control flow nodes containing
/// resource operations" (resource_operation_safety_analysis.h), treats any
/// op that may call a function as reading and writing every resource
/// (MayCallFunction), and lets a cluster with If/While skip the size check
/// because it cannot see inside them. Region-based control flow
/// (WhileRegion, IfRegion, CaseRegion) is the same node once exported. True
/// for any op that holds regions or names a function by symbol.
bool IsControlFlowOrCall(Operation *op);

/// XLA on CPU cannot take string tensors (MFC sets `allow_string_consts =
/// false` and skips DT_STRING Const) nor DT_VARIANT ones (the DEVICE_CPU
/// registration leaves `cluster_variant_ops` false, so
/// IsCompilableNode rejects "DT_VARIANT producer/consumer"). True if an
/// operand or result of `op` holds `!tf_type.string` or `!tf_type.variant`.
bool HasUnclusterableType(Operation *op);

/// True if `type` is a tensor of `!tf_type.resource` (a variable handle).
bool IsResourceTensor(Type type);

/// True if an operand or result of `op` is a resource tensor.
bool HasResourceOperand(Operation *op);

/// How an op accesses resource variables, as XLA's resource table says
/// (tf2xla/resource_operation_table.cc, XlaResourceOpKind).
enum class ResourceAccess { kNone, kRead, kWrite, kReadWrite };

/// The access of TF op `op` (resource_operation_table.cc); ops that may call
/// a function read and write (XlaResourceOpKindForNode in
/// resource_operation_safety_analysis.cc).
ResourceAccess GetResourceAccess(Operation *op);

/// resource_operation_safety_analysis.cc, IsEdgeSafe: an XLA cluster runs
/// all its resource reads, atomically, before all its writes, so of the
/// dependencies between two resource ops of one cluster it keeps only
/// Read->* and *->Write. Two ops joined by a path `from` -> `to` for which
/// this is false cannot share a cluster.
bool IsResourceEdgeSafe(ResourceAccess from, ResourceAccess to);

/// The first rule above that keeps `op` out of every XLA region, as a reason
/// for the report; std::nullopt if it may join one. Heavy kernels are
/// declined unless `include_heavy`, reduction fusions unless
/// `with_reductions`, variable reads and optimizer updates unless
/// `with_variables`.
std::optional<std::string> WhyNotClusterable(Operation *op, bool include_heavy,
                                             bool with_reductions,
                                             bool with_variables);

} // namespace TF
} // namespace mlir

#endif // TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_XLA_CLUSTERING_RULES_H_
