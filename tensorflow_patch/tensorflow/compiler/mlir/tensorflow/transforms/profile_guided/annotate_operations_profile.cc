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
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/document_output.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/node_names.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/op_profile_reader.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/op_timing.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"
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

/// How many ops a forwarding op's record rides on at most (a bias read's
/// folded Reshape/Squeeze chain is 2-3 long).
constexpr size_t kMaxForwardedChain = 8;

/// Kernels of ops that only forward their input (or nothing): the IR
/// pipeline's canonicalization removes them while the runtime still runs
/// them.
bool OnlyForwards(llvm::ArrayRef<llvm::StringRef> kernel_types) {
  static constexpr llvm::StringLiteral kForwarding[] = {
      "Identity", "IdentityN", "NoOp", "Snapshot", "StopGradient"};
  return !kernel_types.empty() &&
         llvm::all_of(kernel_types, [](llvm::StringRef type) {
           return llvm::is_contained(kForwarding, type);
         });
}

/// Finds elementwise arithmetic with a constant operand in a frozen module:
/// a lowering folds it away when the constant is its identity (a zero bias,
/// an untrained BatchNorm's zero offset, a LayerNorm's unit scale).
class ConstantOperands {
public:
  /// Returns the one operand of a binary elementwise `op` that does not
  /// derive from constants alone, or null.
  Value SoleVaryingOperand(Operation *op) {
    static constexpr llvm::StringLiteral kElementwise[] = {
        "Add", "AddV2", "BiasAdd", "Sub", "Mul", "RealDiv", "Div"};
    if (op->getNumOperands() != 2 ||
        !llvm::is_contained(kElementwise, op->getName().stripDialect()))
      return {};
    const bool first = IsConstant(op->getOperand(0), kMaxDepth);
    const bool second = IsConstant(op->getOperand(1), kMaxDepth);
    if (first == second)
      return {};
    return op->getOperand(first ? 1 : 0);
  }

private:
  /// How far back a constant's computation is followed (BatchNorm's offset
  /// is `beta - mean * (gamma * rsqrt(var + eps))`: five ops).
  static constexpr int kMaxDepth = 6;

  bool IsConstant(Value value, int depth) {
    Operation *op = value.getDefiningOp();
    if (!op)
      return false;
    auto known = known_.find(op);
    if (known != known_.end())
      return known->second;
    bool constant = op->getName().stripDialect() == "Const";
    if (!constant && depth > 0 && op->getNumOperands() > 0)
      constant = llvm::all_of(op->getOperands(), [&](Value operand) {
        return IsConstant(operand, depth - 1);
      });
    known_[op] = constant;
    return constant;
  }

  llvm::DenseMap<Operation *, bool> known_;
};

/// What became of one profile entry.
enum class EntryFate { kAttributed, kRemoved, kUnresolved };

/// One profile entry's outcome, for the attribution document.
struct EntryOutcome {
  EntryFate fate = EntryFate::kUnresolved;
  Resolution resolution;
  /// Why a removed or unresolved entry landed on no op.
  std::string reason;
};

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

/// The unary ops Grappler's UnaryOpsComposition composes (its
/// `supported_ops_`, arithmetic_optimizer.cc; kept in step with
/// unary_ops_composition.cc).
bool IsComposableUnary(llvm::StringRef type) {
  static const llvm::StringSet<> kComposable = {
      "Abs",     "Acos",  "Acosh", "Asin",       "Asinh",  "Atan",  "Atanh",
      "Ceil",    "Cos",   "Cosh",  "Expm1",      "Exp",    "Floor", "Inv",
      "Log",     "Log1p", "Neg",   "Reciprocal", "Rint",   "Round", "Rsqrt",
      "Sigmoid", "Sin",   "Sinh",  "Sqrt",       "Square", "Tan",   "Tanh",
      "Elu",     "Relu",  "Relu6", "Selu"};
  return kComposable.contains(type);
}

