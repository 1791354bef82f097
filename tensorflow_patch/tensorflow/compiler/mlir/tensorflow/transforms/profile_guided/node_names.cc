//===- node_names.cc - Runtime node name to op resolution -----------------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/node_names.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"

namespace mlir {
namespace TF {
namespace {

/// Guards against unbounded descent through recursive functions.
constexpr unsigned kMaxResolveDepth = 64;

/// Depth-first search for the node name; "" if `loc` has none.
llvm::StringRef FindNodeName(Location loc) {
  if (auto name_loc = llvm::dyn_cast<NameLoc>(loc)) {
    llvm::StringRef name = name_loc.getName().getValue();
    if (!name.empty() && !name.ends_with(":"))
      return name;
    return FindNodeName(name_loc.getChildLoc());
  }
  if (auto call_loc = llvm::dyn_cast<CallSiteLoc>(loc)) {
    llvm::StringRef name = FindNodeName(call_loc.getCallee());
    return name.empty() ? FindNodeName(call_loc.getCaller()) : name;
  }
  if (auto fused_loc = llvm::dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused_loc.getLocations()) {
      llvm::StringRef name = FindNodeName(inner);
      if (!name.empty())
        return name;
    }
    return "";
  }
  if (auto opaque_loc = llvm::dyn_cast<OpaqueLoc>(loc))
    return FindNodeName(opaque_loc.getFallbackLocation());
  return "";
}

/// Returns true if `text` is one or more decimal digits (TensorFlow's
/// counters).
bool IsNumber(llvm::StringRef text) {
  return !text.empty() && llvm::all_of(text, llvm::isDigit);
}

/// Returns `name` up to the first `-` of its last component: the node a
/// Grappler optimizer named a node after, before the suffix it appended.
llvm::StringRef UpToSuffixDash(llvm::StringRef name) {
  size_t scope_end = name.rfind('/');
  size_t dash =
      name.find('-', scope_end == llvm::StringRef::npos ? 0 : scope_end);
  return dash == llvm::StringRef::npos ? name : name.take_front(dash);
}

/// Splits `_<digits>/` off the front of `name`, if present.
llvm::StringRef DropFrameIndex(llvm::StringRef name) {
  if (!name.starts_with("_"))
    return name;
  auto [index, rest] = name.drop_front().split('/');
  if (rest.empty() || !IsNumber(index))
    return name;
  return rest;
}

/// Grappler names a node it creates after the node it replaces, under a scope
/// named after the optimizer:
/// `<scope>/ArithmeticOptimizer/AddOpsRewrite_<node>` (and
/// `..._Leaf_<k>_<node>` for the leaves of a rewritten add tree). Splits such a
/// name into `<scope>` and `<Stage>_<node>`; false for other names.
bool SplitGrapplerRewrite(llvm::StringRef name, llvm::StringRef &scope,
                          llvm::StringRef &rewritten) {
  constexpr llvm::StringLiteral kOptimizer = "Optimizer/";
  size_t optimizer = name.rfind(kOptimizer);
  if (optimizer == llvm::StringRef::npos)
    return false;
  rewritten = name.drop_front(optimizer + kOptimizer.size());
  if (rewritten.contains('/') || !rewritten.contains('_'))
    return false;
  size_t scope_end = name.rfind('/', optimizer);
  scope = scope_end == llvm::StringRef::npos ? "" : name.take_front(scope_end);
  return true;
}

/// Grappler's UnaryOpsComposition names the `_UnaryOpsComposition` node that
/// replaces a chain of unary ops after the chain's root:
/// `<root>/unary_ops_composition`.
llvm::StringRef UnaryCompositionRoot(llvm::StringRef name) {
  return name.consume_back("/unary_ops_composition") ? name : "";
}

/// The graph partitioner names the `_Send`/`_Recv` pair (and the Cast or
/// Identity beside it) of a cross-device edge `Graph::NewName(<src>)`, that is
/// `<src>/_<k>`; a control edge's `<src>/ctrl/_<k>`.
llvm::StringRef PartitionedSource(llvm::StringRef name) {
  auto [source, counter] = name.rsplit('/');
  if (source.size() == name.size() || !counter.consume_front("_") ||
      !IsNumber(counter))
    return "";
  source.consume_back("/ctrl");
  return source;
}

/// Grappler's dependency optimizer groups the cross-device control inputs of
/// a node into a NoOp named `GroupCrossDeviceControlEdges_<k>/<node>`.
llvm::StringRef GroupedControlTarget(llvm::StringRef name) {
  auto [group, node] = name.split('/');
  if (!group.consume_front("GroupCrossDeviceControlEdges_") ||
      !IsNumber(group) || node.empty())
    return "";
  return node;
}

/// Drops a trailing `-<digits>` from `name`; false if there is none.
bool ConsumeDashNumber(llvm::StringRef &name) {
  auto [head, number] = name.rsplit('-');
  if (head.size() == name.size() || !IsNumber(number))
    return false;
  name = head;
  return true;
}

/// Grappler's auto mixed precision names the Cast it inserts on output
/// `<port>` of `<node>`: `<node>-<port>-CastTo<T>-<id>-AutoMixedPrecision`.
llvm::StringRef MixedPrecisionCastSource(llvm::StringRef name) {
  if (!name.consume_back("-AutoMixedPrecision") || !ConsumeDashNumber(name))
    return "";
  auto [head, cast] = name.rsplit('-');
  if (head.size() == name.size() || !cast.starts_with("CastTo"))
    return "";
  return ConsumeDashNumber(head) ? head : "";
}

/// Grappler's layout optimizer names the transposes and permutes it puts
/// around a layout-sensitive node `<node>-<port>-[<index>-]<Op><F>To<F>-
/// LayoutOptimizer` (and the node itself `<node>-LayoutOptimizer`): the
/// node is the last name component up to its first `-`.
llvm::StringRef LayoutOptimizerNode(llvm::StringRef name) {
  return name.consume_back("-LayoutOptimizer") ? UpToSuffixDash(name) : "";
}

/// Grappler's constant folding names what it creates for `<node>`
/// `AddPrefixToNodeName(<node><suffix>, "ConstantFolding")`, the suffix
/// `-folded`, `-bcastargs-<j>`, `-reduction_indices`, ...: the node is the
/// rest up to its last component's first `-`.
llvm::StringRef ConstantFoldingNode(llvm::StringRef name) {
  return name.consume_front("ConstantFolding/") ? UpToSuffixDash(name) : "";
}

/// Grappler's loop optimizer hoists a loop-invariant node out of its frame as
/// `AddPrefixToNodeName(<node>, "LoopOptimizer")`.
llvm::StringRef HoistedNode(llvm::StringRef name) {
  return name.consume_front("LoopOptimizer/") ? name : "";
}

/// Grappler's memory optimizer recomputes a node under
/// `AddPrefixToNodeName(<node>, "Recomputed")`: `Recomputed/<node>`.
llvm::StringRef RecomputedNode(llvm::StringRef name) {
  return name.consume_front("Recomputed/") ? name : "";
}

/// TensorFlow's rules for naming a node it creates after the node it stands
/// for, each with the source that names it so (docs/attribution_rules.md).
struct RenameRule {
  llvm::StringLiteral name;
  llvm::StringLiteral source;
  llvm::StringRef (*original)(llvm::StringRef runtime_name);
};
constexpr RenameRule kRenameRules[] = {
    {"grappler_unary_ops_composition",
     "tensorflow/core/grappler/optimizers/arithmetic_optimizer.cc",
     UnaryCompositionRoot},
    {"graph_partitioner", "tensorflow/core/graph/graph_partition.cc",
     PartitionedSource},
    {"grappler_group_control_edges",
     "tensorflow/core/grappler/optimizers/dependency_optimizer.cc",
     GroupedControlTarget},
    {"grappler_auto_mixed_precision",
     "tensorflow/core/grappler/optimizers/auto_mixed_precision.cc",
     MixedPrecisionCastSource},
    {"grappler_layout_optimizer",
     "tensorflow/core/grappler/optimizers/"
     "generic_layout_optimizer_transposer.cc",
     LayoutOptimizerNode},
    {"grappler_memory_recompute",
     "tensorflow/core/grappler/optimizers/memory_optimizer.cc", RecomputedNode},
    {"grappler_constant_folding",
     "tensorflow/core/grappler/optimizers/constant_folding.cc",
     ConstantFoldingNode},
    {"grappler_loop_optimizer",
     "tensorflow/core/grappler/optimizers/loop_optimizer.cc", HoistedNode},
};

/// Returns true if `op` (a tf op, registered or not) is `type`.
bool HasOpType(Operation *op, llvm::StringRef type) {
  return op->getName().stripDialect() == type;
}

/// Returns true if a kernel of one of `kernel_types` runs `op`'s op type.
bool RunsOpType(llvm::ArrayRef<llvm::StringRef> kernel_types, Operation *op) {
  return llvm::any_of(kernel_types, [&](llvm::StringRef type) {
    return HasOpType(op, StripKernelPrefixes(type));
  });
}

/// Returns `resolution`, marked kResolved if it was exact (found below the
/// entry function).
Resolution Descended(Resolution resolution) {
  if (resolution.kind == MatchKind::kExact)
    resolution.kind = MatchKind::kResolved;
  return resolution;
}

} // namespace

llvm::StringRef GetNodeName(Location loc) {
  return FindNodeName(loc).split('@').first;
}

llvm::StringRef GetNodeName(Operation *op) { return GetNodeName(op->getLoc()); }

void GetNodeNames(Location loc, llvm::SmallVectorImpl<llvm::StringRef> &out) {
  auto fused = llvm::dyn_cast<FusedLoc>(loc);
  if (!fused) {
    if (llvm::StringRef name = GetNodeName(loc); !name.empty())
      out.push_back(name);
    return;
  }
  for (Location inner : fused.getLocations())
    GetNodeNames(inner, out);
}

std::string StripUniquifiers(llvm::StringRef name) {
  std::string stem;
  stem.reserve(name.size());
  while (!name.empty()) {
    auto [component, rest] = name.split('/');
    size_t underscore = component.rfind('_');
    if (underscore != llvm::StringRef::npos && underscore > 0 &&
        IsNumber(component.drop_front(underscore + 1)))
      component = component.take_front(underscore);
    stem.append(component.begin(), component.end());
    if (!rest.empty() || name.ends_with("/"))
      stem.push_back('/');
    name = rest;
  }
  return stem;
}

llvm::StringRef StripKernelPrefixes(llvm::StringRef kernel_type) {
  llvm::StringRef type = kernel_type;
  type.consume_front("_");
  type.consume_front("Mkl");
  type.consume_front("Native");
  return type;
}

llvm::StringRef MatchKindName(MatchKind kind) {
  switch (kind) {
  case MatchKind::kExact:
    return "exact";
  case MatchKind::kResolved:
    return "resolved";
  case MatchKind::kMerged:
    return "merged";
  case MatchKind::kFolded:
    return "folded";
  }
  llvm_unreachable("unknown MatchKind");
}

std::string DescribeRenameRule(llvm::StringRef runtime_name) {
  for (const RenameRule &rule : kRenameRules)
    if (llvm::StringRef original = rule.original(runtime_name);
        !original.empty())
      return (llvm::Twine("follows ") + rule.name + " (" + rule.source +
              "): stands for '" + original + "', which no op carries")
          .str();
  return "";
}

RuntimeNameResolver::RuntimeNameResolver(ModuleOp module) : symbols_(module) {
  for (auto function : module.getOps<FunctionOpInterface>()) {
    functions_.push_back(function);
    if (function.isPublic() && !function.isExternal())
      entry_functions_.push_back(function);
  }
}

void RuntimeNameResolver::IndexAll() {
  for (Operation *function : functions_)
    IndexOf(function);
  // Found now too: Resolve then only reads.
  (void)ReachedFunctions();
}

RuntimeNameResolver::~RuntimeNameResolver() = default;

Resolution
RuntimeNameResolver::Resolve(llvm::StringRef runtime_name,
                             llvm::ArrayRef<llvm::StringRef> kernel_types,
                             bool from_xla) {
  // Exact and control-flow names first in every entry function, merges
  // only then: a merge must never shadow an op that carries the name.
  Query exact{kernel_types, /*merges=*/false};
  for (Operation *function : entry_functions_)
    if (Resolution found = ResolveIn(function, runtime_name, 0, exact))
      return found;
  // An XLA op_name stands for an op of a compiled body: found there, or
  // ambiguous between bodies, it is never merged onto an entry op.
  if (from_xla)
    if (Resolution found = ResolveInFunctionBodies(runtime_name, exact);
        found || !found.ambiguity.empty())
      return found;
  Query merges{kernel_types, /*merges=*/true};
  for (Operation *function : entry_functions_)
    if (Resolution found = ResolveIn(function, runtime_name, 0, merges))
      return found;
  return {};
}

const RuntimeNameResolver::FunctionIndex &
RuntimeNameResolver::IndexOf(Operation *function) {
  // find() first: after IndexAll this must not write to `indices_`.
  auto known = indices_.find(function);
  if (known != indices_.end())
    return *known->second;
  std::unique_ptr<FunctionIndex> &index = indices_[function];
  index = std::make_unique<FunctionIndex>();
  index->primary.reserve(
      function->getRegion(0).empty()
          ? 0
          : function->getRegion(0).front().getOperations().size());
  // No per-location cache: every op of an export has its own location, and
  // the name sits near the top of it (callee first), so lookups are cheap.
  llvm::SmallVector<llvm::StringRef, 4> names;
  function->walk([&](Operation *op) {
    if (op == function)
      return;
    names.clear();
    GetNodeNames(op->getLoc(), names);
    if (names.empty())
      return;
    if (index->primary.try_emplace(names.front(), op).second)
      index->stems[StripUniquifiers(names.front())].push_back(op);
    for (llvm::StringRef merged : llvm::drop_begin(names))
      if (merged != names.front())
        index->merged.try_emplace(merged, op);
  });
  // The runtime names the function's arguments after the entry function's
  // inputs (`tf.entry_function = {inputs = "x,y,..."}`), in order; their
  // readers are listed in IR order.
  auto entry = function->getAttrOfType<DictionaryAttr>("tf.entry_function");
  auto inputs = entry ? entry.getAs<StringAttr>("inputs") : StringAttr();
  auto body = llvm::dyn_cast<FunctionOpInterface>(function);
  if (inputs && body && !body.isExternal()) {
    llvm::SmallVector<llvm::StringRef, 8> argument_names;
    inputs.getValue().split(argument_names, ',');
    Block &entry_block = body.getFunctionBody().front();
    function->walk<WalkOrder::PreOrder>([&](Operation *op) {
      for (Value operand : op->getOperands()) {
        auto argument = llvm::dyn_cast<BlockArgument>(operand);
        if (!argument || argument.getOwner() != &entry_block ||
            argument.getArgNumber() >= argument_names.size())
          continue;
        auto &readers =
            index->arguments[argument_names[argument.getArgNumber()]];
        if (!llvm::is_contained(readers, op))
          readers.push_back(op);
      }
    });
  }
  return *index;
}

llvm::ArrayRef<Operation *> RuntimeNameResolver::ReachedFunctions() {
  if (reached_functions_)
    return *reached_functions_;
  llvm::SmallPtrSet<Operation *, 8> seen(entry_functions_.begin(),
                                         entry_functions_.end());
  llvm::SmallVector<Operation *, 8> pending(entry_functions_.begin(),
                                            entry_functions_.end());
  auto reach = [&](Operation *callee) {
    if (callee && seen.insert(callee).second)
      pending.push_back(callee);
  };
  // The attributes ResolveThrough follows: calls, while, if and case.
  while (!pending.empty()) {
    pending.pop_back_val()->walk([&](Operation *op) {
      for (llvm::StringRef attr_name :
           {"f", "callee", "body", "cond", "then_branch", "else_branch"})
        reach(LookupFunction(op, attr_name));
      if (auto branches = op->getAttrOfType<ArrayAttr>("branches"))
        for (int i = 0, e = branches.size(); i < e; ++i)
          reach(LookupFunction(op, "branches", i));
    });
  }
  // Module order, so that an ambiguity names the functions stably.
  reached_functions_.emplace();
  for (Operation *function : functions_)
    if (seen.contains(function) &&
        !llvm::is_contained(entry_functions_, function))
      reached_functions_->push_back(function);
  return *reached_functions_;
}

Resolution RuntimeNameResolver::ResolveInFunctionBodies(llvm::StringRef name,
                                                        const Query &query) {
  // tf2xla compiles a while body/cond, an if branch or a callee as a graph
  // of its own (tf2xla/kernels/while_op.cc: `CompileFunction(body_options,
  // body_name_attr_, ...)`), and every HLO instruction takes its op_name from
  // the node that emitted it (xla_compilation_device.cc:
  // `metadata.set_op_name(op_kernel->name())`): the body's own node name.
  Resolution found;
  llvm::SmallVector<llvm::StringRef, 2> holders;
  for (Operation *function : ReachedFunctions()) {
    Resolution inner = ResolveIn(function, name, 1, query);
    // The same op, also reached through a call inside another body.
    if (!inner || (found && inner.ops == found.ops))
      continue;
    holders.push_back(SymbolTable::getSymbolName(function).getValue());
    if (!found)
      found = std::move(inner);
  }
  if (holders.size() > 1) {
    Resolution ambiguous;
    ambiguous.ambiguity =
        (llvm::Twine("'") + name + "' names ops in @" +
         llvm::join(holders, " and @") + ", the op_name does not say which")
            .str();
    return ambiguous;
  }
  if (found)
    found.rule = found.rule.empty() ? "xla_function_body"
                                    : "xla_function_body+" + found.rule;
  return found;
}

Operation *RuntimeNameResolver::LookupFunction(Operation *op,
                                               llvm::StringRef attr_name,
                                               int index) {
  Attribute attr = op->getAttr(attr_name);
  if (index >= 0) {
    auto array = llvm::dyn_cast_or_null<ArrayAttr>(attr);
    if (!array || index >= static_cast<int>(array.size()))
      return nullptr;
    attr = array[index];
  }
  auto symbol = llvm::dyn_cast_or_null<FlatSymbolRefAttr>(attr);
  if (!symbol)
    return nullptr;
  Operation *callee = symbols_.lookup(symbol.getValue());
  if (!callee || !llvm::isa<FunctionOpInterface>(callee) ||
      llvm::cast<FunctionOpInterface>(callee).isExternal())
    return nullptr;
  return callee;
}

Resolution RuntimeNameResolver::ResolveIn(Operation *function,
                                          llvm::StringRef name, unsigned depth,
                                          const Query &query) {
  if (depth > kMaxResolveDepth || name.empty())
    return {};
  const FunctionIndex &index = IndexOf(function);
  if (Operation *op = index.primary.lookup(name)) {
    Resolution found;
    found.ops.push_back(op);
    found.kind = depth == 0 ? MatchKind::kExact : MatchKind::kResolved;
    // A folded op's constant may carry its name as its only name.
    if (HasOpType(op, "Const") && !query.kernel_types.empty() &&
        !RunsOpType(query.kernel_types, op))
      found.kind = MatchKind::kFolded;
    return found;
  }
  // Longest prefix first: an inner function may reuse the outer node name
  // (`while/body/_1/while/add`).
  for (size_t slash = name.rfind('/'); slash != llvm::StringRef::npos;
       slash = name.rfind('/', slash)) {
    if (Operation *op = index.primary.lookup(name.take_front(slash)))
      if (Resolution inner = ResolveThrough(
              function, op, name.drop_front(slash + 1), depth, query))
        return Descended(std::move(inner));
    if (slash == 0)
      break;
  }
  if (Resolution rewritten =
          ResolveGrapplerRewrite(function, name, depth, query))
    return Descended(std::move(rewritten));
  if (auto readers = index.arguments.find(name);
      readers != index.arguments.end() && !readers->second.empty()) {
    Resolution found;
    found.ops.assign(readers->second.begin(), readers->second.end());
    found.kind = MatchKind::kResolved;
    found.rule = "function_argument";
    return found;
  }
  for (const RenameRule &rule : kRenameRules) {
    llvm::StringRef original = rule.original(name);
    if (original.empty())
      continue;
    if (Resolution found = ResolveIn(function, original, depth + 1, query)) {
      found.rule = found.rule.empty() ? rule.name.str()
                                      : (rule.name + "+" + found.rule).str();
      return Descended(std::move(found));
    }
  }
  if (!query.merges)
    return {};
  return ResolveMerged(index, name, query);
}

Resolution RuntimeNameResolver::ResolveMerged(const FunctionIndex &index,
                                              llvm::StringRef name,
                                              const Query &query) {
  Resolution found;
  found.kind = MatchKind::kMerged;
  if (Operation *op = index.merged.lookup(name)) {
    if (HasOpType(op, "Const") && !RunsOpType(query.kernel_types, op))
      found.kind = MatchKind::kFolded;
    found.ops.push_back(op);
    return found;
  }
  // The same name up to `_<k>`; failing that, the same up to leading scopes
  // (an optimizer's `adam/Add_8/ReadVariableOp` merged into the step's
  // `Add/ReadVariableOp`: both read the iteration counter), keeping at least
  // `scope/node`, so a dropped scope never leaves a bare op type to match.
  found.by_name = true;
  auto match = [&](llvm::StringRef key) {
    auto candidates = index.stems.find(key);
    if (candidates != index.stems.end())
      for (Operation *op : candidates->second)
        if (RunsOpType(query.kernel_types, op))
          found.ops.push_back(op);
    return !found.ops.empty();
  };
  std::string stem = StripUniquifiers(name);
  if (match(stem))
    return found;
  for (llvm::StringRef tail = llvm::StringRef(stem).split('/').second;
       tail.contains('/'); tail = tail.split('/').second)
    if (match(tail))
      return found;
  return {};
}

Resolution RuntimeNameResolver::ResolveGrapplerRewrite(Operation *function,
                                                       llvm::StringRef name,
                                                       unsigned depth,
                                                       const Query &query) {
  llvm::StringRef scope, rewritten;
  if (!SplitGrapplerRewrite(name, scope, rewritten))
    return {};
  // The stage prefix has no fixed shape (`AddOpsRewrite_`,
  // `AddOpsRewrite_Leaf_1_`): try every suffix after an underscore, longest
  // first, inside the same scope.
  for (size_t underscore = rewritten.find('_');
       underscore != llvm::StringRef::npos;
       underscore = rewritten.find('_', underscore + 1)) {
    llvm::StringRef node = rewritten.drop_front(underscore + 1);
    std::string candidate =
        scope.empty() ? node.str() : (scope + "/" + node).str();
    if (Resolution found = ResolveIn(function, candidate, depth + 1, query)) {
      found.rule = "grappler_add_ops_rewrite";
      return found;
    }
  }
  return {};
}

Resolution RuntimeNameResolver::ResolveThrough(Operation *function,
                                               Operation *op,
                                               llvm::StringRef rest,
                                               unsigned depth,
                                               const Query &query) {
  // Calls: the executor inlines the callee under the call node's name.
  for (llvm::StringRef attr_name : {"f", "callee"})
    if (Operation *callee = LookupFunction(op, attr_name))
      return ResolveIn(callee, rest, depth + 1, query);

  auto [segment, tail] = rest.split('/');
  llvm::StringRef inner = DropFrameIndex(tail);
  if (inner.empty())
    return {};
  Operation *callee = nullptr;
  if (segment == "body" || segment == "cond") {
    callee = LookupFunction(op, segment);
  } else if (segment == "then") {
    callee = LookupFunction(op, "then_branch");
  } else if (segment == "else") {
    callee = LookupFunction(op, "else_branch");
  } else if (segment.consume_front("branch")) {
    unsigned branch;
    if (segment.getAsInteger(10, branch))
      return {};
    callee = LookupFunction(op, "branches", branch);
  } else {
    return {};
  }
  if (callee)
    return ResolveIn(callee, inner, depth + 1, query);
  // Region control flow keeps the inner ops in this function.
  if (op->getNumRegions() > 0)
    return ResolveIn(function, inner, depth + 1, query);
  return {};
}

} // namespace TF
} // namespace mlir
