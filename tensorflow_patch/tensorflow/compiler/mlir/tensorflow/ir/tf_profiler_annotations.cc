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
                              kShare = "share", kFusedInto = "fused_into",
                              kXlaFusion = "xla_fusion",
                              kXlaModule = "xla_module";

/// Reads `value` as an i64 into `out`; false if it is not one.
bool ReadInt(Attribute value, int64_t &out) {
  auto attr = llvm::dyn_cast<IntegerAttr>(value);
  if (!attr || !attr.getType().isInteger(64))
    return false;
  out = attr.getInt();
  return true;
}

} // namespace

ProfilerDataEncoder::ProfilerDataEncoder(MLIRContext *context)
    : attr_name_(StringAttr::get(context, kProfilerDataAttrName)),
      count_(StringAttr::get(context, kCount)),
      dur_(StringAttr::get(context, kDur)),
      fused_into_(StringAttr::get(context, kFusedInto)),
      max_(StringAttr::get(context, kMax)),
      min_(StringAttr::get(context, kMin)),
      p50_(StringAttr::get(context, kP50)),
      p95_(StringAttr::get(context, kP95)),
      self_(StringAttr::get(context, kSelf)),
      share_(StringAttr::get(context, kShare)),
      total_(StringAttr::get(context, kTotal)),
      ts_(StringAttr::get(context, kTs)),
      xla_fusion_(StringAttr::get(context, kXlaFusion)),
      xla_module_(StringAttr::get(context, kXlaModule)) {}

DictionaryAttr ProfilerDataEncoder::Encode(const ProfilerData &data) const {
  MLIRContext *context = attr_name_.getContext();
  if (data.IsFused())
    return DictionaryAttr::getWithSorted(
        context, {{fused_into_, StringAttr::get(context, data.fused_into)}});
  Type i64 = IntegerType::get(context, 64);
  auto integer = [&](int64_t value) { return IntegerAttr::get(i64, value); };
  // Already in sorted order: skips DictionaryAttr's sort and duplicate check.
  llvm::SmallVector<NamedAttribute, 12> fields = {
      {count_, integer(data.count)},
      {dur_, integer(data.dur)},
      {max_, integer(data.max)},
      {min_, integer(data.min)},
      {p50_, integer(data.p50)},
      {p95_, integer(data.p95)},
      {self_, integer(data.self)},
      {share_, FloatAttr::get(Float64Type::get(context), data.share)},
      {total_, integer(data.total)},
      {ts_, integer(data.ts)},
  };
  // Optional XLA origin; `xla_*` sorts after `ts`.
  if (!data.xla_fusion.empty())
    fields.push_back({xla_fusion_, StringAttr::get(context, data.xla_fusion)});
  if (!data.xla_module.empty())
    fields.push_back({xla_module_, StringAttr::get(context, data.xla_module)});
  return DictionaryAttr::getWithSorted(context, fields);
}

void ProfilerDataEncoder::SetAttr(Operation *op,
                                  const ProfilerData &data) const {
  op->setAttr(attr_name_, Encode(data));
}

DictionaryAttr ProfilerData::ToAttr(MLIRContext *context) const {
  return ProfilerDataEncoder(context).Encode(*this);
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
  // DictionaryAttr keeps its fields sorted by name, and so does this list:
  // one merge pass decodes them. Unknown fields are ignored, every known one
  // must be present and typed.
  struct Field {
    llvm::StringRef name;
    int64_t *slot; ///< nullptr for `share`, the only f64.
  };
  const Field fields[] = {{kCount, &data.count}, {kDur, &data.dur},
                          {kMax, &data.max},     {kMin, &data.min},
                          {kP50, &data.p50},     {kP95, &data.p95},
                          {kSelf, &data.self},   {kShare, nullptr},
                          {kTotal, &data.total}, {kTs, &data.ts}};
  size_t next = 0;
  for (NamedAttribute entry : attr) {
    if (next == std::size(fields))
      break;
    int order = entry.getName().getValue().compare(fields[next].name);
    if (order < 0)
      continue;
    if (order > 0)
      return std::nullopt;
    const Field &field = fields[next++];
    if (field.slot) {
      if (!ReadInt(entry.getValue(), *field.slot))
        return std::nullopt;
      continue;
    }
    auto share = llvm::dyn_cast<FloatAttr>(entry.getValue());
    if (!share)
      return std::nullopt;
    data.share = share.getValueAsDouble();
  }
  if (next != std::size(fields))
    return std::nullopt;
  if (auto module = llvm::dyn_cast_or_null<StringAttr>(attr.get(kXlaModule)))
    data.xla_module = module.getValue().str();
  if (auto fusion = llvm::dyn_cast_or_null<StringAttr>(attr.get(kXlaFusion)))
    data.xla_fusion = fusion.getValue().str();
  return data;
}

void SetProfilerDataAttr(Operation *op, const ProfilerData &data) {
  ProfilerDataEncoder(op->getContext()).SetAttr(op, data);
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

void AttachProfilerData(Operation *op, const ProfilerData &data,
                        const ProfilerDataEncoder &encoder) {
  if (auto iface = llvm::dyn_cast<ProfilerAnnotationsInterface>(op))
    return iface.AttachProfilerData(data);
  encoder.SetAttr(op, data);
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
  bool removed = false;
  // Looking first spares unannotated ops (most of them) an attribute
  // dictionary rebuild each.
  for (llvm::StringRef name : {kProfilerDataAttrName, kProfilerHotAttrName})
    if (op->getAttr(name))
      removed |= static_cast<bool>(op->removeAttr(name));
  return removed;
}

} // namespace TF
} // namespace mlir
