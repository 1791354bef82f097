//===- read_op_profiles.cc - The op_profile.json reader on many files -----===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// TEST ONLY: the fuzz harness's in-process driver of the C++ op profile
// reader (tests/python/reader_fuzz.py). Reads each file argument with
// ReadOpProfile, the function the annotate pass calls, and prints one line
// per file, flushed before the next is read: `ok <ops>`, or `error <message>`
// with a newline in the message shown as `\n` (a finding: an error must be
// one line). A crash or a hang shows as the line of the input missing; one
// process reads hundreds of inputs in the time tfpgo-opt starts once.
//
//===----------------------------------------------------------------------===//

#include <string>

#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/op_profile_reader.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    llvm::Expected<mlir::TF::OpProfile> profile =
        mlir::TF::ReadOpProfile(argv[i]);
    if (profile) {
      llvm::outs() << "ok " << profile->ops.size() << "\n";
    } else {
      std::string message = llvm::toString(profile.takeError());
      llvm::outs() << "error ";
      for (char c : message)
        c == '\n' ? llvm::outs() << "\\n" : llvm::outs() << c;
      llvm::outs() << "\n";
    }
    llvm::outs().flush();
  }
  return 0;
}
