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
                              kMerged = "merged", kSource = "source",
                              kFanout = "fanout",
                              kFusedSources = "fused_sources",
                              kFusedParts = "fused_parts",
                              kSourceSelf = "source_self",
                              kSourceDeviceSelf = "source_device_self",
                              kXlaFusion = "xla_fusion",
                              kXlaModule = "xla_module",
                              kDeviceCount = "device_count",
                              kDeviceSelf = "device_self",
                              kDeviceShare = "device_share";

/// Reads `value` as an i64 into `out`; false if it is not one.
bool ReadInt(Attribute value, int64_t &out) {
  auto attr = llvm::dyn_cast<IntegerAttr>(value);
  if (!attr || !attr.getType().isInteger(64))
    return false;
  out = attr.getInt();
  return true;
}

/// Reads the optional fields of a `profiler_data` dictionary into `data`;
/// false if one is present with the wrong type.
bool ReadOptionalFields(DictionaryAttr attr, ProfilerData &data) {
  if (Attribute merged = attr.get(kMerged))
    if (!ReadInt(merged, data.merged))
      return false;
  for (auto [key, slot] :
       {std::pair{kFanout, &data.fanout},
        std::pair{kSourceSelf, &data.source_self},
        std::pair{kSourceDeviceSelf, &data.source_device_self}})
    if (Attribute value = attr.get(key))
      if (!ReadInt(value, *slot))
        return false;
  if (Attribute count = attr.get(kDeviceCount))
    if (!ReadInt(count, data.device_count))
      return false;
  if (Attribute self = attr.get(kDeviceSelf))
    if (!ReadInt(self, data.device_self))
      return false;
  if (Attribute share = attr.get(kDeviceShare)) {
    auto value = llvm::dyn_cast<FloatAttr>(share);
    if (!value)
      return false;
    data.device_share = value.getValueAsDouble();
  }
  for (auto [key, slot] : {std::pair{kSource, &data.source},
                           std::pair{kXlaModule, &data.xla_module},
                           std::pair{kXlaFusion, &data.xla_fusion}}) {
    Attribute value = attr.get(key);
    if (!value)
      continue;
    auto text = llvm::dyn_cast<StringAttr>(value);
    if (!text)
      return false;
    *slot = text.getValue().str();
  }
  if (Attribute fused = attr.get(kFusedSources)) {
    auto array = llvm::dyn_cast<ArrayAttr>(fused);
    if (!array)
      return false;
    for (Attribute element : array) {
      auto text = llvm::dyn_cast<StringAttr>(element);
      if (!text)
        return false;
      data.fused_sources.push_back(text.getValue().str());
    }
  }
  if (Attribute parts = attr.get(kFusedParts)) {
    auto array = llvm::dyn_cast<ArrayAttr>(parts);
    if (!array)
      return false;
    for (Attribute element : array) {
      int64_t part = 0;
      if (!ReadInt(element, part))
        return false;
      data.fused_parts.push_back(part);
    }
  }
  return true;
}

/// Returns the `profiler_data` record of FusedLoc metadata, or null.
DictionaryAttr ProfileOfMetadata(FusedLoc fused) {
  auto metadata = llvm::dyn_cast_or_null<DictionaryAttr>(fused.getMetadata());
  if (!metadata)
    return nullptr;
  return metadata.getAs<DictionaryAttr>(kProfileLocationKey);
}

/// Returns `loc` without the record at its very top (the op's own).
Location WithoutOwnProfile(Location loc) {
  auto fused = llvm::dyn_cast<FusedLoc>(loc);
  if (!fused || !ProfileOfMetadata(fused))
    return loc;
  return FusedLoc::get(loc->getContext(), fused.getLocations());
}

} // namespace

