//===- profile_branch_weights.cc - Measured branch and trip counts --------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Implements `tf-profile-branch-weights`, the first profile-guided
// transformation of `tf-profile-guided-pipeline`. The annotate pass put
// execution counts on the ops inside branches and loop bodies; this pass turns
// them into how often each branch of a control-flow op was taken and how many
// times each loop went round, and into `branch_weights` on upstream branch
// terminators, which MLIR's LLVM translation emits as `!prof` metadata.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "tensorflow/compiler/mlir/tensorflow/ir/tf_profiler_annotations.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/node_names.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir {
namespace TF {

#define GEN_PASS_DEF_PROFILEBRANCHWEIGHTSPASS
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h.inc"

namespace {

/// One place control can go from a control-flow op: a branch function, a
/// region or a successor block.
struct Target {
  /// How remarks name it: "then @f", "branch 1", "successor #0".
  std::string label;
  /// Where its ops are; only ops directly in these blocks count (ops of
  /// nested regions run a different number of times).
  llvm::SmallVector<Block *, 1> blocks;
  /// Why its ops' counts are not its own ("" if they are): a function other
  /// ops also use, a block other edges also reach.
  std::string shared;
};

/// What decides one op's counts.
enum class SiteKind {
  kBranches,   ///< If/Case: exactly one target runs per execution.
  kLoop,       ///< While: targets are [cond, body].
  kTerminator, ///< A WeightedBranchOpInterface terminator: one successor.
};

/// A control-flow op and its targets, collected before anything changes.
struct Site {
  Operation *op;
  SiteKind kind;
  llvm::SmallVector<Target, 2> targets;
  /// Why the op's targets cannot be found ("" if they can): it names a
  /// function the module does not define, or lacks the attribute.
  std::string malformed;
};

/// How often one target ran, as far as the profile tells.
struct TargetCount {
  bool measured = false; ///< Some op directly in it was profiled.
  int64_t count = 0;     ///< Most executions of those ops.
  /// When nothing in it was profiled: the first op directly in it that
  /// TensorFlow runs as a kernel, which the profile would show had the
  /// target run ("" if there is none: then its count is unknown, not 0).
  std::string witness;
};

/// Returns true if the profile shows `op` whenever it runs: a tf op that
/// runs as a kernel of its own. Identity-like ops and constants are often
/// pruned or inlined by the runtime; terminators are not kernels.
bool ShowsInProfile(Operation &op) {
  if (op.hasTrait<OpTrait::IsTerminator>())
    return false;
  llvm::StringRef name = op.getName().getStringRef();
  if (!name.starts_with("tf.") || name == "tf.Yield")
    return false;
  return !llvm::is_contained({"tf.Const", "tf.Identity", "tf.IdentityN",
                              "tf.NoOp", "tf.StopGradient", "tf.Snapshot"},
                             name);
}

/// Returns true if `op`'s regions run exactly once each time `op` runs: the
/// wrappers of TensorFlow's graph form (tf_executor.graph, tf_executor.island)
/// and of device placement, whose ops belong to the enclosing block.
bool RunsRegionsOnce(Operation &op) {
  return llvm::is_contained({"tf_executor.graph", "tf_executor.island",
                             "tf_device.cluster", "tf_device.launch"},
                            op.getName().getStringRef());
}

/// Returns the most executions of a profiled op directly in `blocks` (or in
/// a wrapper that runs its regions once). A record that merged several
/// runtime names (CSE) adds their counts, so records of a single name are
/// preferred when there are any.
TargetCount CountOf(llvm::ArrayRef<Block *> blocks) {
  int64_t single = 0, any = 0;
  std::string witness;
  std::function<void(Block &)> visit = [&](Block &block) {
    for (Operation &op : block) {
      if (RunsRegionsOnce(op))
        for (Region &region : op.getRegions())
          for (Block &inner : region)
            visit(inner);
      if (witness.empty() && ShowsInProfile(op))
        witness = op.getName().getStringRef().str();
      std::optional<ProfilerData> data = GetProfilerData(&op);
      if (!data || data->IsFused() || data->count <= 0)
        continue;
      any = std::max(any, data->count);
      if (data->merged == 0)
        single = std::max(single, data->count);
    }
  };
  for (Block *block : blocks)
    visit(*block);
  int64_t most = single > 0 ? single : any;
  if (most > 0)
    return {true, most, ""};
  return {false, 0, witness};
}

/// Returns how many times `op` itself ran, if it was profiled (a control-flow
/// op runs as a kernel only when TensorFlow did not lower it to
/// Switch/Merge or Enter/Exit).
std::optional<int64_t> OwnCount(Operation *op) {
  std::optional<ProfilerData> data = GetProfilerData(op);
  if (!data || data->IsFused() || data->count <= 0)
    return std::nullopt;
  return data->count;
}

/// Returns `op`'s name for messages: `tf.If "cond"`, or `cf.cond_br`.
std::string Describe(Operation *op) {
  llvm::StringRef node = GetNodeName(op);
  std::string text = op->getName().getStringRef().str();
  if (!node.empty())
    text += " \"" + node.str() + "\"";
  return text;
}

/// Returns `counts` as i32 branch weights: scaled down, keeping their ratios,
/// when the largest does not fit, and a taken branch never weighs 0.
llvm::SmallVector<int32_t> ToWeights(llvm::ArrayRef<int64_t> counts) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  int64_t most = counts.empty() ? 0 : *llvm::max_element(counts);
  int64_t divisor = most > kMax ? most / kMax + 1 : 1;
  llvm::SmallVector<int32_t> weights;
  for (int64_t count : counts) {
    int64_t weight = count / divisor;
    weights.push_back(
        static_cast<int32_t>(count > 0 && weight == 0 ? 1 : weight));
  }
  return weights;
}

/// Returns `values` as "a, b, c".
template <typename T> std::string Join(llvm::ArrayRef<T> values) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(values, os);
  return text;
}

