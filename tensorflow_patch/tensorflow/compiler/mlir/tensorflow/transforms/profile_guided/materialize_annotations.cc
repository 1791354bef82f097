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

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "tensorflow/compiler/mlir/tensorflow/ir/tf_profiler_annotations.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/document_output.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/node_names.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/op_profile_reader.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/op_timing.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/work_kinds.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"

namespace mlir {
namespace TF {

#define GEN_PASS_DEF_PROFILEMATERIALIZEANNOTATIONSPASS
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h.inc"

namespace {

/// The sources found on one op, its own first. A record that only says
/// "fused into K" (the kernel K ran this op's work) names K as a source
/// without timing: K's timed record comes from the ops that carry it.
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

/// An op that computes nothing at run time: a constant, an empty tensor, or
/// an op whose operands are all such values (a broadcast of a constant:
/// compilers fold it).
bool ComputesNothing(Operation *op,
                     const llvm::DenseMap<Operation *, Work> &kinds) {
  llvm::StringRef name = op->getName().stripDialect();
  if (op->hasTrait<OpTrait::ConstantLike>() || name == "constant" ||
      name == "Const" || op->getName().getStringRef() == "tensor.empty" ||
      op->getName().getStringRef() == "bufferization.alloc_tensor")
    return true;
  if (op->getNumOperands() == 0)
    return false;
  return llvm::all_of(op->getOperands(), [&](Value operand) {
    Operation *producer = operand.getDefiningOp();
    if (!producer)
      return false;
    auto kind = kinds.find(producer);
    return kind != kinds.end() && kind->second == Work::kNone;
  });
}

/// The work `op` does; `kinds` holds the kinds of the ops before it.
Work KindOfWork(Operation *op, const llvm::DenseMap<Operation *, Work> &kinds) {
  if (ComputesNothing(op, kinds))
    return Work::kNone;
  llvm::StringRef dialect = op->getName().getDialectNamespace();
  llvm::StringRef name = op->getName().stripDialect();
  Work named = NamedWorkKind(dialect, name, Work::kCompute);
  if (named == Work::kMovement)
    return Work::kMovement;
  if (auto structured = llvm::dyn_cast<linalg::LinalgOp>(op))
    return structured.getNumReductionLoops() > 0 ? Work::kReduction
                                                 : Work::kCompute;
  return named;
}

/// One source found at this level: its record, the ops carrying it, and the
/// kind of work of the busiest of them.
struct LevelSource {
  ProfilerData data;
  bool timed = false; ///< A carrier had its timed record (not only fused).
  llvm::SmallVector<Operation *, 2> ops;
  Work charged_kind = Work::kNone;
  int64_t charged_ops = 0;
};

/// The part of one source charged to one op.
struct Part {
  int64_t self = 0, total = 0, device = 0;
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
    std::string name = data->IsFused() ? data->fused_into : data->source;
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
    // Entries of one name (several runtime entries that landed on one node,
    // renamed to it) are that node's record together, as at the tf level.
    llvm::StringMap<OpTiming> timings;
    for (const OpProfileEntry &entry : profile->ops)
      timings[entry.name].Add(entry);
    for (auto &[name, timing] : timings)
      by_name[name] = timing.ToProfilerData(
          /*all_self=*/0, /*all_device=*/profile->device_attributed_ps);
  }

