//===- annotate_operations_profile.cc - Attach runtime profile ------------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Implements `tf-annotate-operations-profile`; the resolution rules and an
// example are in passes.td. The pass first gathers (resolve every profile
// entry, merge timings per op, find fused producers) and only then mutates,
// so resolution never sees half-annotated IR.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Threading.h"
#include "mlir/Pass/Pass.h"
#include "tensorflow/compiler/mlir/tensorflow/ir/tf_profiler_annotations.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/node_names.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/op_profile_reader.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/ThreadPool.h"

namespace mlir {
namespace TF {

#define GEN_PASS_DEF_ANNOTATEOPERATIONSPROFILEPASS
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h.inc"

namespace {

/// How far back from a fused kernel's op its base op may be (Conv2D ->
/// BiasAdd -> Add -> Relu is the longest remapper pattern).
constexpr int kMaxFusionDepth = 4;

/// Grappler's ArithmeticOptimizer runs a tree of adds as AddN/AddV2 nodes
/// named `<scope>/ArithmeticOptimizer/AddOpsRewrite_[Leaf_<k>_]<root>`.
constexpr llvm::StringLiteral kAddOpsRewrite =
    "ArithmeticOptimizer/AddOpsRewrite_";

/// Significant digits `share` keeps: enough to rank and to read (the exact
/// figures are the i64 fields). MLIR prints such a double from its 6-digit
/// form at once; a full-precision one fails that form's round trip check
/// and costs the printer a third, shortest-form conversion.
constexpr int kShareDigits = 6;

/// Returns `value` rounded to kShareDigits significant decimal digits.
double RoundShare(double value) {
  char text[32];
  std::to_chars_result printed =
      std::to_chars(text, text + sizeof(text), value,
                    std::chars_format::scientific, kShareDigits - 1);
  double rounded = value;
  if (printed.ec == std::errc())
    std::from_chars(text, printed.ptr, rounded);
  return rounded;
}

/// Every runtime execution attributed to one op, merged.
struct OpTiming {
  int64_t ts = std::numeric_limits<int64_t>::max();
  int64_t count = 0;
  int64_t total = 0;
  int64_t self = 0;
  int64_t min = std::numeric_limits<int64_t>::max();
  int64_t max = 0;
  std::vector<int64_t> durations;
  /// Kernel types under which the op ran (may name a fused kernel).
  llvm::SmallVector<llvm::StringRef, 1> kernel_types;
  /// True if the op ran as Grappler's rewrite of the add tree it roots.
  bool add_tree_rewritten = false;
  /// XLA origin of the first entry that has one (entries come largest first).
  llvm::StringRef xla_module, xla_fusion;

  void Add(const OpProfileEntry &entry) {
    ts = std::min(ts, entry.first_start_ps);
    count += entry.count;
    total += entry.total_ps;
    self += entry.self_ps;
    min = std::min(min, entry.min_ps);
    max = std::max(max, entry.max_ps);
    durations.insert(durations.end(), entry.durations_ps.begin(),
                     entry.durations_ps.end());
    for (llvm::StringRef type : entry.op_types)
      if (!llvm::is_contained(kernel_types, type))
        kernel_types.push_back(type);
    add_tree_rewritten |= entry.name.contains(kAddOpsRewrite);
    if (xla_module.empty()) {
      xla_module = entry.xla_module;
      xla_fusion = entry.xla_fusion;
    }
  }

