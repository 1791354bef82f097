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
#include <memory>
#include <vector>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Allocator.h"
#include "llvm/Support/Error.h"

namespace mlir {
namespace TF {

/// The profile of one runtime node name. Times in picoseconds. Strings and
/// durations point into the storage of the OpProfile holding the entry.
struct OpProfileEntry {
  llvm::StringRef name; ///< Runtime node name, as executed.
  /// Kernel op types seen (`_FusedConv2D`).
  llvm::SmallVector<llvm::StringRef, 1> op_types;
  int64_t count = 0;
  int64_t total_ps = 0;
  int64_t self_ps = 0;
  int64_t min_ps = 0;
  int64_t max_ps = 0;
  int64_t first_start_ps = 0;
  llvm::ArrayRef<int64_t> durations_ps; ///< `count` durations, ascending.
  /// XLA origin (version 2): module and fusion of the entry's largest
  /// part; "" for TF kernels.
  llvm::StringRef xla_module, xla_fusion;
  /// Device time (version 3): kernels and copies attributed to the entry on
  /// all devices, and their number. An entry that ran only on the device has
  /// `count` 0 and no durations.
  int64_t device_self_ps = 0;
  int64_t device_count = 0;
};

/// The parts of `op_profile.json` the passes use.
struct OpProfile {
  int64_t op_self_ps = 0;           ///< `totals.op_self_ps`.
  int64_t device_attributed_ps = 0; ///< `totals.device_attributed_ps` (v3).
  std::vector<OpProfileEntry> ops;
  /// Owns the strings and durations of `ops`: one arena instead of three
  /// small heap blocks per entry.
  std::unique_ptr<llvm::BumpPtrAllocator> storage =
      std::make_unique<llvm::BumpPtrAllocator>();
};

/// Newest `tfpgo.op_profile` version this reader understands.
inline constexpr int64_t kOpProfileVersion = 3;

/// Parses an op profile document in one pass without building a JSON tree.
/// The error names the offending field; syntax errors (reported first, as
/// `not JSON: line L, column C: ...`) name the position.
llvm::Expected<OpProfile> ParseOpProfile(llvm::StringRef json_text);

/// Reads and parses the op profile at `path`. The error names the file.
llvm::Expected<OpProfile> ReadOpProfile(llvm::StringRef path);

} // namespace TF
} // namespace mlir

#endif // TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_OP_PROFILE_READER_H_