ProfilerDataEncoder::ProfilerDataEncoder(MLIRContext *context)
    : attr_name_(StringAttr::get(context, kProfilerDataAttrName)),
      count_(StringAttr::get(context, kCount)),
      device_count_(StringAttr::get(context, kDeviceCount)),
      device_self_(StringAttr::get(context, kDeviceSelf)),
      device_share_(StringAttr::get(context, kDeviceShare)),
      dur_(StringAttr::get(context, kDur)),
      fanout_(StringAttr::get(context, kFanout)),
      fused_into_(StringAttr::get(context, kFusedInto)),
      fused_parts_(StringAttr::get(context, kFusedParts)),
      fused_sources_(StringAttr::get(context, kFusedSources)),
      max_(StringAttr::get(context, kMax)),
      merged_(StringAttr::get(context, kMerged)),
      min_(StringAttr::get(context, kMin)),
      p50_(StringAttr::get(context, kP50)),
      p95_(StringAttr::get(context, kP95)),
      self_(StringAttr::get(context, kSelf)),
      share_(StringAttr::get(context, kShare)),
      source_(StringAttr::get(context, kSource)),
      source_device_self_(StringAttr::get(context, kSourceDeviceSelf)),
      source_self_(StringAttr::get(context, kSourceSelf)),
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
  // Built in sorted order: skips DictionaryAttr's sort and duplicate check.
  // The optional fields appear only when set, so a plain tf-level record
  // stays the ten documented fields.
  llvm::SmallVector<NamedAttribute, 20> fields = {
      {count_, integer(data.count)}};
  if (data.device_count > 0)
    fields.append({{device_count_, integer(data.device_count)},
                   {device_self_, integer(data.device_self)},
                   {device_share_, FloatAttr::get(Float64Type::get(context),
                                                  data.device_share)}});
  fields.push_back({dur_, integer(data.dur)});
  if (data.fanout > 0)
    fields.push_back({fanout_, integer(data.fanout)});
  if (!data.fused_parts.empty()) {
    llvm::SmallVector<Attribute, 4> parts;
    for (int64_t part : data.fused_parts)
      parts.push_back(integer(part));
    fields.push_back({fused_parts_, ArrayAttr::get(context, parts)});
  }
  if (!data.fused_sources.empty()) {
    llvm::SmallVector<Attribute, 4> names;
    for (const std::string &name : data.fused_sources)
      names.push_back(StringAttr::get(context, name));
    fields.push_back({fused_sources_, ArrayAttr::get(context, names)});
  }
  fields.push_back({max_, integer(data.max)});
  if (data.merged > 0)
    fields.push_back({merged_, integer(data.merged)});
  fields.append(
      {{min_, integer(data.min)},
       {p50_, integer(data.p50)},
       {p95_, integer(data.p95)},
       {self_, integer(data.self)},
       {share_, FloatAttr::get(Float64Type::get(context), data.share)}});
  if (!data.source.empty())
    fields.push_back({source_, StringAttr::get(context, data.source)});
  if (data.source_device_self > 0)
    fields.push_back({source_device_self_, integer(data.source_device_self)});
  if (!data.source.empty() && data.fanout > 0)
    fields.push_back({source_self_, integer(data.source_self)});
  fields.append({{total_, integer(data.total)}, {ts_, integer(data.ts)}});
  // `xla_*` sorts after `ts`.
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
  // one merge pass decodes the required fields. Unknown fields are ignored,
  // every required one must be present and typed.
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
  if (next != std::size(fields) || !ReadOptionalFields(attr, data))
    return std::nullopt;
  return data;
}

Location WithProfileInLocation(Location loc, DictionaryAttr data) {
  MLIRContext *context = loc->getContext();
  auto metadata = DictionaryAttr::get(
      context,
      {NamedAttribute(StringAttr::get(context, kProfileLocationKey), data)});
  return FusedLoc::get(context, {WithoutOwnProfile(loc)}, metadata);
}

Location WithForwardedProfile(Location loc, DictionaryAttr data) {
  MLIRContext *context = loc->getContext();
  auto fused = llvm::dyn_cast<FusedLoc>(loc);
  if (!fused || !ProfileOfMetadata(fused) || fused.getLocations().size() != 1)
    return WithProfileInLocation(loc, data);
  // Below the op's own record, which stays the first found.
  Location inner = WithForwardedProfile(fused.getLocations().front(), data);
  return FusedLoc::get(context, {inner}, fused.getMetadata());
}

Location WithoutProfileInLocation(Location loc) {
  // Wherever CollectProfilesInLocation finds a record: records are stacked at
  // the top, but inlining wraps a callee's locations, records and all, in a
  // CallSiteLoc (the loop bodies of the XLA bridge route).
  MLIRContext *context = loc->getContext();
  if (auto fused = llvm::dyn_cast<FusedLoc>(loc)) {
    llvm::SmallVector<Location> inner;
    bool changed = false;
    for (Location location : fused.getLocations()) {
      inner.push_back(WithoutProfileInLocation(location));
      changed |= inner.back() != location;
    }
    if (ProfileOfMetadata(fused))
      return FusedLoc::get(context, inner);
    return changed ? FusedLoc::get(context, inner, fused.getMetadata()) : loc;
  }
  if (auto name_loc = llvm::dyn_cast<NameLoc>(loc)) {
    Location child = WithoutProfileInLocation(name_loc.getChildLoc());
    return child == name_loc.getChildLoc()
               ? loc
               : NameLoc::get(name_loc.getName(), child);
  }
  if (auto call_loc = llvm::dyn_cast<CallSiteLoc>(loc)) {
    Location callee = WithoutProfileInLocation(call_loc.getCallee());
    return callee == call_loc.getCallee()
               ? loc
               : CallSiteLoc::get(callee, call_loc.getCaller());
  }
  if (auto opaque_loc = llvm::dyn_cast<OpaqueLoc>(loc)) {
    Location fallback =
        WithoutProfileInLocation(opaque_loc.getFallbackLocation());
    return fallback == opaque_loc.getFallbackLocation()
               ? loc
               : OpaqueLoc::get(opaque_loc.getUnderlyingLocation(),
                                opaque_loc.getUnderlyingTypeID(), fallback);
  }
  return loc;
}

