//===- xla_regions.cc - XLA only where the profile says it pays -----------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Implements `tf-profile-guided-xla-regions` (passes.td): grows XLA regions
// from the ops XLA fuses well under the clustering rules of
// xla_clustering_rules.h, keeps those the profile says are worth it and marks
// them with TensorFlow's jit scope attributes, which a GraphDef exported from
// the module carries to mark_for_compilation_pass.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "tensorflow/compiler/mlir/tensorflow/ir/tf_profiler_annotations.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/cluster_graph.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/document_output.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/node_names.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/op_timing.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/xla_clustering_rules.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

namespace mlir {
namespace TF {

#define GEN_PASS_DEF_PROFILEGUIDEDXLAREGIONSPASS
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h.inc"

namespace {

/// TensorFlow's jit scope attributes (tensorflow/python/compiler/xla/jit.py,
/// kXlaCompileAttr and kXlaScopeAttr in tensorflow/compiler/jit/defs.cc).
constexpr llvm::StringLiteral kXlaCompileAttr = "_XlaCompile";
constexpr llvm::StringLiteral kXlaScopeAttr = "_XlaScope";
/// Scopes this pass names; only these are cleared on a rerun.
constexpr llvm::StringLiteral kRegionPrefix = "tfpgo_xla_region_";

/// The measured self time of `op` if TensorFlow ran it as a kernel of its
/// own (annotated, not fused into another op's kernel, executed).
std::optional<int64_t> KernelSelfPs(Operation *op) {
  std::optional<ProfilerData> data = GetProfilerData(op);
  if (!data || data->IsFused() || data->count == 0)
    return std::nullopt;
  return data->self;
}

/// `share` as a percentage with one decimal ("12.0%").
std::string Percent(double share) {
  return llvm::formatv("{0:F1}%", share * 100).str();
}

/// A connected set of ops of one block that may form one XLA cluster.
struct Region {
  llvm::SmallVector<Operation *> ops; ///< In block order.
  int64_t self_ps = 0;
  int64_t kernels = 0; ///< Ops TensorFlow ran as kernels of their own.
  double share = 0;
  std::string name;    ///< Set when chosen.
  std::string blocked; ///< Why it could not grow further, if it was held.
};

/// The ops of one block as a graph: data edges (from a value's producer to
/// the op using it, or holding the user in a region) and the program order
/// of ops using the same resource, which TensorFlow's automatic control
/// dependencies turn into control edges.
struct BlockGraph {
  llvm::SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, int> index;
  std::vector<llvm::SmallVector<int, 4>> preds;

