//===- node_names.h - Runtime node name to op resolution --------*- C++ -*-===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// The one join key between a TensorFlow runtime profile and the tf dialect:
// the TF node name. The IR carries it in op locations; the runtime reports it
// with control-flow and call prefixes. Everything that maps one onto the other
// lives here.
//
//===----------------------------------------------------------------------===//

#ifndef TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_NODE_NAMES_H_
#define TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_NODE_NAMES_H_

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

namespace mlir {
namespace TF {

/// Returns the TF node name carried by `loc`, or "" if there is none.
///
/// The name is the first NameLoc found depth-first (callee before caller)
/// whose name does not end in ':' (TensorFlow's importer fuses an
/// `"<OpType>:"` NameLoc in front of the node's location). A `@function`
/// suffix (`node@function` inside function bodies) is dropped.
llvm::StringRef GetNodeName(Location loc);

/// Returns the TF node name of `op` (see GetNodeName(Location)).
llvm::StringRef GetNodeName(Operation *op);

/// Appends the node name of each part of `loc` that has one, the primary
/// (GetNodeName) first. Rewrite patterns fuse the locations of the ops they
/// replace (`fused["Square:", "Square"(..), "Sub:", "sub"(..)]` for a
/// SquaredDifference), folding fuses them into the constant: the names after
/// the first are the ops merged into this one.
void GetNodeNames(Location loc, llvm::SmallVectorImpl<llvm::StringRef> &out);

/// Returns `name` without TF's uniquifying `_<k>` suffix on each component
/// (`adam/Cast_24/ReadVariableOp` -> `adam/Cast/ReadVariableOp`).
std::string StripUniquifiers(llvm::StringRef name);

/// Returns `kernel_type` without the prefixes of TF's internal and oneDNN
/// kernels (`_MklNativeFusedMatMul` -> `FusedMatMul`).
llvm::StringRef StripKernelPrefixes(llvm::StringRef kernel_type);

/// How a runtime node name found its op(s).
enum class MatchKind {
  kExact,    ///< The op's own node name, in an entry function.
  kResolved, ///< Through a function body, branch, call or Grappler rewrite.
  kMerged,   ///< A rewrite fused its location into another op, or CSE kept
             ///< one of identical ops (same type, name up to `_<k>`).
  kFolded,   ///< Folded into a constant: no op does this work any more.
};

/// Returns the documented name of `kind` (`exact`, `resolved`, ...).
llvm::StringRef MatchKindName(MatchKind kind);

/// For a runtime name that follows one of TensorFlow's renaming rules (a node
/// TensorFlow created for another and named after it:
/// docs/attribution_rules.md), says which and the name it stands for, for the
/// reason of an entry no op matched; "" when the name follows no rule.
std::string DescribeRenameRule(llvm::StringRef runtime_name);

/// The op(s) one runtime name resolved to. Several ops only for a CSE merge
/// whose survivor is ambiguous (the time is split between them).
struct Resolution {
  llvm::SmallVector<Operation *, 1> ops;
  MatchKind kind = MatchKind::kExact;
  /// For kMerged: true if only the name (type and name up to `_<k>`) tied
  /// the entry to `ops`, not a location: the survivor may be misidentified.
  bool by_name = false;
  /// The renaming rules that led from the runtime name to the op's name,
  /// outermost first and joined by `+` (`graph_partitioner+function_argument`),
  /// "" for none: docs/attribution_rules.md.
  std::string rule;
  /// Why a name that several ops could stand for matched none (ops is empty):
  /// it is left unresolved rather than guessed.
  std::string ambiguity;

