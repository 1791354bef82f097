//===- tf_profiler_annotations.h - Profile annotations ----------*- C++ -*-===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// ProfilerData (the measured runtime of one op), the `profiler_data` /
// `profiler_hot` attributes that store it, the ProfilerAnnotationsInterface
// and the ProfileAnnotation trait that implements the interface for TF ops.
//
// The free functions at the bottom work on any Operation*: they dispatch to
// the interface when the op implements it and otherwise use the attribute
// helpers directly. That fallback is what upstream MLIR sees, where tf ops
// are unregistered, and what TensorFlow sees for unknown tf ops.
//
//===----------------------------------------------------------------------===//

#ifndef TENSORFLOW_COMPILER_MLIR_TENSORFLOW_IR_TF_PROFILER_ANNOTATIONS_H_
#define TENSORFLOW_COMPILER_MLIR_TENSORFLOW_IR_TF_PROFILER_ANNOTATIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

namespace mlir {
namespace TF {

/// Name of the dictionary attribute holding an op's ProfilerData.
inline constexpr llvm::StringLiteral kProfilerDataAttrName = "profiler_data";
/// Name of the i64 attribute `tf-profile-mark-hotspots` sets (1 = hottest).
inline constexpr llvm::StringLiteral kProfilerHotAttrName = "profiler_hot";
/// Name of the `array<i64>` attribute `tf-profile-branch-weights` sets on
/// control-flow ops: how often each branch was taken (If/Case), or
/// [iterations, exits] (While).
inline constexpr llvm::StringLiteral kProfilerBranchCountsAttrName =
    "profiler_branch_counts";
/// Name of the f64 attribute `tf-profile-branch-weights` sets on loops: the
/// mean number of iterations per execution.
inline constexpr llvm::StringLiteral kProfilerTripCountAttrName =
    "profiler_trip_count";
/// Key of the FusedLoc metadata dictionary that carries a `profiler_data`
/// record in a location: `loc(fused<{profiler_data = {...}}>[original])`.
/// Passes and lowerings that keep locations keep the profile with them.
inline constexpr llvm::StringLiteral kProfileLocationKey = "profiler_data";

/// The measured runtime of one op, aggregated over every runtime execution
/// that was attributed to it. Times are picoseconds from the profile start.
/// An op whose work a fused kernel did carries only `fused_into`.
struct ProfilerData {
  int64_t ts = 0;     ///< First start.
  int64_t dur = 0;    ///< Mean duration (total / count, rounded).
  int64_t count = 0;  ///< Number of executions.
  int64_t total = 0;  ///< Sum of durations.
  int64_t self = 0;   ///< Sum of durations minus nested op time.
  int64_t min = 0;    ///< Shortest execution.
  int64_t max = 0;    ///< Longest execution.
  int64_t p50 = 0;    ///< Nearest-rank median duration.
  int64_t p95 = 0;    ///< Nearest-rank 95th percentile duration.
  double share = 0.0; ///< self / sum of self over all annotated ops.
  /// Node name of the kernel that executed this op's work; when non-empty
  /// the timing fields are unused.
  std::string fused_into;
  /// Optional fields, encoded only when set.
  /// Runtime names merged into this op beyond its own (CSE, folding into a
  /// rewritten op, see `tf-annotate-operations-profile`).
  int64_t merged = 0;
  /// Node name of the tf op these measurements belong to; set on ops that
  /// carry another op's profile (below tf, or carried in a location).
  std::string source;
  /// Number of ops at this level that carry `source`'s measurements.
  int64_t fanout = 0;
  /// The whole self (and device) time of `source`, of which this op is
  /// charged a part in `self` (below tf, where a source became several ops).
  int64_t source_self = 0;
  int64_t source_device_self = 0;
  /// Further sources whose ops were fused into this one (lowering fusions).
  std::vector<std::string> fused_sources;
  /// The self time of each of `fused_sources` charged to this op (same order;
  /// part of `self`, so `self` minus their sum is `source`'s part).
  std::vector<int64_t> fused_parts;
  /// XLA module the op's time was measured in ("" if it ran as a TF kernel).
  std::string xla_module;
  /// XLA fusion instruction that did most of the op's work ("" if none).
  std::string xla_fusion;
  /// Device (GPU) time: kernels and copies attributed to the op, all devices,
  /// their number, and device_self over all annotated ops' device time.
  /// Encoded only when device_count > 0.
  int64_t device_self = 0;
  int64_t device_count = 0;
  double device_share = 0.0;

  /// Returns true if this records a fused op rather than a measurement.
  bool IsFused() const { return !fused_into.empty(); }

  /// Encodes the record as the documented `profiler_data` dictionary.
  DictionaryAttr ToAttr(MLIRContext *context) const;

