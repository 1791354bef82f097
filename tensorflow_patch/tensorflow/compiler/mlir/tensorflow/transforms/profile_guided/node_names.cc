//===- node_names.cc - Runtime node name to op resolution -----------------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/node_names.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"

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

/// Splits `_<digits>/` off the front of `name`, if present.
llvm::StringRef DropFrameIndex(llvm::StringRef name) {
  if (!name.starts_with("_"))
    return name;
  auto [index, rest] = name.drop_front().split('/');
  if (index.empty() || rest.empty() ||
      !llvm::all_of(index, [](char c) { return c >= '0' && c <= '9'; }))
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

} // namespace

llvm::StringRef GetNodeName(Location loc) {
  return FindNodeName(loc).split('@').first;
}

llvm::StringRef GetNodeName(Operation *op) { return GetNodeName(op->getLoc()); }

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
}

RuntimeNameResolver::~RuntimeNameResolver() = default;

Operation *RuntimeNameResolver::Resolve(llvm::StringRef runtime_name) {
  for (Operation *function : entry_functions_)
    if (Operation *op = ResolveIn(function, runtime_name, /*depth=*/0))
      return op;
  return nullptr;
}

const RuntimeNameResolver::FunctionIndex &
RuntimeNameResolver::IndexOf(Operation *function) {
  // find() first: after IndexAll this must not write to `indices_`.
  auto known = indices_.find(function);
  if (known != indices_.end())
    return *known->second;
  std::unique_ptr<FunctionIndex> &index = indices_[function];
  index = std::make_unique<FunctionIndex>();
  index->reserve(function->getRegion(0).empty()
                     ? 0
                     : function->getRegion(0).front().getOperations().size());
  // No per-location cache: every op of an export has its own location, and
  // the name sits near the top of it (callee first), so lookups are cheap.
  function->walk([&](Operation *op) {
    if (op == function)
      return;
    llvm::StringRef name = GetNodeName(op->getLoc());
    if (!name.empty())
      index->try_emplace(name, op);
  });
  return *index;
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

Operation *RuntimeNameResolver::ResolveIn(Operation *function,
                                          llvm::StringRef name,
                                          unsigned depth) {
  if (depth > kMaxResolveDepth || name.empty())
    return nullptr;
  const FunctionIndex &index = IndexOf(function);
  if (Operation *op = index.lookup(name))
    return op;
  // Longest prefix first: an inner function may reuse the outer node name
  // (`while/body/_1/while/add`).
  for (size_t slash = name.rfind('/'); slash != llvm::StringRef::npos;
       slash = name.rfind('/', slash)) {
    if (Operation *op = index.lookup(name.take_front(slash)))
      if (Operation *inner =
              ResolveThrough(function, op, name.drop_front(slash + 1), depth))
        return inner;
    if (slash == 0)
      break;
  }
  return ResolveGrapplerRewrite(function, name, depth);
}

Operation *RuntimeNameResolver::ResolveGrapplerRewrite(Operation *function,
                                                       llvm::StringRef name,
                                                       unsigned depth) {
  llvm::StringRef scope, rewritten;
  if (!SplitGrapplerRewrite(name, scope, rewritten))
    return nullptr;
  // The stage prefix has no fixed shape (`AddOpsRewrite_`,
  // `AddOpsRewrite_Leaf_1_`): try every suffix after an underscore, longest
  // first, inside the same scope.
  for (size_t underscore = rewritten.find('_');
       underscore != llvm::StringRef::npos;
       underscore = rewritten.find('_', underscore + 1)) {
    llvm::StringRef node = rewritten.drop_front(underscore + 1);
    std::string candidate =
        scope.empty() ? node.str() : (scope + "/" + node).str();
    if (Operation *op = ResolveIn(function, candidate, depth + 1))
      return op;
  }
  return nullptr;
}

Operation *RuntimeNameResolver::ResolveThrough(Operation *function,
                                               Operation *op,
                                               llvm::StringRef rest,
                                               unsigned depth) {
  // Calls: the executor inlines the callee under the call node's name.
  for (llvm::StringRef attr_name : {"f", "callee"})
    if (Operation *callee = LookupFunction(op, attr_name))
      return ResolveIn(callee, rest, depth + 1);

  auto [segment, tail] = rest.split('/');
  llvm::StringRef inner = DropFrameIndex(tail);
  if (inner.empty())
    return nullptr;
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
      return nullptr;
    callee = LookupFunction(op, "branches", branch);
  } else {
    return nullptr;
  }
  if (callee)
    return ResolveIn(callee, inner, depth + 1);
  // Region control flow keeps the inner ops in this function.
  if (op->getNumRegions() > 0)
    return ResolveIn(function, inner, depth + 1);
  return nullptr;
}

} // namespace TF
} // namespace mlir