  /// Returns the documented record; `durations` gets sorted.
  ProfilerData ToProfilerData(int64_t all_self) {
    // Usually one entry, whose durations are sorted already.
    if (!std::is_sorted(durations.begin(), durations.end()))
      std::sort(durations.begin(), durations.end());
    const int64_t n = static_cast<int64_t>(durations.size());
    ProfilerData data;
    data.ts = ts;
    data.count = count;
    data.total = total;
    data.self = self;
    data.min = min;
    data.max = max;
    data.dur = count ? (total + count / 2) / count : 0;
    // Nearest rank: sorted[ceil(q * n) - 1], in integer arithmetic.
    data.p50 = n ? durations[(n + 1) / 2 - 1] : 0;
    data.p95 = n ? durations[(95 * n + 99) / 100 - 1] : 0;
    data.share =
        all_self > 0 ? RoundShare(static_cast<double>(self) / all_self) : 0.0;
    data.xla_module = xla_module.str();
    data.xla_fusion = xla_fusion.str();
    return data;
  }
};

/// Returns `kernel_type` without the prefixes of TF's internal and oneDNN
/// kernels (`_MklNativeFusedMatMul` -> `FusedMatMul`).
llvm::StringRef StripKernelPrefixes(llvm::StringRef kernel_type) {
  llvm::StringRef type = kernel_type;
  type.consume_front("_");
  type.consume_front("Mkl");
  type.consume_front("Native");
  return type;
}

/// Returns true if `op` is the op a `base`-kernel was built from.
bool IsFusionBase(Operation *op, llvm::StringRef base) {
  llvm::StringRef type = op->getName().stripDialect();
  if (base == "BatchNormEx")
    return type.starts_with("FusedBatchNorm");
  return type == base;
}

/// Returns the ops between the base op of `kernel_type` and `root`
/// (inclusive of the base, exclusive of `root`) along one operand chain in
/// `root`'s block, or nothing if no base op is within kMaxFusionDepth.
llvm::SmallVector<Operation *, 4> FindFusedProducers(Operation *root,
                                                     llvm::StringRef base) {
  llvm::SmallVector<Operation *, 4> path;
  std::function<bool(Operation *, int)> search = [&](Operation *op,
                                                     int depth) -> bool {
    for (Value operand : op->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      if (!producer || producer->getBlock() != root->getBlock())
        continue;
      path.push_back(producer);
      if (IsFusionBase(producer, base) ||
          (depth + 1 < kMaxFusionDepth && search(producer, depth + 1)))
        return true;
      path.pop_back();
    }
    return false;
  };
  if (!search(root, 0))
    path.clear();
  return path;
}

/// Returns true if `op` is `type` (without dialect) in `root`'s block.
bool IsInBlockOf(Operation *op, Operation *root, llvm::StringRef type) {
  return op && op->getBlock() == root->getBlock() &&
         op->getName().stripDialect() == type;
}

/// Returns the ops whose work a kernel of `kernel_type`, run under `root`'s
/// name, also did:
///  * `[_Mkl[Native]]Fused<Base>` (`_MklNativeFusedMatMul`, `_FusedConv2D`):
///    Grappler's remapper names the kernel after the last node of a chain;
///    the producers back to the <Base> op are swallowed;
///  * `..PadWith<Kernel>` (`_MklNativePadWithFusedConv2D`): oneDNN also
///    folds the Pad feeding the first op's input;
///  * `..<X>BackpropFilterWithBias`: oneDNN's filter gradient kernel, named
///    after the <X>BackpropFilter, also computes the BiasAddGrad that reads
///    the same output gradient (operand 2): a sibling, not a producer.
/// Plain variants of `root`'s own type (`_MklMatMul`) swallow nothing.
llvm::SmallVector<Operation *, 4>
FindSwallowedOps(Operation *root, llvm::StringRef kernel_type) {
  llvm::StringRef op_type = root->getName().stripDialect();
  llvm::StringRef type = StripKernelPrefixes(kernel_type);
  const bool with_pad = type.consume_front("PadWith");
  llvm::SmallVector<Operation *, 4> swallowed;
  Operation *first = root;
  if (type == op_type) {
    // The kernel is `root` itself, perhaps with a Pad in front.
  } else if (type.consume_front("Fused")) {
    swallowed = FindFusedProducers(root, type);
    if (swallowed.empty())
      return {};
    first = swallowed.back();
  } else if (type.consume_back("WithBias") && type == op_type &&
             type.ends_with("BackpropFilter")) {
    constexpr unsigned kOutBackprop = 2;
    if (root->getNumOperands() > kOutBackprop)
      for (Operation *user : root->getOperand(kOutBackprop).getUsers())
        if (IsInBlockOf(user, root, "BiasAddGrad"))
          swallowed.push_back(user);
    return swallowed;
  } else {
    return {};
  }
  if (with_pad && first->getNumOperands() > 0) {
    Operation *pad = first->getOperand(0).getDefiningOp();
    if (IsInBlockOf(pad, root, "Pad"))
      swallowed.push_back(pad);
  }
  return swallowed;
}

/// Returns the inner nodes of the add tree rooted at `root` that Grappler's
/// AddOpsRewrite absorbed: adds (Add, AddV2, AddN) in `root`'s block whose
/// only use is the tree and that did not run themselves (`ran` is false).
llvm::SmallVector<Operation *, 4>
FindRewrittenAddTree(Operation *root,
                     llvm::function_ref<bool(Operation *)> ran) {
  auto is_add = [](Operation *op) {
    llvm::StringRef type = op->getName().stripDialect();
    return type == "Add" || type == "AddV2" || type == "AddN";
  };
  llvm::SmallVector<Operation *, 4> inner;
  llvm::SmallVector<Operation *, 4> pending = {root};
  while (!pending.empty()) {
    Operation *node = pending.pop_back_val();
    for (Value operand : node->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      // One use each: the walk never meets a node twice.
      if (!producer || producer->getBlock() != root->getBlock() ||
          !is_add(producer) || !producer->hasOneUse() || ran(producer))
        continue;
      inner.push_back(producer);
      pending.push_back(producer);
    }
  }
  return inner;
}

/// See passes.td.
class AnnotateOperationsProfilePass
    : public impl::AnnotateOperationsProfilePassBase<
          AnnotateOperationsProfilePass> {
public:
  using AnnotateOperationsProfilePassBase::AnnotateOperationsProfilePassBase;

  void runOnOperation() override;

private:
  /// Reads the profile while `resolver` indexes every function: on 100k ops
  /// each takes about a tenth of the pass, and they share no data.
  llvm::Expected<OpProfile> ReadWhileIndexing(RuntimeNameResolver &resolver);
  /// Resolves every entry; returns the merged timing per op in the order of
  /// first resolution.
  llvm::MapVector<Operation *, OpTiming>
  Attribute(const OpProfile &profile, RuntimeNameResolver &resolver);
};

llvm::Expected<OpProfile> AnnotateOperationsProfilePass::ReadWhileIndexing(
    RuntimeNameResolver &resolver) {
  MLIRContext &context = getContext();
  if (!context.isMultithreadingEnabled()) {
    resolver.IndexAll();
    return ReadOpProfile(pathToProfile);
  }
  std::optional<llvm::Expected<OpProfile>> profile;
  // A task group, not a future: waiting on it from a pool thread runs tasks.
  llvm::ThreadPoolTaskGroup reading(context.getThreadPool());
  reading.async([&] { profile.emplace(ReadOpProfile(pathToProfile)); });
  resolver.IndexAll();
  reading.wait();
  return std::move(*profile);
}

llvm::MapVector<Operation *, OpTiming>
AnnotateOperationsProfilePass::Attribute(const OpProfile &profile,
                                         RuntimeNameResolver &resolver) {
  ModuleOp module = getOperation();
  // Resolution only reads the indexed module, so entries resolve in
  // parallel; merging stays serial and in profile order.
  std::vector<Operation *> resolved(profile.ops.size());
  parallelFor(&getContext(), 0, resolved.size(), [&](size_t i) {
    resolved[i] = resolver.Resolve(profile.ops[i].name);
  });
  llvm::MapVector<Operation *, OpTiming> timings;
  for (const auto &[entry, op] : llvm::zip_equal(profile.ops, resolved)) {
    ++numEntries;
    if (op && IsProfileAnnotatable(op)) {
      ++numResolvedEntries;
      attributedSelfPs += entry.self_ps;
      timings[op].Add(entry);
      continue;
    }
    ++numUnresolvedEntries;
    unattributedSelfPs += entry.self_ps;
    if (reportUnresolved)
      // Free emitRemark: Operation::emitRemark would print the whole module.
      emitRemark(module.getLoc())
          << "profile entry '" << entry.name << "' (" << entry.self_ps
          << " ps self) matches no " << (op ? "annotatable op" : "op");
  }
  return timings;
}

void AnnotateOperationsProfilePass::runOnOperation() {
  ModuleOp module = getOperation();
  if (pathToProfile.empty()) {
    emitError(module.getLoc(),
              "tf-annotate-operations-profile needs "
              "'path-to-profile': the op_profile.json written by the "
              "trace reader");
    return signalPassFailure();
  }
  RuntimeNameResolver resolver(module);
  llvm::Expected<OpProfile> profile = ReadWhileIndexing(resolver);
  if (!profile) {
    emitError(module.getLoc()) << llvm::toString(profile.takeError());
    return signalPassFailure();
  }

  llvm::MapVector<Operation *, OpTiming> timings =
      Attribute(*profile, resolver);
  // Node names are StringAttr data owned by the context.
  llvm::MapVector<Operation *, llvm::StringRef> fused;
  auto ran = [&](Operation *op) { return timings.count(op) != 0; };
  auto swallow = [&](Operation *kernel_op, Operation *other) {
    if (!ran(other) && IsProfileAnnotatable(other))
      fused.insert({other, GetNodeName(kernel_op)});
  };
  for (auto &[op, timing] : timings) {
    for (llvm::StringRef kernel_type : timing.kernel_types)
      for (Operation *other : FindSwallowedOps(op, kernel_type))
        swallow(op, other);
    if (timing.add_tree_rewritten)
      for (Operation *other : FindRewrittenAddTree(op, ran))
        swallow(op, other);
  }

  // Mutate only now: drop stale annotations, then attach the new ones.
  module.walk([](Operation *op) { RemoveProfileAnnotations(op); });
  int64_t all_self = 0;
  for (auto &entry : timings)
    all_self += entry.second.self;
  // Uniquing the attributes is most of the pass; MLIR's uniquers are
  // thread-safe and each op is set exactly once, so ops are set in parallel.
  ProfilerDataEncoder encoder(module.getContext());
  const size_t measured = timings.size();
  parallelFor(&getContext(), 0, measured + fused.size(), [&](size_t i) {
    if (i < measured) {
      auto &[op, timing] = timings.begin()[i];
      AttachProfilerData(op, timing.ToProfilerData(all_self), encoder);
      return;
    }
    auto &[op, node] = fused.begin()[i - measured];
    ProfilerData data;
    data.fused_into = node.empty() ? llvm::StringRef("<unnamed>") : node;
    AttachProfilerData(op, data, encoder);
  });
  numAnnotatedOps += measured;
  numFusedOps += fused.size();
  if (reportUnresolved) {
    int64_t all_entries_self = 0;
    for (const OpProfileEntry &entry : profile->ops)
      all_entries_self += entry.self_ps;
    emitRemark(module.getLoc())
        << "annotated " << timings.size() << " ops and " << fused.size()
        << " fused ops from " << profile->ops.size() << " profile entries; "
        << all_self << " of " << all_entries_self << " ps self time attributed";
  }
}

} // namespace
} // namespace TF
} // namespace mlir