  // Gather: the outermost op of each source keeps it; ops nested in an
  // annotated op (a linalg.generic's body, not a loop's) add their sources
  // to it. Every
  // op's kind of work is known before its users are visited.
  llvm::MapVector<Operation *, OpSources> annotated;
  llvm::DenseMap<Operation *, Work> kinds;
  int64_t level_ops = 0;
  module.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op == module || llvm::isa<FunctionOpInterface>(op) ||
        op->hasTrait<OpTrait::IsTerminator>())
      return WalkResult::advance();
    kinds[op] = KindOfWork(op, kinds);
    if (!IsProfileAnnotatableAtAnyLevel(op))
      return WalkResult::advance();
    ++level_ops;
    OpSources found;
    FindSources(op, by_name, found);
    if (found.sources.empty())
      return WalkResult::advance();
    for (Operation *parent = op->getParentOp(); parent;
         parent = parent->getParentOp()) {
      auto holder = annotated.find(parent);
      // A loop or a branch carries its own records (an scf.for its counter's
      // and compare's): its regions' ops do their own work.
      if (holder == annotated.end() || isa<RegionBranchOpInterface>(parent))
        continue;
      for (auto &[name, data] : found.sources)
        holder->second.Add(name, data);
      return WalkResult::skip();
    }
    annotated.insert({op, std::move(found)});
    return WalkResult::advance();
  });

  // Every source that reached the level, with the ops carrying it (as their
  // own or a fused source, or as the kernel they were fused into).
  llvm::MapVector<llvm::StringRef, LevelSource> level;
  for (auto &[op, found] : annotated)
    for (auto &[name, data] : found.sources) {
      LevelSource &source = level[name];
      if (!data.IsFused() && !source.timed) {
        source.data = data;
        source.timed = true;
      }
      source.ops.push_back(op);
      source.charged_kind = std::max(source.charged_kind, kinds.lookup(op));
    }
  level.remove_if([](const auto &entry) { return !entry.second.timed; });

  // Split: each source's time in equal integer parts over its carriers of
  // the highest kind of work; the others are charged nothing.
  llvm::DenseMap<std::pair<Operation *, llvm::StringRef>, Part> parts;
  int64_t level_self = 0, level_device = 0;
  for (auto &[name, source] : level) {
    llvm::SmallVector<Operation *, 2> charged;
    for (Operation *op : source.ops)
      if (kinds.lookup(op) == source.charged_kind)
        charged.push_back(op);
    source.charged_ops = charged.size();
    for (auto [index, op] : llvm::enumerate(charged)) {
      int64_t i = index, n = charged.size();
      parts[{op, name}] = {EqualPart(source.data.self, i, n),
                           EqualPart(source.data.total, i, n),
                           EqualPart(source.data.device_self, i, n)};
    }
    level_self += source.data.self;
    level_device += source.data.device_self;
  }

  module.walk([](Operation *op) { RemoveProfileAnnotations(op); });
  ProfilerDataEncoder encoder(module.getContext());
  for (auto &[op, found] : annotated) {
    auto own = llvm::find_if(found.sources, [&](const auto &entry) {
      return level.count(entry.first);
    });
    if (own == found.sources.end()) { // kernels timed nowhere at this level
      AttachProfilerData(op, found.sources.front().second, encoder);
      continue;
    }
    const LevelSource &source = level.find(own->first)->second;
    ProfilerData data = source.data;
    data.fused_into.clear();
    data.source = own->first;
    data.fanout = source.ops.size();
    data.source_self = source.data.self;
    data.source_device_self = source.data.device_self;
    data.fused_sources.clear();
    data.fused_parts.clear();
    Part sum = parts.lookup({op, own->first});
    for (auto &[name, other] : found.sources) {
      if (name == own->first || !level.count(name))
        continue;
      Part part = parts.lookup({op, name});
      data.fused_sources.push_back(name);
      data.fused_parts.push_back(part.self);
      sum.self += part.self;
      sum.total += part.total;
      sum.device += part.device;
    }
    if (!data.fused_sources.empty())
      ++numFusedSourceOps;
    data.self = sum.self;
    data.total = sum.total;
    data.device_self = sum.device;
    data.dur = data.count ? (data.total + data.count / 2) / data.count : 0;
    data.share = level_self > 0
                     ? RoundShare(static_cast<double>(data.self) / level_self)
                     : 0.0;
    data.device_share =
        level_device > 0
            ? RoundShare(static_cast<double>(data.device_self) / level_device)
            : 0.0;
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
            json.attribute("ops", static_cast<int64_t>(source.ops.size()));
            json.attribute("charged_ops", source.charged_ops);
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