  explicit BlockGraph(Block &block) {
    for (Operation &op : block)
      if (!op.hasTrait<OpTrait::IsTerminator>()) {
        index[&op] = ops.size();
        ops.push_back(&op);
      }
    preds.resize(ops.size());
    llvm::DenseMap<Value, int> last_use_of_resource;
    for (size_t i = 0; i < ops.size(); ++i) {
      Operation *op = ops[i];
      op->walk([&](Operation *inner) {
        for (Value operand : inner->getOperands())
          if (Operation *def = operand.getDefiningOp())
            if (Operation *top = block.findAncestorOpInBlock(*def);
                top && top != op && index.count(top))
              preds[i].push_back(index[top]);
      });
      for (Value operand : op->getOperands()) {
        if (!IsResourceTensor(operand.getType()))
          continue;
        auto [last, inserted] = last_use_of_resource.try_emplace(operand, i);
        if (!inserted) {
          preds[i].push_back(last->second);
          last->second = i;
        }
      }
      llvm::sort(preds[i]);
      preds[i].erase(llvm::unique(preds[i]), preds[i].end());
    }
  }
};

/// See passes.td.
class ProfileGuidedXlaRegionsPass
    : public impl::ProfileGuidedXlaRegionsPassBase<
          ProfileGuidedXlaRegionsPass> {
public:
  using ProfileGuidedXlaRegionsPassBase::ProfileGuidedXlaRegionsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    reasons_.clear();
    if (minShare < 0.0 || minShare > 1.0) {
      module.emitError() << getArgument() << ": min-share must be in [0, 1], "
                         << "got " << minShare.getValue();
      return signalPassFailure();
    }
    if (minOps == 0) {
      module.emitError() << getArgument() << ": min-ops must be at least 1";
      return signalPassFailure();
    }
    ClearEarlierMarks(module);
    int64_t profiled_ps = 0;
    module.walk([&](Operation *op) {
      if (std::optional<int64_t> self = KernelSelfPs(op))
        profiled_ps += *self;
    });
    if (profiled_ps <= 0) {
      module.emitError() << getArgument()
                         << ": no op carries measured profiler_data; run "
                            "tf-annotate-operations-profile first";
      return signalPassFailure();
    }

    std::vector<Region> regions;
    module.walk([&](FunctionOpInterface function) {
      if (function.isExternal())
        return;
      for (Block &block : function.getFunctionBody())
        FormRegions(block, regions);
    });
    std::vector<Region> chosen = Choose(std::move(regions), profiled_ps);
    llvm::DenseSet<Operation *> marked;
    for (const Region &region : chosen)
      marked.insert(region.ops.begin(), region.ops.end());
    std::vector<Operation *> declined;
    module.walk([&](Operation *op) {
      std::optional<int64_t> self = KernelSelfPs(op);
      if (self && double(*self) / profiled_ps >= minShare &&
          !marked.contains(op))
        declined.push_back(op);
    });
    std::stable_sort(declined.begin(), declined.end(),
                     [](Operation *a, Operation *b) {
                       return *KernelSelfPs(a) > *KernelSelfPs(b);
                     });
    numDeclinedHotOps += declined.size();

    if (!reportOutput.empty() &&
        failed(WriteDocument(reportOutput, "tfpgo.xla_regions document",
                             module.getLoc(), [&](llvm::raw_ostream &os) {
                               WriteReport(os, chosen, declined, profiled_ps);
                             })))
      return signalPassFailure();
    Mark(chosen);
    if (remarks)
      Remark(chosen, declined, profiled_ps);
  }

private:
  /// Removes the marks of an earlier run (a user's own jit scopes stay).
  static void ClearEarlierMarks(ModuleOp module) {
    module.walk([](Operation *op) {
      auto scope = op->getAttrOfType<StringAttr>(kXlaScopeAttr);
      if (!scope || !scope.getValue().starts_with(kRegionPrefix))
        return;
      op->removeAttr(kXlaScopeAttr);
      op->removeAttr(kXlaCompileAttr);
    });
  }

  /// Why `op` stays out of regions beyond WhyNotClusterable: TensorFlow ran
  /// a heavy op's work in its kernel (Grappler's remapper fuses MatMul +
  /// BiasAdd + Relu into one _FusedMatMul named after the Relu), or ran its
  /// work in such a kernel. `heavy_kernels` maps such kernels' node names to
  /// the heavy op fused into them.
  std::optional<std::string> WhyInHeavyKernel(
      Operation *op,
      const llvm::DenseMap<llvm::StringRef, Operation *> &heavy_kernels) {
    if (includeHeavy)
      return std::nullopt;
    std::optional<ProfilerData> data = GetProfilerData(op);
    if (data && data->IsFused()) {
      if (heavy_kernels.count(data->fused_into))
        return "fused into " + data->fused_into + "'s oneDNN kernel";
      return std::nullopt;
    }
    auto found = heavy_kernels.find(GetNodeName(op));
    if (found == heavy_kernels.end())
      return std::nullopt;
    XlaOpKind kind = ClassifyXlaOp(TfOpType(found->second));
    return HeavyKernelReason(kind) + " (TensorFlow fused " +
           GetNodeName(found->second).str() + " into it)";
  }