/// See passes.td.
class ProfileBranchWeightsPass
    : public impl::ProfileBranchWeightsPassBase<ProfileBranchWeightsPass> {
public:
  using ProfileBranchWeightsPassBase::ProfileBranchWeightsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    llvm::SmallVector<Site> sites;
    module.walk([&](Operation *op) {
      // Looking first spares most ops an attribute dictionary rebuild.
      for (llvm::StringRef name :
           {kProfilerBranchCountsAttrName, kProfilerTripCountAttrName})
        if (op->getAttr(name))
          op->removeAttr(name);
      if (std::optional<Site> site = FindSite(op, symbols))
        sites.push_back(std::move(*site));
    });
    if (sites.empty())
      return;
    llvm::DenseMap<StringAttr, int64_t> uses = CountSymbolUses(module);
    for (Site &site : sites) {
      MarkSharedFunctions(site, uses);
      Decide(site);
    }
  }

private:
  /// Returns the control-flow site `op` is, if any.
  std::optional<Site> FindSite(Operation *op, SymbolTable &symbols) {
    llvm::StringRef name = op->getName().getStringRef();
    if (name == "tf.If")
      return FunctionSite(op, SiteKind::kBranches,
                          {"then_branch", "else_branch"}, {"then", "else"},
                          symbols);
    if (name == "tf.While")
      return FunctionSite(op, SiteKind::kLoop, {"cond", "body"},
                          {"cond", "body"}, symbols);
    if (name == "tf.Case")
      return CaseSite(op, symbols);
    if (name == "tf.IfRegion" && op->getNumRegions() == 2)
      return RegionSite(op, SiteKind::kBranches, {"then", "else"});
    // A lowered loop (StableHLO's, or scf's at linalg) keeps its body's ops,
    // and with them their tf ops' counts: cond region first, body second.
    if (llvm::is_contained({"tf.WhileRegion", "stablehlo.while", "scf.while"},
                           name) &&
        op->getNumRegions() == 2)
      return RegionSite(op, SiteKind::kLoop, {"cond", "body"});
    if (name == "tf.CaseRegion" && op->getNumRegions() > 0) {
      llvm::SmallVector<std::string> labels;
      for (unsigned i = 0; i < op->getNumRegions(); ++i)
        labels.push_back("branch " + std::to_string(i));
      return RegionSite(op, SiteKind::kBranches, labels);
    }
    if (isa<WeightedBranchOpInterface>(op) && op->getNumSuccessors() > 1)
      return TerminatorSite(op);
    return std::nullopt;
  }

  /// A functional If/While: one function symbol per attribute in `attrs`.
  static Site FunctionSite(Operation *op, SiteKind kind,
                           llvm::ArrayRef<llvm::StringRef> attrs,
                           llvm::ArrayRef<llvm::StringRef> labels,
                           SymbolTable &symbols) {
    Site site{op, kind, {}, ""};
    for (auto [attr, label] : llvm::zip_equal(attrs, labels))
      AddFunctionTarget(site, op->getAttrOfType<FlatSymbolRefAttr>(attr),
                        label.str(), symbols);
    return site;
  }

  /// A functional Case: the functions of its `branches` array.
  static Site CaseSite(Operation *op, SymbolTable &symbols) {
    Site site{op, SiteKind::kBranches, {}, ""};
    auto branches = op->getAttrOfType<ArrayAttr>("branches");
    if (!branches || branches.empty()) {
      site.malformed = "has no `branches` array of functions";
      return site;
    }
    for (auto [i, branch] : llvm::enumerate(branches))
      AddFunctionTarget(site, dyn_cast<FlatSymbolRefAttr>(branch),
                        "branch " + std::to_string(i), symbols);
    return site;
  }

  /// Adds the body of function `ref` as a target of `site`, or notes that the
  /// module does not define it.
  static void AddFunctionTarget(Site &site, FlatSymbolRefAttr ref,
                                const std::string &label,
                                SymbolTable &symbols) {
    auto function =
        ref ? symbols.lookup<FunctionOpInterface>(ref.getAttr()) : nullptr;
    if (!function || function.isExternal()) {
      if (site.malformed.empty())
        site.malformed = ref ? "names branch function @" +
                                   ref.getValue().str() +
                                   ", which the module does not define"
                             : "names no " + label + " function";
      return;
    }
    Target target{label + " @" + ref.getValue().str(), {}, ""};
    for (Block &block : function.getFunctionBody())
      target.blocks.push_back(&block);
    site.targets.push_back(std::move(target));
  }

  /// A region form: region i is target `labels[i]`.
  static Site RegionSite(Operation *op, SiteKind kind,
                         llvm::ArrayRef<std::string> labels) {
    Site site{op, kind, {}, ""};
    for (auto [region, label] : llvm::zip_equal(op->getRegions(), labels)) {
      Target target{label, {}, ""};
      for (Block &block : region)
        target.blocks.push_back(&block);
      site.targets.push_back(std::move(target));
    }
    return site;
  }

  /// RegionSite with string literals.
  static Site RegionSite(Operation *op, SiteKind kind,
                         std::initializer_list<const char *> labels) {
    llvm::SmallVector<std::string> owned(labels.begin(), labels.end());
    return RegionSite(op, kind, llvm::ArrayRef<std::string>(owned));
  }

  /// A branch terminator: successor i is target i. A successor that other
  /// edges also reach runs for them too.
  static Site TerminatorSite(Operation *op) {
    Site site{op, SiteKind::kTerminator, {}, ""};
    for (auto [i, successor] : llvm::enumerate(op->getSuccessors())) {
      Target target{"successor #" + std::to_string(i), {successor}, ""};
      if (!successor->getSinglePredecessor())
        target.shared = "other edges also reach its block";
      site.targets.push_back(std::move(target));
    }
    return site;
  }

  /// Counts the references to each top-level symbol anywhere in `module`.
  static llvm::DenseMap<StringAttr, int64_t> CountSymbolUses(ModuleOp module) {
    llvm::DenseMap<StringAttr, int64_t> uses;
    auto count = [&](SymbolRefAttr ref) { ++uses[ref.getRootReference()]; };
    module.walk([&](Operation *op) {
      op->getRawDictionaryAttrs().walk(count);
      // Inherent attributes (`then_branch`, `f`) live in the properties.
      if (op->getPropertiesStorageSize())
        if (Attribute properties = op->getPropertiesAsAttribute())
          properties.walk(count);
    });
    return uses;
  }

  /// A function that other ops also call or branch to holds their executions
  /// too: its counts are not this site's.
  static void
  MarkSharedFunctions(Site &site,
                      const llvm::DenseMap<StringAttr, int64_t> &uses) {
    if (site.kind == SiteKind::kTerminator)
      return;
    for (Target &target : site.targets) {
      if (target.blocks.empty())
        continue;
      auto function = dyn_cast_or_null<FunctionOpInterface>(
          target.blocks.front()->getParentOp());
      if (!function || function.getOperation() == site.op)
        continue;
      int64_t count = uses.lookup(
          StringAttr::get(site.op->getContext(), function.getName()));
      if (count > 1)
        target.shared = "@" + function.getName().str() + " has " +
                        std::to_string(count) + " uses";
    }
  }

  /// Decides `site`'s counts, sets them and explains the decision.
  void Decide(Site &site) {
    Operation *op = site.op;
    if (!site.malformed.empty()) {
      emitWarning(op->getLoc())
          << Describe(op) << " " << site.malformed << "; no branch counts set";
      ++numMissed;
      return;
    }
    llvm::SmallVector<TargetCount> counts;
    for (const Target &target : site.targets)
      counts.push_back(target.shared.empty() ? CountOf(target.blocks)
                                             : TargetCount{});
    if (llvm::none_of(counts,
                      [](const TargetCount &c) { return c.measured; })) {
      for (const Target &target : site.targets)
        if (!target.shared.empty())
          return Missed(op, "the counts of " + target.label +
                                " are not its own: " + target.shared);
      return Missed(op, "none of the ops directly in its " +
                            std::string(site.kind == SiteKind::kLoop
                                            ? "cond and body"
                                            : "branches") +
                            " was profiled");
    }
    if (site.kind == SiteKind::kLoop)
      return DecideLoop(site, counts);
    DecideBranches(site, counts);
  }

  /// Returns how many times the decision at `site` was made, if the profile
  /// says: the op's own count, or for a terminator its block's.
  static std::optional<int64_t> Decisions(const Site &site) {
    if (site.kind != SiteKind::kTerminator)
      return OwnCount(site.op);
    TargetCount block = CountOf({site.op->getBlock()});
    return block.measured ? std::optional<int64_t>(block.count) : std::nullopt;
  }

  /// If/Case/terminator: one target runs per execution of the op. A target
  /// without profiled ops ran as often as the op's other executions leave
  /// (when the op's count is known and it is the only such target), else
  /// never; a shared target's count is only ever derived.
  void DecideBranches(Site &site, llvm::ArrayRef<TargetCount> counts) {
    Operation *op = site.op;
    std::optional<int64_t> own = Decisions(site);
    std::string runs =
        site.kind == SiteKind::kTerminator ? "its block" : "the op";
    int64_t measured_sum = 0;
    llvm::SmallVector<size_t> unmeasured;
    llvm::SmallVector<int64_t> taken;
    llvm::SmallVector<std::string> why;
    for (auto [i, count] : llvm::enumerate(counts)) {
      taken.push_back(count.count);
      if (count.measured) {
        measured_sum += count.count;
        why.push_back("most executions of its profiled ops");
      } else {
        unmeasured.push_back(i);
        why.push_back("not profiled, though its " + count.witness +
                      " would have been");
      }
    }
    if (own &&
        (measured_sum > *own || (unmeasured.empty() && measured_sum != *own)))
      return Inconsistent(
          op, llvm::formatv("{0} ran {1} times but its {2} {3} times in total",
                            runs, *own,
                            site.kind == SiteKind::kTerminator ? "successors"
                                                               : "branches",
                            measured_sum)
                  .str());
    if (own && unmeasured.size() == 1) {
      taken[unmeasured.front()] = *own - measured_sum;
      why[unmeasured.front()] =
          llvm::formatv("{0} ran {1} times, less the other targets", runs, *own)
              .str();
    } else if (own && !unmeasured.empty() && measured_sum != *own) {
      return Missed(op, llvm::formatv("{0} of the {1} executions of {2} fall "
                                      "to {3} targets without profiled ops",
                                      *own - measured_sum, *own, runs,
                                      unmeasured.size())
                            .str());
    } else {
      for (size_t i : unmeasured) {
        if (!site.targets[i].shared.empty())
          return Missed(op, "the counts of " + site.targets[i].label +
                                " are not its own: " + site.targets[i].shared);
        if (counts[i].witness.empty())
          return Missed(op, site.targets[i].label +
                                " holds no op the profile would show had it "
                                "run, and " +
                                runs + " has no count");
      }
    }
    int64_t total = own ? *own : measured_sum;
    if (total < static_cast<int64_t>(minCount))
      return Missed(op, llvm::formatv("{0} executions, fewer than "
                                      "min-count={1}",
                                      total, minCount)
                            .str());

    std::string detail;
    for (auto [i, target] : llvm::enumerate(site.targets))
      detail += llvm::formatv("{0}{1} ran {2} times ({3})", i ? "; " : "",
                              target.label, taken[i], why[i])
                    .str();
    if (auto branch = dyn_cast<WeightedBranchOpInterface>(op)) {
      llvm::SmallVector<int32_t> weights = ToWeights(taken);
      branch.setWeights(weights);
      Passed(op, "branch_weights [" + Join<int32_t>(weights) + "]", detail);
    } else {
      op->setAttr(kProfilerBranchCountsAttrName,
                  Builder(op->getContext()).getDenseI64ArrayAttr(taken));
      Passed(op, "branch counts [" + Join<int64_t>(taken) + "]", detail);
    }
    ++numWeightedOps;
  }

  /// While: the cond runs once per iteration plus once per exit.
  void DecideLoop(Site &site, llvm::ArrayRef<TargetCount> counts) {
    Operation *op = site.op;
    for (const Target &target : site.targets)
      if (!target.shared.empty())
        return Missed(op, "the counts of " + target.label +
                              " are not its own: " + target.shared);
    const TargetCount &cond = counts[0], &body = counts[1];
    const std::string &cond_label = site.targets[0].label;
    const std::string &body_label = site.targets[1].label;
    std::optional<int64_t> own = OwnCount(op);
    int64_t iterations = body.count;
    std::string iterations_why = "most executions of its profiled ops";
    if (!body.measured) {
      iterations_why =
          "not profiled, though its " + body.witness + " would have been";
      if (own && cond.measured) {
        iterations = cond.count - *own;
        iterations_why = llvm::formatv("{0} ran {1} times, less the op's {2} "
                                       "executions",
                                       cond_label, cond.count, *own)
                             .str();
      } else if (body.witness.empty()) {
        return Missed(op, body_label +
                              " holds no op the profile would show had it "
                              "run, and the op has no count");
      }
    }
    int64_t executions = 0;
    std::string executions_why;
    if (own) {
      executions = *own;
      executions_why = "the op's own count";
      if (cond.measured && cond.count != iterations + *own)
        return Inconsistent(
            op, llvm::formatv("{0} ran {1} times, but a loop evaluates its "
                              "cond once per iteration ({2}) plus once per "
                              "execution ({3})",
                              cond_label, cond.count, iterations, *own)
                    .str());
    } else if (cond.measured) {
      executions = cond.count - iterations;
      executions_why = llvm::formatv("{0} ran {1} times, less the {2} "
                                     "iterations",
                                     cond_label, cond.count, iterations)
                           .str();
      if (executions <= 0)
        return Inconsistent(
            op, llvm::formatv("{0} ran {1} times, {2} {3} times: a loop "
                              "evaluates its cond once more per execution "
                              "than it runs its body",
                              cond_label, cond.count, body_label, iterations)
                    .str());
    } else {
      return Missed(op, "neither the op nor " + cond_label +
                            " was profiled: its executions are unknown");
    }
    if (iterations < 0)
      return Inconsistent(
          op, llvm::formatv("the op ran {0} times but {1} only {2} times", *own,
                            cond_label, cond.count)
                  .str());
    if (iterations + executions < static_cast<int64_t>(minCount))
      return Missed(op, llvm::formatv("{0} cond evaluations, fewer than "
                                      "min-count={1}",
                                      iterations + executions, minCount)
                            .str());

    double trips = static_cast<double>(iterations) / executions;
    Builder builder(op->getContext());
    op->setAttr(kProfilerBranchCountsAttrName,
                builder.getDenseI64ArrayAttr({iterations, executions}));
    op->setAttr(kProfilerTripCountAttrName, builder.getF64FloatAttr(trips));
    Passed(op,
           llvm::formatv("trip count {0:F2}, branch counts [{1}, {2}]", trips,
                         iterations, executions)
               .str(),
           llvm::formatv("{0} ran {1} times ({2}); the loop ran {3} times "
                         "({4})",
                         body_label, iterations, iterations_why, executions,
                         executions_why)
               .str());
    ++numLoops;
    ++numWeightedOps;
  }

  /// Remarks on a decision taken.
  void Passed(Operation *op, const std::string &what,
              const std::string &detail) {
    // Free emitRemark: Operation::emitRemark would print the op, and a loop
    // prints its whole body.
    if (remarks)
      emitRemark(op->getLoc()) << "profile-guided: " << what << " for "
                               << Describe(op) << ": " << detail;
  }

  /// Remarks on a decision not taken.
  void Missed(Operation *op, const std::string &why) {
    ++numMissed;
    if (remarks)
      emitRemark(op->getLoc()) << "profile-guided: no branch counts for "
                               << Describe(op) << ": " << why;
  }

  /// Warns about a profile that contradicts the op's semantics.
  void Inconsistent(Operation *op, const std::string &why) {
    ++numMissed;
    emitWarning(op->getLoc()) << "inconsistent profile for " << Describe(op)
                              << ": " << why << "; no branch counts set";
  }
};

} // namespace
} // namespace TF
} // namespace mlir
