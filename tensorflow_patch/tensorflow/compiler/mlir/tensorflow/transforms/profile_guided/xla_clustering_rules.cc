//===- xla_clustering_rules.cc - What XLA may cluster on CPU --------------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/xla_clustering_rules.h"

#include <initializer_list>

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace TF {
namespace {

/// The allow-list. Every op listed has an XLA kernel in TensorFlow 2.21's
/// tensorflow/compiler/tf2xla/kernels/ (the file is named per group); the
/// groups follow MFC's GetAllowlistTable where it has one. Ops missing here
/// (string ops, sparse ops, collectives, TensorArrays, I/O) are declined
/// as having no kernel known to the pass.
const llvm::StringMap<XlaOpKind> &AllowList() {
  static const llvm::StringMap<XlaOpKind> *table = [] {
    auto *map = new llvm::StringMap<XlaOpKind>();
    auto add = [&](XlaOpKind kind, std::initializer_list<llvm::StringRef> ops) {
      for (llvm::StringRef op : ops)
        map->try_emplace(op, kind);
    };
    // clang-format off
    // MFC "PW": unary_ops.cc, binary_ops.cc (XLAJIT_MAKE_UNARY,
    // XLA_MAKE_BINARY), relu_op.cc, elu_op.cc, cast_op.cc, select_op.cc,
    // clip_by_value_op.cc, aggregate_ops.cc (AddN), identity_op.cc,
    // unary_ops_composition.cc.
    add(XlaOpKind::kElementwise,
        {"Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Ceil",
         "Cos", "Cosh", "Sin", "Exp", "Expm1", "Floor", "IsFinite", "IsInf",
         "IsNan", "Inv", "Reciprocal", "Log", "Log1p", "Invert", "LogicalNot",
         "Neg", "Rint", "Round", "Rsqrt", "Sigmoid", "Sign", "Sinh",
         "Softplus", "Softsign", "Sqrt", "Square", "Tan", "Tanh", "Erf",
         "Erfc", "Erfinv", "Lgamma", "Digamma", "Add", "AddV2", "Sub", "Mul",
         "Div", "Atan2", "DivNoNan", "MulNoNan", "FloorDiv", "Xlogy",
         "Xlog1py", "Xdivy", "FloorMod", "BitwiseAnd", "BitwiseOr",
         "BitwiseXor", "LeftShift", "RightShift", "LogicalAnd", "LogicalOr",
         "Mod", "Maximum", "Minimum", "RealDiv", "ReciprocalGrad",
         "RsqrtGrad", "SqrtGrad", "TruncateDiv", "TruncateMod", "Equal",
         "NotEqual", "Greater", "GreaterEqual", "Less", "LessEqual",
         "SigmoidGrad", "SoftplusGrad", "SoftsignGrad", "TanhGrad", "Pow",
         "SquaredDifference", "ApproximateEqual", "AddN", "Cast",
         "ClipByValue", "Identity", "IdentityN", "Relu", "Relu6", "ReluGrad",
         "Relu6Grad", "LeakyRelu", "LeakyReluGrad", "Elu", "EluGrad", "Selu",
         "SeluGrad", "Select", "SelectV2", "_UnaryOpsComposition",
         "PreventGradient", "StopGradient", "Snapshot"});
    // MFC "RED" and "REDUCEWINDOWPW": reduction_ops.cc, bias_ops.cc,
    // l2loss_op.cc.
    add(XlaOpKind::kReduction,
        {"All", "Any", "Min", "Max", "Mean", "Prod", "Sum", "BiasAddGrad",
         "L2Loss"});
    // MFC "PWRED": softmax_op.cc, index_ops.cc.
    add(XlaOpKind::kSoftmax,
        {"Softmax", "LogSoftmax", "SparseSoftmaxCrossEntropyWithLogits",
         "SoftmaxCrossEntropyWithLogits", "ArgMax", "ArgMin"});
    // MFC "BN" and "REDUCEWINDOWPW": batch_norm_op.cc, lrn_ops.cc.
    add(XlaOpKind::kNormalization,
        {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3",
         "FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3",
         "LRN", "LRNGrad"});
    // MFC "MISC": shape_op.cc, reshape_op.cc, bias_ops.cc (BiasAdd: "PW +
    // Broadcast"), transpose_op.cc, concat_op.cc, pad_op.cc, slice_op.cc,
    // strided_slice_op.cc, split_op.cc, pack_op.cc, unpack_op.cc,
    // tile_ops.cc, fill_op.cc, sequence_ops.cc, one_hot_op.cc,
    // broadcast_to_op.cc, bcast_ops.cc, mirror_pad_op.cc, reverse_op.cc,
    // const_op.cc.
    add(XlaOpKind::kDataMovement,
        {"BiasAdd", "BroadcastTo", "ExpandDims", "Fill", "Range", "Rank",
         "Reshape", "Shape", "ShapeN", "Size", "Squeeze", "Transpose",
         "ZerosLike", "OnesLike", "BroadcastArgs", "BroadcastGradientArgs",
         "OneHot", "Concat", "ConcatV2", "ConcatOffset", "Const", "MirrorPad",
         "MirrorPadGrad", "Pack", "Pad", "PadV2", "Reverse", "ReverseV2",
         "Slice", "Split", "SplitV", "StridedSlice", "StridedSliceGrad",
         "Tile", "InvertPermutation", "Unpack"});
    // variable_ops.cc.
    add(XlaOpKind::kVariableRead, {"ReadVariableOp"});
    // variable_ops.cc (Assign*), training_ops.cc (ResourceApply*); the names
    // of resource_operation_table.cc.
    add(XlaOpKind::kOptimizerUpdate,
        {"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
         "ResourceApplyAdaMax", "ResourceApplyAdadelta", "ResourceApplyAdagrad",
         "ResourceApplyAdagradV2", "ResourceApplyAdagradDA",
         "ResourceApplyAdam", "ResourceApplyAddSign",
         "ResourceApplyCenteredRMSProp", "ResourceApplyFtrl",
         "ResourceApplyFtrlV2", "ResourceApplyGradientDescent",
         "ResourceApplyMomentum", "ResourceApplyKerasMomentum",
         "ResourceApplyPowerSign", "ResourceApplyProximalAdagrad",
         "ResourceApplyProximalGradientDescent", "ResourceApplyRMSProp"});
    // matmul_op.cc, batch_matmul_op.cc, einsum_op.cc. (_FusedMatMul, the
    // remapper's MatMul+BiasAdd+activation, has no XLA kernel.)
    add(XlaOpKind::kHeavyDot,
        {"MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum"});
    // conv_ops.cc, fused_conv_ops.cc.
    add(XlaOpKind::kHeavyConvolution,
        {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "Conv3D",
         "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2",
         "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
         "DepthwiseConv2dNativeBackpropFilter", "_FusedConv2D"});
    // pooling_ops.cc.
    add(XlaOpKind::kHeavyPooling,
        {"MaxPool", "MaxPoolV2", "MaxPoolGrad", "MaxPoolGradV2", "AvgPool",
         "AvgPoolGrad", "MaxPool3D", "AvgPool3D"});
    // clang-format on
    return map;
  }();
  return *table;
}

/// The element type of `type` as printed (`!tf_type.resource<...>`).
std::string ElementTypeText(Type type) {
  if (auto shaped = dyn_cast<ShapedType>(type))
    type = shaped.getElementType();
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

/// True if an operand or result type of `op` prints with `prefix`. Works for
/// the registered tf types (tf-opt) and their opaque form (tfpgo-opt).
bool HasElementType(Operation *op, llvm::StringRef prefix) {
  auto matches = [&](Type type) {
    return llvm::StringRef(ElementTypeText(type)).starts_with(prefix);
  };
  return llvm::any_of(op->getOperandTypes(), matches) ||
         llvm::any_of(op->getResultTypes(), matches);
}

} // namespace

XlaOpKind ClassifyXlaOp(llvm::StringRef type) {
  auto found = AllowList().find(type);
  return found == AllowList().end() ? XlaOpKind::kNoKernel : found->second;
}

llvm::StringRef XlaOpKindName(XlaOpKind kind) {
  switch (kind) {
  case XlaOpKind::kNoKernel:
    return "no XLA kernel";
  case XlaOpKind::kElementwise:
    return "elementwise";
  case XlaOpKind::kReduction:
    return "reduction";
  case XlaOpKind::kSoftmax:
    return "softmax";
  case XlaOpKind::kNormalization:
    return "normalization";
  case XlaOpKind::kDataMovement:
    return "data movement";
  case XlaOpKind::kVariableRead:
    return "variable read";
  case XlaOpKind::kOptimizerUpdate:
    return "optimizer update";
  case XlaOpKind::kHeavyDot:
    return "dot";
  case XlaOpKind::kHeavyConvolution:
    return "convolution";
  case XlaOpKind::kHeavyPooling:
    return "pooling";
  }
  return "";
}

bool IsHeavyOneDnnKernel(XlaOpKind kind) {
  return kind == XlaOpKind::kHeavyDot || kind == XlaOpKind::kHeavyConvolution ||
         kind == XlaOpKind::kHeavyPooling;
}

bool IsReductionFusion(XlaOpKind kind) {
  return kind == XlaOpKind::kReduction || kind == XlaOpKind::kSoftmax ||
         kind == XlaOpKind::kNormalization;
}

// Measured on the 2-core CPU by bench/bench_xla_cpu_fusion.py (8x32x32x192
// float32): XLA's CPU backend runs a reduction fused with its elementwise
// producers 1.2-4.2x slower than TensorFlow's Eigen kernels (a column sum of
// x*g 4.2x, a batch-norm gradient 1.7x, a softmax 1.5x), while it runs an
// elementwise chain about 3x faster; the regions keep to the chains.
std::string ReductionFusionReason(XlaOpKind kind) {
  return (XlaOpKindName(kind) +
          ": XLA's CPU reduction fusions run slower than TensorFlow's "
          "kernels (with-reductions=true lets it join)")
      .str();
}

// Re-profiled by the xla_regions rule on three training steps (EfficientNetB0,
// ConvNeXt-Tiny, the built-in transformer), the region holding the SGD updates
// always lost: 6.6 -> 19.2 ms, 32.7 -> 50.8 ms and 0.14 -> 0.91 ms a step. A
// read shared by independent chains (the learning rate's) joins them into one
// cluster, which starts only when all its inputs are ready; left out, a read is
// an input of each cluster using it.
std::string VariableAccessReason(XlaOpKind kind) {
  return (XlaOpKindName(kind) +
          ": a cluster holding variable accesses joins the chains they share "
          "and waits for all their inputs (with-variables=true lets it join)")
      .str();
}

std::string HeavyKernelReason(XlaOpKind kind) {
  return ("heavy oneDNN kernel: XLA's CPU " + XlaOpKindName(kind) +
          " is slower")
      .str();
}

llvm::StringRef TfOpType(Operation *op) {
  llvm::StringRef name = op->getName().getStringRef();
  return name.consume_front("tf.") ? name : llvm::StringRef();
}

bool IsStatefulRandomOp(llvm::StringRef type) {
  static const llvm::StringSet<> *ops = new llvm::StringSet<>{
      // compilability_check_util.h, IsStatefulRandomOp.
      "RandomUniform", "RandomShuffle", "RandomUniformInt",
      "RandomStandardNormal", "TruncatedNormal", "Multinomial",
      // resource_operation_table.cc: RNG state in a resource variable.
      "RngReadAndSkip", "RngSkip", "StatefulStandardNormalV2",
      "StatefulTruncatedNormal", "StatefulUniform", "StatefulUniformFullInt",
      "StatefulUniformInt"};
  return ops->contains(type);
}

bool IsControlFlowOrCall(Operation *op) {
  if (op->getNumRegions() > 0)
    return true;
  auto names_function = [](NamedAttribute attr) {
    return isa<SymbolRefAttr>(attr.getValue());
  };
  // Inherent attributes (`body`, `f`) live in the properties of registered
  // ops and of unregistered ones parsed with `<{...}>`.
  auto properties =
      dyn_cast_or_null<DictionaryAttr>(op->getPropertiesAsAttribute());
  return llvm::any_of(op->getAttrDictionary(), names_function) ||
         (properties && llvm::any_of(properties, names_function));
}

bool HasUnclusterableType(Operation *op) {
  return HasElementType(op, "!tf_type.string") ||
         HasElementType(op, "!tf_type.variant");
}

bool IsResourceTensor(Type type) {
  return llvm::StringRef(ElementTypeText(type))
      .starts_with("!tf_type.resource");
}

bool HasResourceOperand(Operation *op) {
  return HasElementType(op, "!tf_type.resource");
}

ResourceAccess GetResourceAccess(Operation *op) {
  llvm::StringRef type = TfOpType(op);
  if (type == "ReadVariableOp" || type == "ResourceGather" ||
      type == "VarIsInitializedOp" || type == "VariableShape")
    return ResourceAccess::kRead;
  if (type == "AssignVariableOp")
    return ResourceAccess::kWrite;
  if (ClassifyXlaOp(type) == XlaOpKind::kOptimizerUpdate ||
      type.starts_with("ResourceScatter") || IsStatefulRandomOp(type) ||
      type == "ResourceStridedSliceAssign")
    return ResourceAccess::kReadWrite;
  // MayCallFunction: assumed to read and write every resource it is given.
  if (IsControlFlowOrCall(op) && HasResourceOperand(op))
    return ResourceAccess::kReadWrite;
  return ResourceAccess::kNone;
}

bool IsResourceEdgeSafe(ResourceAccess from, ResourceAccess to) {
  return from == ResourceAccess::kRead || to == ResourceAccess::kWrite;
}

std::optional<std::string> WhyNotClusterable(Operation *op, bool include_heavy,
                                             bool with_reductions,
                                             bool with_variables) {
  llvm::StringRef type = TfOpType(op);
  if (type.empty())
    return std::string("not a tf op");
  if (IsControlFlowOrCall(op))
    return std::string("control flow or function call: mark_for_compilation "
                       "does not cluster functional control flow holding "
                       "resource ops and takes a call to touch every "
                       "resource");
  if (IsStatefulRandomOp(type))
    return std::string(
        "stateful random op: not compilable on the CPU JIT device");
  if (HasUnclusterableType(op))
    return std::string("string or variant tensor: XLA on CPU cannot hold it");
  XlaOpKind kind = ClassifyXlaOp(type);
  if (kind == XlaOpKind::kNoKernel)
    return std::string("no XLA kernel known to the pass's allow-list "
                       "(tf2xla/kernels)");
  if (IsHeavyOneDnnKernel(kind) && !include_heavy)
    return HeavyKernelReason(kind);
  if (IsReductionFusion(kind) && !with_reductions)
    return ReductionFusionReason(kind);
  if ((kind == XlaOpKind::kVariableRead ||
       kind == XlaOpKind::kOptimizerUpdate) &&
      !with_variables)
    return VariableAccessReason(kind);
  return std::nullopt;
}

} // namespace TF
} // namespace mlir