  /// Grows the regions of `block` by contracting its edges between
  /// clusterable ops, as mark_for_compilation does, refusing merges that
  /// break the resource rule or form a cycle; appends them to `out`.
  void FormRegions(Block &block, std::vector<Region> &out) {
    BlockGraph graph(block);
    const int n = graph.ops.size();
    llvm::DenseMap<llvm::StringRef, Operation *> heavy_kernels;
    for (Operation *op : graph.ops)
      if (std::optional<ProfilerData> data = GetProfilerData(op);
          data && data->IsFused() &&
          IsHeavyOneDnnKernel(ClassifyXlaOp(TfOpType(op))))
        heavy_kernels.try_emplace(
            StringAttr::get(op->getContext(), data->fused_into).getValue(), op);

    std::vector<bool> candidate(n, false);
    for (int i = 0; i < n; ++i) {
      Operation *op = graph.ops[i];
      if (TfOpType(op) == "Const")
        continue; // joins the region of its users (below)
      std::optional<std::string> why =
          WhyNotClusterable(op, includeHeavy, withReductions, withVariables);
      if (!why)
        why = WhyInHeavyKernel(op, heavy_kernels);
      if (why)
        reasons_[op] = *why;
      else
        candidate[i] = true;
    }
    llvm::DenseSet<std::pair<int, int>> unsafe =
        UnsafeResourcePairs(graph, candidate);

    ClusterGraph clusters(n);
    for (int i = 0; i < n; ++i)
      for (int p : graph.preds[i])
        clusters.AddEdge(p, i);
    llvm::DenseMap<int, llvm::SmallVector<int, 2>> resource_ops;
    for (int i = 0; i < n; ++i)
      if (candidate[i] &&
          GetResourceAccess(graph.ops[i]) != ResourceAccess::kNone)
        resource_ops[i].push_back(i);
    auto resources_of = [&](int cluster) -> llvm::ArrayRef<int> {
      auto found = resource_ops.find(cluster);
      return found == resource_ops.end() ? llvm::ArrayRef<int>()
                                         : llvm::ArrayRef<int>(found->second);
    };
    std::vector<std::string> blocked(n);
    llvm::DenseSet<std::pair<int, int>> refused;
    // Merging two clusters can remove the op a refused merge went through,
    // so edges are tried again until nothing changes.
    for (bool changed = true; changed;) {
      changed = false;
      for (int i = 0; i < n; ++i) {
        if (!candidate[i])
          continue;
        for (int p : graph.preds[i]) {
          int from = clusters.ClusterOf(p), to = clusters.ClusterOf(i);
          if (!candidate[p] || from == to)
            continue;
          std::optional<std::string> why = WhyResourceUnsafe(
              graph, unsafe, resources_of(from), resources_of(to));
          std::optional<int> through;
          if (!why && (through = clusters.TryMerge(from, to)))
            why = "joining the region of " + GetNodeName(graph.ops[p]).str() +
                  " would form a cycle through " +
                  GetNodeName(graph.ops[*through]).str();
          if (why) {
            if (refused.insert({p, i}).second)
              ++(through ? numCycleRejections : numResourceRejections);
            blocked[i] = blocked[p] = *why;
            continue;
          }
          int merged = clusters.ClusterOf(i);
          if (auto absorbed = resource_ops.find(merged == from ? to : from);
              absorbed != resource_ops.end()) {
            llvm::SmallVector<int, 2> moved = std::move(absorbed->second);
            resource_ops.erase(absorbed);
            resource_ops[merged].append(moved);
          }
          changed = true;
        }
      }
    }
    CollectRegions(graph, candidate, clusters, blocked, out);
  }

  /// resource_operation_safety_analysis.cc: the pairs (W, R) of resource
  /// ops, both candidates, such that a path leads from W to R and
  /// IsResourceEdgeSafe(W, R) is false; found, as there, by propagating the
  /// writes that reach each op in a topological order.
  static llvm::DenseSet<std::pair<int, int>>
  UnsafeResourcePairs(const BlockGraph &graph,
                      const std::vector<bool> &candidate) {
    const int n = graph.ops.size();
    std::vector<ResourceAccess> access(n);
    llvm::DenseMap<int, int> writer_ordinal;
    llvm::SmallVector<int> writers;
    for (int i = 0; i < n; ++i) {
      access[i] = GetResourceAccess(graph.ops[i]);
      if (!IsResourceEdgeSafe(access[i], ResourceAccess::kRead)) {
        writer_ordinal[i] = writers.size();
        writers.push_back(i);
      }
    }
    llvm::DenseSet<std::pair<int, int>> unsafe;
    if (writers.empty())
      return unsafe;
    std::vector<llvm::BitVector> reaching(n, llvm::BitVector(writers.size()));
    for (int i = 0; i < n; ++i) {
      for (int p : graph.preds[i]) {
        reaching[i] |= reaching[p];
        if (auto found = writer_ordinal.find(p); found != writer_ordinal.end())
          reaching[i].set(found->second);
      }
      if (!candidate[i] || access[i] == ResourceAccess::kNone)
        continue;
      for (unsigned w : reaching[i].set_bits())
        if (candidate[writers[w]] &&
            !IsResourceEdgeSafe(access[writers[w]], access[i]))
          unsafe.insert({writers[w], i});
    }
    return unsafe;
  }

