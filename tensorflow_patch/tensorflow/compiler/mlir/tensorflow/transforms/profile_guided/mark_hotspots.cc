//===- mark_hotspots.cc - Rank the hottest ops ----------------------------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Implements `tf-profile-mark-hotspots`, the first pass that consumes the
// annotations: it ranks annotated ops by self time and marks the top ones.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "tensorflow/compiler/mlir/tensorflow/ir/tf_profiler_annotations.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h"

namespace mlir {
namespace TF {

#define GEN_PASS_DEF_PROFILEMARKHOTSPOTSPASS
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h.inc"

namespace {

/// An annotated op and the figures it is ranked by: its self time and share,
/// or, when the module holds device time, its device time and share.
struct Candidate {
  Operation *op;
  int64_t self;
  double share;
  int64_t device_self;
  double device_share;
};

/// See passes.td.
class ProfileMarkHotspotsPass
    : public impl::ProfileMarkHotspotsPassBase<ProfileMarkHotspotsPass> {
public:
  using ProfileMarkHotspotsPassBase::ProfileMarkHotspotsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::vector<Candidate> candidates;
    module.walk([&](Operation *op) {
      // Looking first spares most ops an attribute dictionary rebuild.
      if (op->getAttr(kProfilerHotAttrName))
        op->removeAttr(kProfilerHotAttrName);
      if (!IsProfileAnnotatableAtAnyLevel(op))
        return;
      std::optional<ProfilerData> data = GetProfilerData(op);
      if (data && !data->IsFused())
        candidates.push_back({op, data->self, data->share, data->device_self,
                              data->device_share});
    });
    // The host only launched what a device ran: where there is device time,
    // it decides.
    const bool device = llvm::any_of(
        candidates, [](const Candidate &c) { return c.device_self > 0; });
    llvm::erase_if(candidates, [&](const Candidate &c) {
      return (device ? c.device_share : c.share) < minShare;
    });
    // Stable: equal times keep IR order, so ranks are deterministic.
    std::stable_sort(candidates.begin(), candidates.end(),
                     [&](const Candidate &a, const Candidate &b) {
                       return device ? a.device_self > b.device_self
                                     : a.self > b.self;
                     });
    if (topK > 0 && candidates.size() > topK)
      candidates.resize(topK);
    Builder builder(module.getContext());
    for (const auto &[rank, candidate] : llvm::enumerate(candidates)) {
      candidate.op->setAttr(kProfilerHotAttrName,
                            builder.getI64IntegerAttr(rank + 1));
      ++numHotOps;
    }
  }
};

} // namespace
} // namespace TF
} // namespace mlir