void CollectProfilesInLocation(Location loc,
                               llvm::SmallVectorImpl<DictionaryAttr> &out) {
  if (auto fused = llvm::dyn_cast<FusedLoc>(loc)) {
    if (DictionaryAttr profile = ProfileOfMetadata(fused))
      out.push_back(profile);
    for (Location inner : fused.getLocations())
      CollectProfilesInLocation(inner, out);
    return;
  }
  if (auto name_loc = llvm::dyn_cast<NameLoc>(loc))
    return CollectProfilesInLocation(name_loc.getChildLoc(), out);
  if (auto call_loc = llvm::dyn_cast<CallSiteLoc>(loc))
    return CollectProfilesInLocation(call_loc.getCallee(), out);
  if (auto opaque_loc = llvm::dyn_cast<OpaqueLoc>(loc))
    return CollectProfilesInLocation(opaque_loc.getFallbackLocation(), out);
}

void SetProfilerDataAttr(Operation *op, const ProfilerData &data) {
  ProfilerDataEncoder(op->getContext()).SetAttr(op, data);
}

std::optional<ProfilerData> ReadProfilerDataAttr(Operation *op) {
  if (auto attr = op->getAttrOfType<DictionaryAttr>(kProfilerDataAttrName))
    return ProfilerData::FromAttr(attr);
  llvm::SmallVector<DictionaryAttr, 1> carried;
  CollectProfilesInLocation(op->getLoc(), carried);
  if (carried.empty())
    return std::nullopt;
  return ProfilerData::FromAttr(carried.front());
}

bool HasProfilerDataAttr(Operation *op) {
  if (op->hasAttr(kProfilerDataAttrName))
    return true;
  llvm::SmallVector<DictionaryAttr, 1> carried;
  CollectProfilesInLocation(op->getLoc(), carried);
  return !carried.empty();
}

bool IsProfileAnnotatable(Operation *op) {
  if (llvm::isa<ProfilerAnnotationsInterface>(op))
    return true;
  return !op->isRegistered() && op->getName().getDialectNamespace() == "tf";
}

bool IsProfileAnnotatableAtAnyLevel(Operation *op) {
  return llvm::isa<ProfilerAnnotationsInterface>(op) || !op->isRegistered();
}

void AttachProfilerData(Operation *op, const ProfilerData &data) {
  if (auto iface = llvm::dyn_cast<ProfilerAnnotationsInterface>(op))
    return iface.AttachProfilerData(data);
  SetProfilerDataAttr(op, data);
}

void AttachProfilerData(Operation *op, const ProfilerData &data,
                        const ProfilerDataEncoder &encoder) {
  if (auto iface = llvm::dyn_cast<ProfilerAnnotationsInterface>(op))
    return iface.AttachEncodedProfilerData(data, encoder);
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
  Location plain = WithoutProfileInLocation(op->getLoc());
  if (plain != op->getLoc()) {
    op->setLoc(plain);
    removed = true;
  }
  // Lowerings give a region's arguments the location of the op that made the
  // region (a reduction's body), records included.
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (BlockArgument argument : block.getArguments()) {
        Location plain_argument = WithoutProfileInLocation(argument.getLoc());
        if (plain_argument != argument.getLoc()) {
          argument.setLoc(plain_argument);
          removed = true;
        }
      }
  // Looking first spares unannotated ops (most of them) an attribute
  // dictionary rebuild each.
  for (llvm::StringRef name :
       {kProfilerDataAttrName, kProfilerHotAttrName,
        kProfilerBranchCountsAttrName, kProfilerTripCountAttrName})
    if (op->getAttr(name))
      removed |= static_cast<bool>(op->removeAttr(name));
  return removed;
}

} // namespace TF
} // namespace mlir
