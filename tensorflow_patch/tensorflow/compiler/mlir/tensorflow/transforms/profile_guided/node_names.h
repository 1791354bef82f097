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

#include <memory>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/SymbolTable.h"
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

/// Maps runtime node names, as the TensorFlow executor reports them, to the
/// ops of a module. Names resolve against the public functions and descend
/// through functional control flow and calls:
///   `w/body/_<k>/n`, `w/cond/_<k>/n`     body / cond function of While `w`
///   `c/then/_<k>/n`, `c/else/_<k>/n`     branches of If `c`
///   `c/branch<i>/_<k>/n`                 branch i of Case `c`
///   `p/n`                                callee of call op `p` (inlined)
/// For region-based control flow (WhileRegion, IfRegion, CaseRegion) the
/// inner name resolves in the enclosing function, which holds the region ops.
/// The `_<k>` component is optional. Nodes Grappler created while rewriting
/// a node resolve to that node:
///   `s/ArithmeticOptimizer/AddOpsRewrite_n`, `..._Leaf_<j>_n`   node `s/n`
/// Indexes are built per function on first use, or all at once by IndexAll.
class RuntimeNameResolver {
public:
  explicit RuntimeNameResolver(ModuleOp module);
  ~RuntimeNameResolver();

  /// Builds the index of every function now instead of on first use. After
  /// it, Resolve only reads and may run on several threads at once.
  void IndexAll();

  /// Returns the op `runtime_name` ran as, or nullptr if none matches.
  Operation *Resolve(llvm::StringRef runtime_name);

private:
  /// Node name -> op of one function (the first op carrying the name). The
  /// names are StringAttr data owned by the context, so the map keeps no
  /// copies (a StringMap allocated one per op).
  using FunctionIndex = llvm::DenseMap<llvm::StringRef, Operation *>;

  const FunctionIndex &IndexOf(Operation *function);
  Operation *ResolveIn(Operation *function, llvm::StringRef name,
                       unsigned depth);
  Operation *ResolveThrough(Operation *function, Operation *op,
                            llvm::StringRef rest, unsigned depth);
  /// Resolves a node Grappler created for `<scope>/<node>` to that node.
  Operation *ResolveGrapplerRewrite(Operation *function, llvm::StringRef name,
                                    unsigned depth);
  Operation *LookupFunction(Operation *op, llvm::StringRef attr_name,
                            int index = -1);

  SymbolTable symbols_;
  llvm::SmallVector<Operation *, 4> entry_functions_;
  /// Every function of the module, in order (entry functions among them).
  llvm::SmallVector<Operation *, 4> functions_;
  llvm::DenseMap<Operation *, std::unique_ptr<FunctionIndex>> indices_;
};

} // namespace TF
} // namespace mlir

#endif // TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_NODE_NAMES_H_
