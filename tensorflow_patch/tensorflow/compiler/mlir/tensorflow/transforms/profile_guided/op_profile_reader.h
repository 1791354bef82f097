//===- op_profile_reader.h - Reads op_profile.json --------------*- C++ -*-===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Typed view of the `tfpgo.op_profile` document (docs/formats.md) that the
// trace reader writes: one entry per runtime node name.
//
//===----------------------------------------------------------------------===//

#ifndef TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_OP_PROFILE_READER_H_
#define TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_OP_PROFILE_READER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace mlir {
namespace TF {

/// The profile of one runtime node name. Times in picoseconds.
struct OpProfileEntry {
  std::string name;                  ///< Runtime node name, as executed.
  std::vector<std::string> op_types; ///< Kernel op types seen (`_FusedConv2D`).
  int64_t count = 0;
  int64_t total_ps = 0;
  int64_t self_ps = 0;
  int64_t min_ps = 0;
  int64_t max_ps = 0;
  int64_t first_start_ps = 0;
  std::vector<int64_t> durations_ps; ///< `count` durations, ascending.
};

/// The parts of `op_profile.json` the passes use.
struct OpProfile {
  int64_t op_self_ps = 0; ///< `totals.op_self_ps`.
  std::vector<OpProfileEntry> ops;
};

/// Newest `tfpgo.op_profile` version this reader understands.
inline constexpr int64_t kOpProfileVersion = 1;

/// Parses an op profile document. The error names the offending field.
llvm::Expected<OpProfile> ParseOpProfile(llvm::StringRef json_text);

/// Reads and parses the op profile at `path`. The error names the file.
llvm::Expected<OpProfile> ReadOpProfile(llvm::StringRef path);

} // namespace TF
} // namespace mlir

#endif // TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_OP_PROFILE_READER_H_