  explicit operator bool() const { return !ops.empty(); }
};

/// Maps runtime node names, as the TensorFlow executor reports them, to the
/// ops of a module. Names resolve against the public functions and descend
/// through functional control flow and calls:
///   `w/body/_<k>/n`, `w/cond/_<k>/n`     body / cond function of While `w`
///   `c/then/_<k>/n`, `c/else/_<k>/n`     branches of If `c`
///   `c/branch<i>/_<k>/n`                 branch i of Case `c`
///   `p/n`                                callee of call op `p` (inlined)
/// For region-based control flow (WhileRegion, IfRegion, CaseRegion) the
/// inner name resolves in the enclosing function, which holds the region ops.
/// The `_<k>` component is optional. Nodes TensorFlow created for a node
/// resolve to that node (docs/attribution_rules.md):
///   `s/ArithmeticOptimizer/AddOpsRewrite_n`, `..._Leaf_<j>_n`   node `s/n`
///   `n/unary_ops_composition` (Grappler)                         node `n`
///   `n/_<k>`, `n/ctrl/_<k>` (the graph partitioner's sends)       node `n`
///   `GroupCrossDeviceControlEdges_<k>/n` (Grappler)              node `n`
///   `n-<port>-CastTo<T>-<id>-AutoMixedPrecision`, `n-...-LayoutOptimizer`,
///   `Recomputed/n`, `ConstantFolding/n-<suffix>`, `LoopOptimizer/n`
///   (Grappler)                                                    node `n`
/// and the name of a function argument (its `_Arg` node, a transfer of it
/// after the partitioner) resolves to the ops that read the argument.
/// An XLA entry's name (its HLO `op_name`) no entry-function op carries is
/// the bare node name of an op inside a function XLA compiled with the step
/// (a while body or cond, an if branch, a callee: tf2xla compiles each as its
/// own graph): it resolves in the non-entry functions the entry functions
/// reach when exactly one of them has it (rule `xla_function_body`), else
/// it stays unresolved with Resolution::ambiguity naming them.
/// Names no op carries as its own resolve, as MatchKind::kMerged, to the op
/// whose location holds them after a rewrite (GetNodeNames), else to the ops
/// of the same function whose name equals up to `_<k>` suffixes (failing
/// that, up to leading scopes, down to `scope/node`) and whose type is the
/// runtime kernel's (CSE keeps one of identical ops and drops the others'
/// locations). A name found on a `tf.Const` for a kernel other than
/// Const was folded (MatchKind::kFolded).
/// Indexes are built per function on first use, or all at once by IndexAll.
class RuntimeNameResolver {
public:
  explicit RuntimeNameResolver(ModuleOp module);
  ~RuntimeNameResolver();

  /// Builds the index of every function now instead of on first use. After
  /// it, Resolve only reads and may run on several threads at once.
  void IndexAll();

  /// Resolves `runtime_name`, run under the kernels `kernel_types`, merges
  /// included; empty if nothing matches. `from_xla`: the name is an HLO
  /// instruction's `op_name` (the entry has an XLA module), which may name
  /// an op of a compiled function body without a call prefix.
  Resolution Resolve(llvm::StringRef runtime_name,
                     llvm::ArrayRef<llvm::StringRef> kernel_types,
                     bool from_xla = false);

private:
  /// The names of one function's ops. The names are StringAttr data owned by
  /// the context, so the maps keep no copies (a StringMap allocated one per
  /// op).
  struct FunctionIndex {
    /// Node name -> the first op carrying it as its own name.
    llvm::DenseMap<llvm::StringRef, Operation *> primary;
    /// Name merged into another op's location -> that op.
    llvm::DenseMap<llvm::StringRef, Operation *> merged;
    /// StripUniquifiers(primary name) -> ops, in IR order.
    std::map<std::string, llvm::SmallVector<Operation *, 2>, std::less<>> stems;
    /// An argument's runtime name (`tf.entry_function` inputs: the `_Arg`
    /// node) -> the ops that read it, in IR order.
    llvm::DenseMap<llvm::StringRef, llvm::SmallVector<Operation *, 2>>
        arguments;
  };

  /// What one Resolve call looks for: resolution only reads the index, so
  /// several run at once, each with its own query.
  struct Query {
    /// Kernel types the name ran under; empty: no CSE matching.
    llvm::ArrayRef<llvm::StringRef> kernel_types;
    /// False: exact names only (the Operation* overload).
    bool merges = false;
  };

  const FunctionIndex &IndexOf(Operation *function);
  Resolution ResolveIn(Operation *function, llvm::StringRef name,
                       unsigned depth, const Query &query);
  Resolution ResolveThrough(Operation *function, Operation *op,
                            llvm::StringRef rest, unsigned depth,
                            const Query &query);
  /// Resolves a node Grappler created for `<scope>/<node>` to that node.
  Resolution ResolveGrapplerRewrite(Operation *function, llvm::StringRef name,
                                    unsigned depth, const Query &query);
  /// Resolves a name merged away by the IR pipeline (see the class comment).
  Resolution ResolveMerged(const FunctionIndex &index, llvm::StringRef name,
                           const Query &query);
  /// Resolves an XLA `op_name` in the functions the entry functions reach
  /// (rule `xla_function_body`, see the class comment).
  Resolution ResolveInFunctionBodies(llvm::StringRef name, const Query &query);
  /// The non-entry functions with a body that the entry functions reach
  /// through symbol references (control flow, calls), in module order.
  llvm::ArrayRef<Operation *> ReachedFunctions();
  Operation *LookupFunction(Operation *op, llvm::StringRef attr_name,
                            int index = -1);

  SymbolTable symbols_;
  llvm::SmallVector<Operation *, 4> entry_functions_;
  /// Every function of the module, in order (entry functions among them).
  llvm::SmallVector<Operation *, 4> functions_;
  llvm::DenseMap<Operation *, std::unique_ptr<FunctionIndex>> indices_;
  /// ReachedFunctions, found on first use (or by IndexAll).
  std::optional<llvm::SmallVector<Operation *, 4>> reached_functions_;
};

} // namespace TF
} // namespace mlir

#endif // TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_NODE_NAMES_H_