/// Returns the ops a `_UnaryOpsComposition` named after `root` also ran: the
/// chain of composable unary ops feeding `root`'s operand 0 in its block,
/// each with `root`'s chain as its only use (Grappler follows input 0 while
/// the input has one consumer).
llvm::SmallVector<Operation *, 4> FindUnaryChain(Operation *root) {
  llvm::SmallVector<Operation *, 4> chain;
  for (Operation *op = root; op->getNumOperands() > 0;) {
    Operation *producer = op->getOperand(0).getDefiningOp();
    if (!producer || producer->getBlock() != root->getBlock() ||
        !producer->hasOneUse() ||
        !IsComposableUnary(producer->getName().stripDialect()))
      break;
    chain.push_back(producer);
    op = producer;
  }
  return chain;
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
  } else if (type == "UnaryOpsComposition") {
    return FindUnaryChain(root);
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
  /// Resolves every entry into `outcomes`; returns the merged timing per op
  /// in the order of first resolution.
  llvm::MapVector<Operation *, OpTiming>
  Attribute(const OpProfile &profile, RuntimeNameResolver &resolver,
            std::vector<EntryOutcome> &outcomes);
  /// Lowerings erase ops that only forward their input (a frozen variable
  /// read is an Identity of a constant) and fold arithmetic with identity
  /// constants: such an op's record also rides on ops the lowering keeps
  /// (see the comments inside). Runs after every op carries its own record.
  void
  CarryForwardedRecords(const llvm::MapVector<Operation *, OpTiming> &timings);
  /// Writes the attribution document (docs/formats.md) to
  /// `attributionOutput`; false (after an error) if it cannot.
  bool WriteAttribution(const OpProfile &profile,
                        llvm::ArrayRef<EntryOutcome> outcomes,
                        int64_t annotated_ops, int64_t fused_ops);
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
                                         RuntimeNameResolver &resolver,
                                         std::vector<EntryOutcome> &outcomes) {
  ModuleOp module = getOperation();
  // Resolution only reads the indexed module, so entries resolve in
  // parallel; merging stays serial and in profile order.
  outcomes.assign(profile.ops.size(), {});
  parallelFor(&getContext(), 0, outcomes.size(), [&](size_t i) {
    const OpProfileEntry &entry = profile.ops[i];
    EntryOutcome &outcome = outcomes[i];
    outcome.resolution =
        resolver.Resolve(entry.name, entry.op_types,
                         /*from_xla=*/!entry.xla_module.empty());
    const bool found_any = static_cast<bool>(outcome.resolution);
    llvm::erase_if(outcome.resolution.ops,
                   [](Operation *op) { return !IsProfileAnnotatable(op); });
    if (outcome.resolution.kind == MatchKind::kFolded) {
      outcome.fate = EntryFate::kRemoved;
      outcome.reason = "removed by the IR pipeline: folded into a constant";
    } else if (outcome.resolution) {
      outcome.fate = EntryFate::kAttributed;
    } else if (!outcome.resolution.ambiguity.empty()) {
      // Before the forwarding ops: every op it could be is still there.
      outcome.reason = "ambiguous; follows xla_function_body "
                       "(tensorflow/compiler/tf2xla/"
                       "xla_compilation_device.cc): " +
                       outcome.resolution.ambiguity;
    } else if (OnlyForwards(entry.op_types)) {
      outcome.fate = EntryFate::kRemoved;
      outcome.reason = "removed by the IR pipeline: an op that only forwards "
                       "its input";
    } else {
      outcome.reason =
          found_any ? "matches no annotatable op" : "matches no op";
      // The closest rule tried: a name TensorFlow made after another node.
      if (std::string rule = DescribeRenameRule(entry.name); !rule.empty())
        outcome.reason += "; " + rule;
    }
  });
  llvm::MapVector<Operation *, OpTiming> timings;
  for (const auto &[entry, outcome] : llvm::zip_equal(profile.ops, outcomes)) {
    ++numEntries;
    if (outcome.fate == EntryFate::kAttributed) {
      ++numResolvedEntries;
      attributedSelfPs += entry.self_ps;
      const Resolution &resolution = outcome.resolution;
      // Several ops: a merge whose survivor is ambiguous, or the readers of
      // an argument; the time is split between them.
      if (resolution.kind != MatchKind::kMerged && resolution.ops.size() == 1) {
        OpTiming &timing = timings[resolution.ops.front()];
        timing.Add(entry);
        timing.add_tree_rewritten |= entry.name.contains(kAddOpsRewrite);
        continue;
      }
      if (resolution.kind == MatchKind::kMerged)
        ++numMergedEntries;
      const int64_t parts = resolution.ops.size();
      for (int64_t part = 0; part < parts; ++part)
        timings[resolution.ops[part]].AddMergedPart(entry, part, parts);
      continue;
    }
    if (outcome.fate == EntryFate::kRemoved)
      ++numRemovedEntries;
    else
      ++numUnresolvedEntries;
    unattributedSelfPs += entry.self_ps;
    if (reportUnresolved)
      // Free emitRemark: Operation::emitRemark would print the whole module.
      emitRemark(module.getLoc())
          << "profile entry '" << entry.name << "' (" << entry.self_ps
          << " ps self) " << outcome.reason;
  }
  return timings;
}

