//===- passes.h - Profile-guided passes for the tf dialect ------*- C++ -*-===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Passes that annotate tf dialect ops with a measured runtime profile and the
// profile-guided pipeline built from them. Declarations are generated from
// passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_PASSES_H_
#define TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_PASSES_H_

#include <memory>
#include <string>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir {
namespace TF {

#define GEN_PASS_DECL
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h.inc"

/// Options of `tf-profile-guided-pipeline`.
struct ProfileGuidedPipelineOptions
    : public PassPipelineOptions<ProfileGuidedPipelineOptions> {
  Option<bool> enable_profile{
      *this, "enable-profile",
      llvm::cl::desc("Run the profile-guided passes (off: the pipeline is "
                     "empty)"),
      llvm::cl::init(false)};
  Option<std::string> path_to_profile{
      *this, "path-to-profile",
      llvm::cl::desc("op_profile.json written by the trace reader")};
  Option<bool> report_unresolved{
      *this, "report-unresolved",
      llvm::cl::desc("Remark on profile entries that match no op"),
      llvm::cl::init(false)};
  Option<unsigned> top_k{*this, "top-k",
                         llvm::cl::desc("Mark at most this many hot ops (0: "
                                        "no limit)"),
                         // tf-profile-mark-hotspots' default (passes.td).
                         llvm::cl::init(5)};
  Option<double> min_share{
      *this, "min-share",
      llvm::cl::desc("Mark only ops with at least this share of self time"),
      llvm::cl::init(0.0)};
  Option<bool> carry_in_location{
      *this, "carry-in-location",
      llvm::cl::desc("Also carry each record in the op's location"),
      llvm::cl::init(false)};
  Option<std::string> attribution_output{
      *this, "attribution-output",
      llvm::cl::desc("Write the tfpgo.attribution document here (empty: do "
                     "not)")};
  Option<bool> remarks{
      *this, "remarks",
      llvm::cl::desc("Explain the decisions of the profile-guided "
                     "transformations with remarks"),
      llvm::cl::init(false)};
  Option<std::string> op_graph_output{
      *this, "op-graph-output",
      llvm::cl::desc("Also write op_graph.json here (empty: do not)")};
};

/// Adds the profile-guided passes to `pm` (anchored on ModuleOp): annotate,
/// mark hotspots, the profile-guided transformations (branch and trip
/// counts) and, if requested, export the op graph. Adds nothing when
/// `options.enable_profile` is false.
void CreateTFProfileGuidedPipeline(OpPassManager &pm,
                                   const ProfileGuidedPipelineOptions &options);

/// Registers the passes of passes.td and `tf-profile-guided-pipeline`.
void registerProfileGuidedPasses();

} // namespace TF
} // namespace mlir

#endif // TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_PASSES_H_
