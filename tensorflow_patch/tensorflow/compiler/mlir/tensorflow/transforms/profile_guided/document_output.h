//===- document_output.h - Writing the passes' documents --------*- C++ -*-===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// The one way the profile-guided passes write a document (op_graph.json, the
// attribution document, the level summary): atomically, with one diagnostic
// naming the document and the file when it cannot be written.
//
//===----------------------------------------------------------------------===//

#ifndef TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_DOCUMENT_OUTPUT_H_
#define TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_DOCUMENT_OUTPUT_H_

#include "mlir/IR/Location.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace TF {

/// Writes what `write` prints to `path` ('-': stdout) through a temporary
/// file renamed into place, so a failed run leaves no half-written document.
/// On failure emits "cannot write <what>: <reason naming the file>" at `loc`.
LogicalResult
WriteDocument(llvm::StringRef path, llvm::StringRef what, Location loc,
              llvm::function_ref<void(llvm::raw_ostream &)> write);

} // namespace TF
} // namespace mlir

#endif // TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_DOCUMENT_OUTPUT_H_
