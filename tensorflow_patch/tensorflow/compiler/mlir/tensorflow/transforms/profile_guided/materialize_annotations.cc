//===- materialize_annotations.cc - Profile at any level ------------------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Implements `tf-profile-materialize-annotations` (see passes.td): after a
// lowering, the ops that kept a profiled op's location get its measurements
// back as `profiler_data`, with the source's node name and fan-out. Gathers
// every op's sources first, then attaches.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <string>
#include <vector>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "tensorflow/compiler/mlir/tensorflow/ir/tf_profiler_annotations.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/document_output.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/node_names.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/op_profile_reader.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/op_timing.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"

namespace mlir {
namespace TF {

#define GEN_PASS_DEF_PROFILEMATERIALIZEANNOTATIONSPASS
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h.inc"

namespace {

/// The sources found on one op, its own first.
struct OpSources {
  /// Source name -> its record (fused records carry only `fused_into`).
  llvm::SmallVector<std::pair<std::string, ProfilerData>, 1> sources;

  void Add(std::string name, ProfilerData data) {
    for (const auto &known : sources)
      if (known.first == name)
        return;
    sources.emplace_back(std::move(name), std::move(data));
  }
};

/// One source found at this level: its record and how many ops carry it.
struct LevelSource {
  ProfilerData data;
  int64_t ops = 0;
};

/// See passes.td.
class ProfileMaterializeAnnotationsPass
    : public impl::ProfileMaterializeAnnotationsPassBase<
          ProfileMaterializeAnnotationsPass> {
public:
  using ProfileMaterializeAnnotationsPassBase::
      ProfileMaterializeAnnotationsPassBase;

  void runOnOperation() override;

private:
  bool WriteSummary(const llvm::MapVector<llvm::StringRef, LevelSource> &level,
                    int64_t level_ops);
};

/// Appends the sources `op`'s location names to `out`: carried records, else
/// node names found in `by_name` (runtime name -> measurements).
void FindSources(Operation *op, const llvm::StringMap<ProfilerData> &by_name,
                 OpSources &out) {
  llvm::SmallVector<DictionaryAttr, 2> carried;
  CollectProfilesInLocation(op->getLoc(), carried);
  for (DictionaryAttr record : carried) {
    std::optional<ProfilerData> data = ProfilerData::FromAttr(record);
    if (!data)
      continue;
    std::string name = data->source;
    if (name.empty())
      name = GetNodeName(op).str();
    out.Add(std::move(name), std::move(*data));
  }
  if (!out.sources.empty() || by_name.empty())
    return;
  llvm::SmallVector<llvm::StringRef, 2> names;
  GetNodeNames(op->getLoc(), names);
  for (llvm::StringRef name : names) {
    auto known = by_name.find(name);
    if (known != by_name.end())
      out.Add(name.str(), known->second);
  }
}

void ProfileMaterializeAnnotationsPass::runOnOperation() {
  ModuleOp module = getOperation();
  llvm::StringMap<ProfilerData> by_name;
  if (!pathToProfile.empty()) {
    llvm::Expected<OpProfile> profile = ReadOpProfile(pathToProfile);
    if (!profile) {
      emitError(module.getLoc()) << llvm::toString(profile.takeError());
      return signalPassFailure();
    }
    for (const OpProfileEntry &entry : profile->ops) {
      OpTiming timing;
      timing.Add(entry);
      by_name[entry.name] = timing.ToProfilerData(
          /*all_self=*/0, /*all_device=*/profile->device_attributed_ps);
    }
  }

  // Gather: the outermost op of each source keeps it; ops nested in an
  // annotated op (a linalg.generic's body) add their sources to it.
  llvm::MapVector<Operation *, OpSources> annotated;
  int64_t level_ops = 0;
  module.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op == module || llvm::isa<FunctionOpInterface>(op) ||
        op->hasTrait<OpTrait::IsTerminator>() ||
        !IsProfileAnnotatableAtAnyLevel(op))
      return WalkResult::advance();
    ++level_ops;
    OpSources found;
    FindSources(op, by_name, found);
    if (found.sources.empty())
      return WalkResult::advance();
    for (Operation *parent = op->getParentOp(); parent;
         parent = parent->getParentOp()) {
      auto holder = annotated.find(parent);
      if (holder == annotated.end())
        continue;
      for (auto &[name, data] : found.sources)
        holder->second.Add(name, data);
      return WalkResult::skip();
    }
    annotated.insert({op, std::move(found)});
    return WalkResult::advance();
  });

  // Every source that reached the level, as an op's own or a fused one,
  // with the number of ops holding it; fused records hold no time of their
  // own.
  llvm::MapVector<llvm::StringRef, LevelSource> level;
  for (auto &[op, found] : annotated)
    for (auto &[name, data] : found.sources) {
      if (data.IsFused())
        continue;
      LevelSource &source = level[name];
      source.data = data;
      ++source.ops;
    }
  int64_t level_self = 0;
  for (auto &entry : level)
    level_self += entry.second.data.self;

  module.walk([](Operation *op) { RemoveProfileAnnotations(op); });
  ProfilerDataEncoder encoder(module.getContext());
  for (auto &[op, found] : annotated) {
    auto &[name, own] = found.sources.front();
    ProfilerData data = own;
    if (!data.IsFused()) {
      data.source = name;
      data.fanout = level.find(name)->second.ops;
      data.share = level_self > 0
                       ? RoundShare(static_cast<double>(data.self) / level_self)
                       : 0.0;
      for (auto &other : llvm::drop_begin(found.sources))
        data.fused_sources.push_back(other.first);
      if (!data.fused_sources.empty())
        ++numFusedSourceOps;
    }
    AttachProfilerData(op, data, encoder);
  }
  numAnnotatedOps += annotated.size();
  numSources += level.size();
  if (!summaryOutput.empty() && !WriteSummary(level, level_ops))
    return signalPassFailure();
}

bool ProfileMaterializeAnnotationsPass::WriteSummary(
    const llvm::MapVector<llvm::StringRef, LevelSource> &level,
    int64_t level_ops) {
  int64_t self_ps = 0, device_ps = 0;
  for (const auto &entry : level) {
    self_ps += entry.second.data.self;
    device_ps += entry.second.data.device_self;
  }
  auto write = [&](llvm::raw_ostream &os) {
    llvm::json::OStream json(os, /*IndentSize=*/1);
    json.object([&] {
      json.attribute("format", "tfpgo.level_profile");
      json.attribute("version", 1);
      json.attribute("time_unit", "ps");
      json.attribute("level_ops", level_ops);
      json.attribute("annotated_ops", static_cast<int64_t>(numAnnotatedOps));
      json.attribute("source_self_ps", self_ps);
      if (device_ps > 0) // device time (op profile v3) only where there is some
        json.attribute("source_device_ps", device_ps);
      json.attributeArray("sources", [&] {
        for (const auto &[name, source] : level)
          json.object([&] {
            json.attribute("name", name);
            json.attribute("self_ps", source.data.self);
            json.attribute("total_ps", source.data.total);
            json.attribute("count", source.data.count);
            if (source.data.device_count > 0)
              json.attribute("device_ps", source.data.device_self);
            json.attribute("ops", source.ops);
          });
      });
    });
    os << "\n";
  };
  return succeeded(WriteDocument(summaryOutput, "level summary",
                                 getOperation().getLoc(), write));
}

} // namespace
} // namespace TF
} // namespace mlir