bool AnnotateOperationsProfilePass::WriteAttribution(
    const OpProfile &profile, llvm::ArrayRef<EntryOutcome> outcomes,
    int64_t annotated_ops, int64_t fused_ops) {
  struct Tally {
    int64_t entries = 0, self_ps = 0, device_ps = 0;
  };
  // Indexed by MatchKind for attributed entries, then removed, unresolved.
  constexpr size_t kRemoved = 4, kUnresolved = 5;
  Tally tallies[6];
  auto slot = [&](const EntryOutcome &outcome) -> size_t {
    if (outcome.fate == EntryFate::kRemoved)
      return kRemoved;
    if (outcome.fate == EntryFate::kUnresolved)
      return kUnresolved;
    return static_cast<size_t>(outcome.resolution.kind);
  };
  int64_t all_self = 0, all_device = 0;
  for (const auto &[entry, outcome] : llvm::zip_equal(profile.ops, outcomes)) {
    Tally &tally = tallies[slot(outcome)];
    ++tally.entries;
    tally.self_ps += entry.self_ps;
    tally.device_ps += entry.device_self_ps;
    all_self += entry.self_ps;
    all_device += entry.device_self_ps;
  }
  const llvm::StringRef slot_names[] = {MatchKindName(MatchKind::kExact),
                                        MatchKindName(MatchKind::kResolved),
                                        MatchKindName(MatchKind::kMerged),
                                        MatchKindName(MatchKind::kFolded),
                                        "removed",
                                        "unresolved"};
  auto write = [&](llvm::raw_ostream &os) {
    llvm::json::OStream json(os, /*IndentSize=*/1);
    json.object([&] {
      json.attribute("format", "tfpgo.attribution");
      json.attribute("version", 1);
      json.attribute("time_unit", "ps");
      json.attribute("profile", pathToProfile);
      json.attribute("profile_self_ps", all_self);
      json.attribute("attributed_self_ps", tallies[0].self_ps +
                                               tallies[1].self_ps +
                                               tallies[2].self_ps);
      // Device time (op profile v3), only when the trace had a device: a
      // host-only document stays as it was.
      if (all_device > 0) {
        json.attribute("profile_device_ps", all_device);
        json.attribute("attributed_device_ps", tallies[0].device_ps +
                                                   tallies[1].device_ps +
                                                   tallies[2].device_ps);
      }
      json.attribute("annotated_ops", annotated_ops);
      json.attribute("fused_ops", fused_ops);
      json.attributeObject("by_match", [&] {
        // Folded entries are counted under "removed", their fate.
        for (size_t i : {0, 1, 2, 4, 5})
          json.attributeObject(slot_names[i], [&] {
            json.attribute("entries", tallies[i].entries);
            json.attribute("self_ps", tallies[i].self_ps);
          });
      });
      json.attributeArray("entries", [&] {
        for (const auto &[entry, outcome] :
             llvm::zip_equal(profile.ops, outcomes)) {
          size_t kind = slot(outcome);
          if (kind == static_cast<size_t>(MatchKind::kExact))
            continue;
          json.object([&] {
            json.attribute("name", entry.name);
            json.attribute("self_ps", entry.self_ps);
            if (all_device > 0)
              json.attribute("device_ps", entry.device_self_ps);
            json.attribute("match",
                           kind == kRemoved &&
                                   outcome.resolution.kind == MatchKind::kFolded
                               ? "folded"
                               : slot_names[kind]);
            if (kind == static_cast<size_t>(MatchKind::kMerged))
              json.attribute("merged_by",
                             outcome.resolution.by_name ? "name" : "location");
            if (!outcome.resolution.rule.empty() &&
                outcome.fate == EntryFate::kAttributed)
              json.attribute("rule", outcome.resolution.rule);
            if (outcome.fate == EntryFate::kAttributed)
              json.attributeArray("ops", [&] {
                for (Operation *op : outcome.resolution.ops)
                  json.value(GetNodeName(op));
              });
            else
              json.attribute("reason", outcome.reason);
          });
        }
      });
    });
    os << "\n";
  };
  return succeeded(WriteDocument(attributionOutput, "attribution",
                                 getOperation().getLoc(), write));
}

