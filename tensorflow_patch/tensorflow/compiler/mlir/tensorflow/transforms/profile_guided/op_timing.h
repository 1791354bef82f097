//===- op_timing.h - Runtime executions merged per op -----------*- C++ -*-===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// OpTiming merges the op_profile.json entries that land on one op into the
// documented ProfilerData record; the annotate pass (tf level) and the
// materialize pass (lower levels, matching names) share it.
//
//===----------------------------------------------------------------------===//

#ifndef TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_OP_TIMING_H_
#define TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_OP_TIMING_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "tensorflow/compiler/mlir/tensorflow/ir/tf_profiler_annotations.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/op_profile_reader.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

namespace mlir {
namespace TF {

/// Significant digits `share` keeps: enough to rank and to read (the exact
/// figures are the i64 fields). MLIR prints such a double from its 6-digit
/// form at once; a full-precision one fails that form's round trip check
/// and costs the printer a third, shortest-form conversion.
inline constexpr int kShareDigits = 6;

/// Returns `value` rounded to kShareDigits significant decimal digits.
double RoundShare(double value);

/// Part `part` (0-based) of `value` split into `parts` integer parts that
/// differ by at most one and sum exactly to `value`: the lower-numbered
/// parts take the remainder, one unit each. The one rule for splitting a
/// measured figure over several ops (docs/formats.md, "Conservation").
inline int64_t EqualPart(int64_t value, int64_t part, int64_t parts) {
  return value / parts + (part < value % parts ? 1 : 0);
}

/// Every runtime execution attributed to one op, merged.
struct OpTiming {
  int64_t ts = std::numeric_limits<int64_t>::max();
  int64_t count = 0;
  int64_t total = 0;
  int64_t self = 0;
  int64_t min = std::numeric_limits<int64_t>::max();
  int64_t max = 0;
  std::vector<int64_t> durations;
  /// Kernel types under which the op ran (may name a fused kernel).
  llvm::SmallVector<llvm::StringRef, 1> kernel_types;
  /// True if the op ran as Grappler's rewrite of the add tree it roots.
  bool add_tree_rewritten = false;
  /// XLA origin of the first entry that has one (entries come largest first).
  llvm::StringRef xla_module, xla_fusion;
  /// Runtime names the IR pipeline merged into this op (MatchKind::kMerged).
  int64_t merged = 0;
  /// Device time and executions (kernels) of the merged entries.
  int64_t device_self = 0;
  int64_t device_count = 0;

  void Add(const OpProfileEntry &entry) {
    AddExecutions(entry, entry.count, entry.total_ps, entry.self_ps);
    AddDevice(entry.device_self_ps, entry.device_count);
    durations.insert(durations.end(), entry.durations_ps.begin(),
                     entry.durations_ps.end());
    for (llvm::StringRef type : entry.op_types)
      if (!llvm::is_contained(kernel_types, type))
        kernel_types.push_back(type);
    if (xla_module.empty()) {
      xla_module = entry.xla_module;
      xla_fusion = entry.xla_fusion;
    }
  }

  /// Adds part `part` of `parts` equal parts of a merged entry: CSE kept one
  /// of identical ops and which one is ambiguous, so each candidate gets an
  /// equal share of the counts and times (integer parts that sum exactly to
  /// the entry's). Its durations stay out of the percentiles, which describe
  /// whole executions of this op's own names.
  void AddMergedPart(const OpProfileEntry &entry, int64_t part, int64_t parts) {
    auto share = [&](int64_t value) { return EqualPart(value, part, parts); };
    if (parts == 1) {
      durations.insert(durations.end(), entry.durations_ps.begin(),
                       entry.durations_ps.end());
      AddExecutions(entry, entry.count, entry.total_ps, entry.self_ps);
      AddDevice(entry.device_self_ps, entry.device_count);
    } else {
      AddExecutions(entry, share(entry.count), share(entry.total_ps),
                    share(entry.self_ps));
      AddDevice(share(entry.device_self_ps), share(entry.device_count));
    }
    ++merged;
  }

  /// Returns the documented record; `durations` gets sorted. `all_self` and
  /// `all_device` are the sums the shares divide by.
  ProfilerData ToProfilerData(int64_t all_self, int64_t all_device = 0) {
    // Usually one entry, whose durations are sorted already.
    if (!std::is_sorted(durations.begin(), durations.end()))
      std::sort(durations.begin(), durations.end());
    const int64_t n = static_cast<int64_t>(durations.size());
    ProfilerData data;
    data.ts = ts;
    data.count = count;
    data.total = total;
    data.self = self;
    data.min = count ? min : 0; // device-only: no host execution
    data.max = max;
    data.dur = count ? (total + count / 2) / count : 0;
    // Nearest rank: sorted[ceil(q * n) - 1], in integer arithmetic.
    data.p50 = n ? durations[(n + 1) / 2 - 1] : 0;
    data.p95 = n ? durations[(95 * n + 99) / 100 - 1] : 0;
    data.share =
        all_self > 0 ? RoundShare(static_cast<double>(self) / all_self) : 0.0;
    data.merged = merged;
    data.device_self = device_self;
    data.device_count = device_count;
    data.device_share =
        all_device > 0
            ? RoundShare(static_cast<double>(device_self) / all_device)
            : 0.0;
    data.xla_module = xla_module.str();
    data.xla_fusion = xla_fusion.str();
    return data;
  }

private:
  void AddDevice(int64_t ps, int64_t executions) {
    device_self += ps;
    device_count += executions;
  }

  void AddExecutions(const OpProfileEntry &entry, int64_t executions,
                     int64_t total_ps, int64_t self_ps) {
    ts = std::min(ts, entry.first_start_ps);
    count += executions;
    if (!entry.count) // ran only on the device: no host duration to compare
      return;
    total += total_ps;
    self += self_ps;
    min = std::min(min, entry.min_ps);
    max = std::max(max, entry.max_ps);
  }
};

} // namespace TF
} // namespace mlir

#endif // TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_OP_TIMING_H_