  /// Decodes a `profiler_data` dictionary; std::nullopt if a field is
  /// missing or has the wrong type.
  static std::optional<ProfilerData> FromAttr(DictionaryAttr attr);
};

/// Builds `profiler_data` dictionaries with every name looked up once. A pass
/// that annotates many ops keeps one for its run: looking up eleven field
/// names per op cost as much as building the dictionary.
class ProfilerDataEncoder {
public:
  explicit ProfilerDataEncoder(MLIRContext *context);

  /// Encodes `data` as the documented `profiler_data` dictionary.
  DictionaryAttr Encode(const ProfilerData &data) const;
  /// Sets `op`'s `profiler_data` attribute to `data`.
  void SetAttr(Operation *op, const ProfilerData &data) const;

private:
  StringAttr attr_name_;
  /// Field names, in the order DictionaryAttr sorts them.
  StringAttr count_, device_count_, device_self_, device_share_, dur_, fanout_,
      fused_into_, fused_parts_, fused_sources_, max_, merged_, min_, p50_,
      p95_, self_, share_, source_, source_device_self_, source_self_, total_,
      ts_, xla_fusion_, xla_module_;
};

/// Attribute-level helpers shared by the trait, the external models of
/// upstream ops and the fallback path. Reading looks at the `profiler_data`
/// attribute first, then at a profile carried in the op's location.
void SetProfilerDataAttr(Operation *op, const ProfilerData &data);
std::optional<ProfilerData> ReadProfilerDataAttr(Operation *op);
bool HasProfilerDataAttr(Operation *op);

/// Returns `loc` with `data` as FusedLoc metadata around it, replacing a
/// profile `loc` already carried at its top.
Location WithProfileInLocation(Location loc, DictionaryAttr data);
/// Returns `loc` with `data` carried after the records it already carries:
/// the op also holds the work of another op (one the lowering will erase).
Location WithForwardedProfile(Location loc, DictionaryAttr data);
/// Returns `loc` without the profiles carried at its top.
Location WithoutProfileInLocation(Location loc);
/// Appends every `profiler_data` record carried in `loc`, outermost first
/// (several when a lowering fused the locations of several profiled ops).
void CollectProfilesInLocation(Location loc,
                               llvm::SmallVectorImpl<DictionaryAttr> &out);

} // namespace TF
} // namespace mlir

#include "tensorflow/compiler/mlir/tensorflow/ir/tf_profiler_annotations.h.inc"

namespace mlir {
namespace OpTrait {
namespace TF {

/// Implements ProfilerAnnotationsInterface for the op it is attached to by
/// storing the data as attributes of `this->getOperation()`.
template <typename ConcreteType>
class ProfileAnnotation : public TraitBase<ConcreteType, ProfileAnnotation> {
public:
  /// Stores `data` as the op's `profiler_data` attribute.
  void AttachProfilerData(const ::mlir::TF::ProfilerData &data) {
    ::mlir::TF::SetProfilerDataAttr(this->getOperation(), data);
  }

  /// As above, with the pass's encoder (no field name looked up per op).
  void
  AttachEncodedProfilerData(const ::mlir::TF::ProfilerData &data,
                            const ::mlir::TF::ProfilerDataEncoder &encoder) {
    encoder.SetAttr(this->getOperation(), data);
  }

  /// Returns the op's annotation, if any.
  std::optional<::mlir::TF::ProfilerData> GetProfilerData() {
    return ::mlir::TF::ReadProfilerDataAttr(this->getOperation());
  }

  /// Returns true if the op has a `profiler_data` attribute.
  bool HasProfilerData() {
    return ::mlir::TF::HasProfilerDataAttr(this->getOperation());
  }
};

} // namespace TF
} // namespace OpTrait

namespace TF {

/// Returns true if profile passes may annotate `op`: it implements
/// ProfilerAnnotationsInterface, or it is an unregistered `tf.*` op.
bool IsProfileAnnotatable(Operation *op);
/// As IsProfileAnnotatable, for any dialect: unregistered ops of every
/// dialect count (StableHLO parsed without its dialect, IREE's `util`).
bool IsProfileAnnotatableAtAnyLevel(Operation *op);

/// Interface-or-fallback entry points used by the passes.
void AttachProfilerData(Operation *op, const ProfilerData &data);
/// As above, encoding with `encoder` on both paths (through
/// AttachEncodedProfilerData on ops implementing the interface): a pass that
/// annotates many ops keeps one encoder for its run.
void AttachProfilerData(Operation *op, const ProfilerData &data,
                        const ProfilerDataEncoder &encoder);
std::optional<ProfilerData> GetProfilerData(Operation *op);
bool HasProfilerData(Operation *op);

/// Removes `profiler_data`, `profiler_hot`, `profiler_branch_counts` and
/// `profiler_trip_count`, and a record carried in the location of the op or
/// of its regions' arguments; returns true if one was set.
bool RemoveProfileAnnotations(Operation *op);

} // namespace TF
} // namespace mlir

#endif // TENSORFLOW_COMPILER_MLIR_TENSORFLOW_IR_TF_PROFILER_ANNOTATIONS_H_