void AnnotateOperationsProfilePass::CarryForwardedRecords(
    const llvm::MapVector<Operation *, OpTiming> &timings) {
  // Serial: several ops may lay records on one op.
  auto ride_on = [](Operation *op, Operation *other, DictionaryAttr record) {
    if (other && other->getBlock() == op->getBlock())
      other->setLoc(WithForwardedProfile(other->getLoc(), record));
  };
  llvm::SmallVector<std::pair<Operation *, Value>, 8> foldable;
  ConstantOperands constants;
  for (Operation *op : llvm::make_first_range(timings)) {
    if (op->getNumOperands() == 0 ||
        !OnlyForwards({op->getName().stripDialect()})) {
      if (Value varying = constants.SoleVaryingOperand(op))
        foldable.push_back({op, varying});
      continue;
    }
    // The op's own record, carried first in its location since the attach.
    llvm::SmallVector<DictionaryAttr, 2> carried;
    CollectProfilesInLocation(op->getLoc(), carried);
    DictionaryAttr record = carried.front();
    // Producer and users both: folding keeps one or the other (a reshaped
    // constant keeps the reshape's location, a zero bias add its input's).
    // Users that never ran (Grappler folded them at run time: a bias's
    // Reshape, Squeeze) fold in the lowering too, so the record goes on down
    // such chains to the first op that ran.
    ride_on(op, op->getOperand(0).getDefiningOp(), record);
    llvm::SmallVector<Operation *, 4> pending(op->getUsers());
    llvm::SmallPtrSet<Operation *, 8> seen;
    while (!pending.empty()) {
      Operation *user = pending.pop_back_val();
      if (!seen.insert(user).second || seen.size() > kMaxForwardedChain)
        continue;
      ride_on(op, user, record);
      if (!timings.count(user))
        pending.append(user->getUsers().begin(), user->getUsers().end());
    }
  }
  // Adding a zero bias or scaling by one folds away: its work, and the
  // records riding on it (its bias's read), land on the op computing the
  // other operand. After the forwarders, so that their records come along.
  for (auto [op, varying] : foldable) {
    llvm::SmallVector<DictionaryAttr, 2> carried;
    CollectProfilesInLocation(op->getLoc(), carried);
    for (DictionaryAttr record : carried)
      ride_on(op, varying.getDefiningOp(), record);
  }
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

  std::vector<EntryOutcome> outcomes;
  llvm::MapVector<Operation *, OpTiming> timings =
      Attribute(*profile, resolver, outcomes);
  // Swallowed op -> the op whose kernel did its work.
  llvm::MapVector<Operation *, Operation *> fused;
  auto ran = [&](Operation *op) { return timings.count(op) != 0; };
  auto swallow = [&](Operation *kernel_op, Operation *other) {
    if (!ran(other) && IsProfileAnnotatable(other))
      fused.insert({other, kernel_op});
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
  int64_t all_self = 0, all_device = 0;
  for (auto &entry : timings) {
    all_self += entry.second.self;
    all_device += entry.second.device_self;
  }
  const size_t measured = timings.size();
  std::vector<ProfilerData> records(measured);
  parallelFor(&getContext(), 0, measured, [&](size_t i) {
    records[i] = timings.begin()[i].second.ToProfilerData(all_self, all_device);
  });
  // Uniquing the attributes is most of the pass; MLIR's uniquers are
  // thread-safe and each op is set exactly once, so ops are set in parallel.
  ProfilerDataEncoder encoder(module.getContext());
  auto carry = [&](Operation *op, ProfilerData data, Operation *source) {
    // The carried record names its source: lowered ops keep the location but
    // not the op, so they learn from it whose measurements they hold.
    data.source = GetNodeName(source).str();
    op->setLoc(WithProfileInLocation(op->getLoc(), encoder.Encode(data)));
  };
  parallelFor(&getContext(), 0, measured + fused.size(), [&](size_t i) {
    if (i < measured) {
      Operation *op = timings.begin()[i].first;
      AttachProfilerData(op, records[i], encoder);
      if (carryInLocation)
        carry(op, records[i], op);
      return;
    }
    auto &[op, kernel_op] = fused.begin()[i - measured];
    llvm::StringRef kernel = GetNodeName(kernel_op);
    ProfilerData data;
    data.fused_into = kernel.empty() ? llvm::StringRef("<unnamed>") : kernel;
    AttachProfilerData(op, data, encoder);
    // Below tf, a swallowed op is part of its kernel's work: it carries the
    // kernel's record, so a lowering that drops the kernel's own op (a zero
    // BiasAdd folded away) still finds the time on the ops it fused.
    if (carryInLocation)
      carry(op, records[timings.find(kernel_op) - timings.begin()], kernel_op);
  });
  if (carryInLocation)
    CarryForwardedRecords(timings);
  numAnnotatedOps += measured;
  numFusedOps += fused.size();
  if (!attributionOutput.empty() &&
      !WriteAttribution(*profile, outcomes, measured, fused.size()))
    return signalPassFailure();
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