  /// Why the resource ops of two clusters cannot share one, if they cannot.
  static std::optional<std::string>
  WhyResourceUnsafe(const BlockGraph &graph,
                    const llvm::DenseSet<std::pair<int, int>> &unsafe,
                    llvm::ArrayRef<int> a, llvm::ArrayRef<int> b) {
    for (int x : a)
      for (int y : b)
        for (auto [w, r] : {std::pair(x, y), std::pair(y, x)})
          if (unsafe.contains({w, r}))
            return "resource variable rule: " +
                   GetNodeName(graph.ops[w]).str() + " writes before " +
                   GetNodeName(graph.ops[r]).str() +
                   " accesses, and XLA runs a cluster's reads before its "
                   "writes";
    return std::nullopt;
  }

  /// Turns the clusters of candidates into regions; a Const joins the region
  /// all its users are in (XLA then sees it as a compile-time constant).
  void CollectRegions(const BlockGraph &graph,
                      const std::vector<bool> &candidate,
                      ClusterGraph &clusters,
                      const std::vector<std::string> &blocked,
                      std::vector<Region> &out) {
    llvm::DenseMap<int, Region> by_cluster;
    llvm::SmallVector<int> order; // clusters by first op
    auto add = [&](int cluster, int i) {
      auto [it, inserted] = by_cluster.try_emplace(cluster);
      if (inserted)
        order.push_back(cluster);
      it->second.ops.push_back(graph.ops[i]);
      if (it->second.blocked.empty())
        it->second.blocked = blocked[i];
    };
    for (int i = 0; i < int(graph.ops.size()); ++i)
      if (candidate[i])
        add(clusters.ClusterOf(i), i);
    for (int i = 0; i < int(graph.ops.size()); ++i) {
      Operation *op = graph.ops[i];
      if (TfOpType(op) != "Const")
        continue;
      std::optional<int> cluster =
          ClusterOfAllUsers(graph, candidate, clusters, op);
      if (cluster && op->getNumOperands() == 0 && !HasUnclusterableType(op))
        add(*cluster, i);
      else
        reasons_[op] = "constant not used by exactly one region";
    }
    for (int cluster : order) {
      Region &region = by_cluster[cluster];
      llvm::sort(region.ops, [&](Operation *x, Operation *y) {
        return graph.index.lookup(x) < graph.index.lookup(y);
      });
      for (Operation *op : region.ops)
        if (std::optional<int64_t> self = KernelSelfPs(op)) {
          region.self_ps += *self;
          ++region.kernels;
        }
      out.push_back(std::move(region));
    }
  }

  /// The one cluster all users of `op` (their ops in the block) are in.
  static std::optional<int>
  ClusterOfAllUsers(const BlockGraph &graph, const std::vector<bool> &candidate,
                    ClusterGraph &clusters, Operation *op) {
    std::optional<int> cluster;
    for (Operation *user : op->getUsers()) {
      Operation *top = op->getBlock()->findAncestorOpInBlock(*user);
      auto found = top ? graph.index.find(top) : graph.index.end();
      if (found == graph.index.end() || !candidate[found->second])
        return std::nullopt;
      int of = clusters.ClusterOf(found->second);
      if (cluster && *cluster != of)
        return std::nullopt;
      cluster = of;
    }
    return cluster;
  }

  /// Keeps the regions with at least min-ops kernels and min-share of the
  /// profiled time, hottest first, and names them; notes why the ops of
  /// regions too small were left out (an op of a region under min-share is
  /// under it too, so never reported as hot).
  std::vector<Region> Choose(std::vector<Region> regions, int64_t profiled_ps) {
    std::vector<Region> chosen;
    for (Region &region : regions) {
      region.share = double(region.self_ps) / profiled_ps;
      if (region.kernels >= minOps && region.share >= minShare) {
        chosen.push_back(std::move(region));
        continue;
      }
      if (region.kernels > 0)
        ++numDroppedRegions;
      if (region.kernels >= minOps)
        continue;
      std::string why;
      llvm::raw_string_ostream os(why);
      os << "region too small: " << region.kernels
         << " TF kernel(s), under min-ops=" << minOps;
      if (!region.blocked.empty())
        os << "; " << region.blocked;
      for (Operation *op : region.ops)
        reasons_[op] = why;
    }
    std::stable_sort(
        chosen.begin(), chosen.end(),
        [](const Region &a, const Region &b) { return a.self_ps > b.self_ps; });
    for (auto [rank, region] : llvm::enumerate(chosen))
      region.name = (kRegionPrefix + llvm::Twine(rank)).str();
    return chosen;
  }

