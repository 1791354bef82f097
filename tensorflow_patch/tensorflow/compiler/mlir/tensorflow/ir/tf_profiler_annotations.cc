//===- tf_profiler_annotations.cc - Profile annotations -------------------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "tensorflow/compiler/mlir/tensorflow/ir/tf_profiler_annotations.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include "tensorflow/compiler/mlir/tensorflow/ir/tf_profiler_annotations.cc.inc"

namespace mlir {
namespace TF {
namespace {

/// Field names of the `profiler_data` dictionary, in documentation order.
constexpr llvm::StringLiteral kTs = "ts", kDur = "dur", kCount = "count",
                              kTotal = "total", kSelf = "self", kMin = "min",
                              kMax = "max", kP50 = "p50", kP95 = "p95",
                              kShare = "share", kFusedInto = "fused_into";

/// Reads the i64 field `name` of `dict` into `out`; false if absent.
bool ReadInt(DictionaryAttr dict, llvm::StringRef name, int64_t &out) {
  auto attr = llvm::dyn_cast_or_null<IntegerAttr>(dict.get(name));
  if (!attr || !attr.getType().isInteger(64))
    return false;
  out = attr.getInt();
  return true;
}

} // namespace

DictionaryAttr ProfilerData::ToAttr(MLIRContext *context) const {
  Builder b(context);
  if (IsFused())
    return b.getDictionaryAttr(
        {b.getNamedAttr(kFusedInto, b.getStringAttr(fused_into))});
  return b.getDictionaryAttr({
      b.getNamedAttr(kTs, b.getI64IntegerAttr(ts)),
      b.getNamedAttr(kDur, b.getI64IntegerAttr(dur)),
      b.getNamedAttr(kCount, b.getI64IntegerAttr(count)),
      b.getNamedAttr(kTotal, b.getI64IntegerAttr(total)),
      b.getNamedAttr(kSelf, b.getI64IntegerAttr(self)),
      b.getNamedAttr(kMin, b.getI64IntegerAttr(min)),
      b.getNamedAttr(kMax, b.getI64IntegerAttr(max)),
      b.getNamedAttr(kP50, b.getI64IntegerAttr(p50)),
      b.getNamedAttr(kP95, b.getI64IntegerAttr(p95)),
      b.getNamedAttr(kShare, b.getF64FloatAttr(share)),
  });
}

std::optional<ProfilerData> ProfilerData::FromAttr(DictionaryAttr attr) {
  if (!attr)
    return std::nullopt;
  ProfilerData data;
  if (auto fused = llvm::dyn_cast_or_null<StringAttr>(attr.get(kFusedInto))) {
    if (fused.getValue().empty())
      return std::nullopt;
    data.fused_into = fused.getValue().str();
    return data;
  }
  auto share = llvm::dyn_cast_or_null<FloatAttr>(attr.get(kShare));
  if (!share || !ReadInt(attr, kTs, data.ts) ||
      !ReadInt(attr, kDur, data.dur) || !ReadInt(attr, kCount, data.count) ||
      !ReadInt(attr, kTotal, data.total) || !ReadInt(attr, kSelf, data.self) ||
      !ReadInt(attr, kMin, data.min) || !ReadInt(attr, kMax, data.max) ||
      !ReadInt(attr, kP50, data.p50) || !ReadInt(attr, kP95, data.p95))
    return std::nullopt;
  data.share = share.getValueAsDouble();
  return data;
}

void SetProfilerDataAttr(Operation *op, const ProfilerData &data) {
  op->setAttr(kProfilerDataAttrName, data.ToAttr(op->getContext()));
}

std::optional<ProfilerData> ReadProfilerDataAttr(Operation *op) {
  return ProfilerData::FromAttr(
      op->getAttrOfType<DictionaryAttr>(kProfilerDataAttrName));
}

bool HasProfilerDataAttr(Operation *op) {
  return op->hasAttr(kProfilerDataAttrName);
}

bool IsProfileAnnotatable(Operation *op) {
  if (llvm::isa<ProfilerAnnotationsInterface>(op))
    return true;
  return !op->isRegistered() && op->getName().getDialectNamespace() == "tf";
}

void AttachProfilerData(Operation *op, const ProfilerData &data) {
  if (auto iface = llvm::dyn_cast<ProfilerAnnotationsInterface>(op))
    return iface.AttachProfilerData(data);
  SetProfilerDataAttr(op, data);
}

std::optional<ProfilerData> GetProfilerData(Operation *op) {
  if (auto iface = llvm::dyn_cast<ProfilerAnnotationsInterface>(op))
    return iface.GetProfilerData();
  return ReadProfilerDataAttr(op);
}

bool HasProfilerData(Operation *op) {
  if (auto iface = llvm::dyn_cast<ProfilerAnnotationsInterface>(op))
    return iface.HasProfilerData();
  return HasProfilerDataAttr(op);
}

bool RemoveProfileAnnotations(Operation *op) {
  bool had_data = static_cast<bool>(op->removeAttr(kProfilerDataAttrName));
  bool had_hot = static_cast<bool>(op->removeAttr(kProfilerHotAttrName));
  return had_data || had_hot;
}

} // namespace TF
} // namespace mlir
