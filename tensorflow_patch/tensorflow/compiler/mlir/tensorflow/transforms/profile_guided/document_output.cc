//===- document_output.cc - Writing the passes' documents -----------------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/document_output.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Error.h"

namespace mlir {
namespace TF {

LogicalResult
WriteDocument(llvm::StringRef path, llvm::StringRef what, Location loc,
              llvm::function_ref<void(llvm::raw_ostream &)> write) {
  llvm::Error error = llvm::writeToOutput(path, [&](llvm::raw_ostream &os) {
    write(os);
    return llvm::Error::success();
  });
  if (!error)
    return success();
  // The error text already names the file.
  emitError(loc) << "cannot write " << what << ": "
                 << llvm::toString(std::move(error));
  return failure();
}

} // namespace TF
} // namespace mlir