  void Mark(const std::vector<Region> &chosen) {
    for (const Region &region : chosen) {
      Builder builder(region.ops.front()->getContext());
      for (Operation *op : region.ops) {
        op->setAttr(kXlaCompileAttr, builder.getBoolAttr(true));
        op->setAttr(kXlaScopeAttr, builder.getStringAttr(region.name));
        ++numMarkedOps;
      }
      ++numRegions;
    }
  }

  /// "3 elementwise/reduction ops run as 3 TF kernels (12.0% of profiled
  /// time): ...".
  static std::string Explain(const Region &region) {
    llvm::SmallVector<llvm::StringRef> kinds;
    for (Operation *op : region.ops) {
      llvm::StringRef kind = XlaOpKindName(ClassifyXlaOp(TfOpType(op)));
      if (TfOpType(op) != "Const" && !llvm::is_contained(kinds, kind))
        kinds.push_back(kind);
    }
    std::string text;
    llvm::raw_string_ostream os(text);
    os << region.ops.size() << " " << llvm::join(kinds, "/") << " ops run as "
       << region.kernels << " TF kernels (" << Percent(region.share)
       << " of profiled time): one XLA cluster fuses what TensorFlow runs as "
          "one kernel per op";
    return text;
  }

  /// The reason `op` was left to TensorFlow.
  std::string WhyDeclined(Operation *op) const {
    if (auto found = reasons_.find(op); found != reasons_.end())
      return found->second;
    Operation *parent = op->getParentOp();
    return ("inside " + parent->getName().getStringRef() +
            ": only ops directly in a function body are clustered")
        .str();
  }

  void Remark(const std::vector<Region> &chosen,
              const std::vector<Operation *> &declined, int64_t profiled_ps) {
    for (const Region &region : chosen)
      emitRemark(region.ops.front()->getLoc())
          << region.name << ": " << Explain(region);
    for (Operation *op : declined)
      emitRemark(op->getLoc())
          << "left to TensorFlow ("
          << Percent(double(*KernelSelfPs(op)) / profiled_ps)
          << " of profiled time): " << WhyDeclined(op);
  }

  void WriteReport(llvm::raw_ostream &os, const std::vector<Region> &chosen,
                   const std::vector<Operation *> &declined,
                   int64_t profiled_ps) const {
    llvm::json::OStream json(os, /*IndentSize=*/1);
    auto write_op = [&](Operation *op) {
      json.attribute("node", GetNodeName(op));
      json.attribute("op", op->getName().getStringRef());
      json.attribute("self_ps", KernelSelfPs(op).value_or(0));
    };
    json.object([&] {
      json.attribute("format", "tfpgo.xla_regions");
      json.attribute("version", 1);
      json.attribute("time_unit", "ps");
      json.attribute("pass", getArgument());
      json.attribute("min_share", minShare.getValue());
      json.attribute("min_ops", int64_t(minOps));
      json.attribute("include_heavy", includeHeavy.getValue());
      json.attribute("with_reductions", withReductions.getValue());
      json.attribute("with_variables", withVariables.getValue());
      json.attribute("profiled_ps", profiled_ps);
      json.attributeArray("regions", [&] {
        for (const Region &region : chosen)
          json.object([&] {
            json.attribute("name", region.name);
            json.attribute("self_ps", region.self_ps);
            json.attribute("share", RoundShare(region.share));
            json.attribute("op_count", int64_t(region.ops.size()));
            json.attribute("kernel_count", region.kernels);
            json.attribute("function",
                           region.ops.front()
                               ->getParentOfType<FunctionOpInterface>()
                               .getName());
            json.attributeArray("ops", [&] {
              for (Operation *op : region.ops)
                json.object([&] { write_op(op); });
            });
            json.attribute("reason", Explain(region));
            if (!region.blocked.empty())
              json.attribute("blocked", region.blocked);
          });
      });
      json.attributeArray("declined", [&] {
        for (Operation *op : declined)
          json.object([&] {
            write_op(op);
            json.attribute("share",
                           RoundShare(double(*KernelSelfPs(op)) / profiled_ps));
            json.attribute("reason", WhyDeclined(op));
          });
      });
    });
    os << "\n";
  }

  /// Why each op left out of the chosen regions is left out.
  llvm::DenseMap<Operation *, std::string> reasons_;
};

} // namespace
} // namespace TF
} // namespace mlir
