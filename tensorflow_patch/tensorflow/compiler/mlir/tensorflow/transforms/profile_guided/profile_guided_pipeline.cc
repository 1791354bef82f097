//===- profile_guided_pipeline.cc - tf-profile-guided-pipeline ------------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Composes the profile-guided passes into `tf-profile-guided-pipeline`, the
// place profile-guided transformations go (tf-profile-branch-weights), and
// registers everything for tf-opt style drivers.
//
//===----------------------------------------------------------------------===//

#include "mlir/Pass/PassRegistry.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h"

namespace mlir {
namespace TF {
namespace {

#define GEN_PASS_REGISTRATION
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h.inc"

} // namespace

void CreateTFProfileGuidedPipeline(
    OpPassManager &pm, const ProfileGuidedPipelineOptions &options) {
  if (!options.enable_profile)
    return;
  AnnotateOperationsProfilePassOptions annotate;
  annotate.pathToProfile = options.path_to_profile;
  annotate.reportUnresolved = options.report_unresolved;
  annotate.carryInLocation = options.carry_in_location;
  annotate.attributionOutput = options.attribution_output;
  pm.addPass(createAnnotateOperationsProfilePass(annotate));

  ProfileMarkHotspotsPassOptions hotspots;
  hotspots.topK = options.top_k;
  hotspots.minShare = options.min_share;
  pm.addPass(createProfileMarkHotspotsPass(hotspots));

  // Profile-guided transformations go here, before the graph is exported.
  ProfileBranchWeightsPassOptions branch_weights;
  branch_weights.remarks = options.remarks;
  pm.addPass(createProfileBranchWeightsPass(branch_weights));

  if (!options.op_graph_output.empty()) {
    ProfileExportOpGraphPassOptions export_options;
    export_options.output = options.op_graph_output;
    pm.addPass(createProfileExportOpGraphPass(export_options));
  }
}

void registerProfileGuidedPasses() {
  registerTFProfileGuidedPasses();
  PassPipelineRegistration<ProfileGuidedPipelineOptions>(
      "tf-profile-guided-pipeline",
      "Annotate tf ops with a runtime profile, mark hotspots, set measured "
      "branch and trip counts and optionally export the op graph "
      "(enable-profile=false: no-op)",
      CreateTFProfileGuidedPipeline);
}

} // namespace TF
} // namespace mlir
