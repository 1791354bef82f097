//===- conv_to_dot.cc - Hot, slow 1x1 convolutions as dot_general ---------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Implements `tf-profile-guided-conv-to-dot` (passes.td): the first pass that
// transforms from the annotations. It decides from two measurements, the
// TensorFlow profile on each op (`profiler_data`) and the compiled program's
// dispatch profile (`iree_profile.json`), and rewrites only the convolutions
// that are both hot and far slower compiled than under TensorFlow.
//
// The ops are matched by name and read through their properties, so the pass
// works on StableHLO parsed as unregistered ops (tfpgo-opt, which has no
// StableHLO dialect) and on the registered dialect (a TensorFlow tf-opt)
// alike.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Pass/Pass.h"
#include "tensorflow/compiler/mlir/tensorflow/ir/tf_profiler_annotations.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/document_output.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/op_timing.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

namespace mlir {
namespace TF {

#define GEN_PASS_DEF_PROFILEGUIDEDCONVTODOTPASS
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h.inc"

namespace {

constexpr llvm::StringLiteral kConvolution = "stablehlo.convolution";
/// The one layout rewritten: NHWC input and output, HWIO kernel, the form
/// TensorFlow's Conv2D legalizes to.
constexpr llvm::StringLiteral kNhwcHwio =
    "#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>";
/// Contracts the input's channels (dim 3) with the CxK kernel's rows.
constexpr llvm::StringLiteral kChannelContraction =
    "#stablehlo.dot<lhs_contracting_dimensions = [3], "
    "rhs_contracting_dimensions = [0]>";

/// One dispatch of the compiled program, as `iree_profile.json` lists it.
struct Dispatch {
  std::string name;
  int64_t total_ps = 0;   ///< Its time over the profiled runs.
  int64_t tf_self_ps = 0; ///< TensorFlow's time for the ops it ran.
};

/// The compiled program's dispatches and, per tf op, those that ran it.
struct TargetProfile {
  std::vector<Dispatch> dispatches;
  llvm::StringMap<std::vector<size_t>> by_source;
};

llvm::Error Invalid(llvm::StringRef path, const llvm::Twine &problem) {
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      path + ": " + problem +
          "; pass the iree_profile.json of a --lower iree run");
}

/// Reads the dispatches of `iree_profile.json` (docs/formats.md). The error
/// names the file and the problem.
llvm::Expected<TargetProfile> ReadTargetProfile(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(buffer.getError(),
                                   "cannot read target profile '" + path +
                                       "': " + buffer.getError().message());
  llvm::Expected<llvm::json::Value> document =
      llvm::json::parse((*buffer)->getBuffer());
  if (!document)
    return Invalid(path, "not JSON: " + llvm::toString(document.takeError()));
  const llvm::json::Object *root = document->getAsObject();
  if (!root || root->getString("format") != "tfpgo.iree_profile")
    return Invalid(path, "'format' is not \"tfpgo.iree_profile\"");
  if (root->getInteger("version") != 1)
    return Invalid(path, "unsupported version (this pass reads version 1)");
  const llvm::json::Array *dispatches = root->getArray("dispatches");
  if (!dispatches)
    return Invalid(path, "no 'dispatches' array");
  TargetProfile profile;
  for (const llvm::json::Value &value : *dispatches) {
    const llvm::json::Object *entry = value.getAsObject();
    std::optional<int64_t> total =
        entry ? entry->getInteger("total_ps") : std::nullopt;
    std::optional<int64_t> tf =
        entry ? entry->getInteger("tf_self_ps") : std::nullopt;
    const llvm::json::Array *sources =
        entry ? entry->getArray("sources") : nullptr;
    std::optional<llvm::StringRef> name =
        entry ? entry->getString("name") : std::nullopt;
    if (!name || !total || !tf || !sources)
      return Invalid(path, "dispatch " +
                               llvm::Twine(profile.dispatches.size()) +
                               " lacks name, total_ps, tf_self_ps or sources");
    for (const llvm::json::Value &source : *sources)
      if (std::optional<llvm::StringRef> text = source.getAsString())
        profile.by_source[*text].push_back(profile.dispatches.size());
    profile.dispatches.push_back({name->str(), *total, *tf});
  }
  return profile;
}

/// An inherent attribute of `op`: from its properties (registered, or an
/// unregistered op parsed with `<{...}>`), else its attribute dictionary.
Attribute Inherent(Operation *op, llvm::StringRef name) {
  if (auto properties =
          dyn_cast_or_null<DictionaryAttr>(op->getPropertiesAsAttribute()))
    if (Attribute attr = properties.get(name))
      return attr;
  return op->getAttr(name);
}

/// The integers of an integer, `array<i64: ...>` or dense integer attribute.
std::optional<llvm::SmallVector<int64_t>> Integers(Attribute attr) {
  if (auto integer = dyn_cast_or_null<IntegerAttr>(attr))
    return llvm::SmallVector<int64_t>{integer.getInt()};
  if (auto array = dyn_cast_or_null<DenseI64ArrayAttr>(attr))
    return llvm::SmallVector<int64_t>(array.asArrayRef());
  if (auto dense = dyn_cast_or_null<DenseIntElementsAttr>(attr))
    return llvm::to_vector(llvm::map_range(
        dense.getValues<APInt>(), [](APInt v) { return v.getSExtValue(); }));
  return std::nullopt;
}

/// True if `attr` is absent or every integer in it is `value`.
bool AllEqual(Attribute attr, int64_t value) {
  if (!attr)
    return true;
  std::optional<llvm::SmallVector<int64_t>> values = Integers(attr);
  return values && llvm::all_of(*values, [&](int64_t v) { return v == value; });
}

std::string Printed(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

std::string Shape(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto tensor = cast<RankedTensorType>(type);
  for (int64_t dim : tensor.getShape())
    os << dim << "x";
  os << tensor.getElementType();
  return text;
}

/// A 1x1 convolution the pass can write as (slice +) dot_general.
struct Geometry {
  RankedTensorType input, kernel, result;
  int64_t stride_h = 1, stride_w = 1;
};

/// The geometry of `op` if it is a 1x1 NHWC/HWIO convolution without
/// padding, dilation of its input, reversal or groups; else why not.
std::variant<Geometry, std::string> Match(Operation *op) {
  if (op->getNumOperands() != 2 || op->getNumResults() != 1)
    return std::string("not a two-operand convolution");
  auto input = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto kernel = dyn_cast<RankedTensorType>(op->getOperand(1).getType());
  auto result = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!input || !kernel || !result || !input.hasStaticShape() ||
      !kernel.hasStaticShape() || !result.hasStaticShape() ||
      input.getRank() != 4 || kernel.getRank() != 4)
    return std::string("not a static 2-D convolution");
  Attribute numbers = Inherent(op, "dimension_numbers");
  if (!numbers || Printed(numbers) != kNhwcHwio)
    return std::string("layout is not NHWC/HWIO");
  if (kernel.getDimSize(0) != 1 || kernel.getDimSize(1) != 1)
    return std::string("kernel is not 1x1");
  if (!AllEqual(Inherent(op, "feature_group_count"), 1) ||
      !AllEqual(Inherent(op, "batch_group_count"), 1))
    return std::string("grouped (depthwise) convolution");
  if (!AllEqual(Inherent(op, "padding"), 0))
    return std::string("padded");
  if (!AllEqual(Inherent(op, "lhs_dilation"), 1))
    return std::string("input dilation (a transposed convolution)");
  if (!AllEqual(Inherent(op, "window_reversal"), 0))
    return std::string("reversed window");
  Geometry geometry{input, kernel, result};
  if (Attribute strides = Inherent(op, "window_strides")) {
    std::optional<llvm::SmallVector<int64_t>> values = Integers(strides);
    if (!values || values->size() != 2 || (*values)[0] < 1 || (*values)[1] < 1)
      return std::string("unreadable window_strides");
    geometry.stride_h = (*values)[0];
    geometry.stride_w = (*values)[1];
  }
  auto kept = [](int64_t size, int64_t stride) {
    return (size + stride - 1) / stride;
  };
  llvm::SmallVector<int64_t> expected = {
      input.getDimSize(0), kept(input.getDimSize(1), geometry.stride_h),
      kept(input.getDimSize(2), geometry.stride_w), kernel.getDimSize(3)};
  if (result.getShape() != llvm::ArrayRef<int64_t>(expected) ||
      kernel.getDimSize(2) != input.getDimSize(3))
    return std::string("result shape does not follow from the operands");
  return geometry;
}

/// What the pass decided for one hot convolution.
struct Decision {
  Operation *op;
  std::string source;
  double share = 0;
  int64_t tf_ps = 0;     ///< TensorFlow's time for its dispatches' ops.
  int64_t target_ps = 0; ///< The compiled program's time in them.
  llvm::SmallVector<std::string> dispatches;
  std::optional<Geometry> geometry; ///< Set when it is rewritten.
  std::string reason;               ///< Why not, when it is not.

  double slowdown() const {
    return tf_ps > 0 ? double(target_ps) / double(tf_ps) : 0.0;
  }
};

/// See passes.td.
class ProfileGuidedConvToDotPass
    : public impl::ProfileGuidedConvToDotPassBase<ProfileGuidedConvToDotPass> {
public:
  using ProfileGuidedConvToDotPassBase::ProfileGuidedConvToDotPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (targetProfile.empty()) {
      module.emitError("tf-profile-guided-conv-to-dot needs target-profile: "
                       "the iree_profile.json of a --lower iree run");
      return signalPassFailure();
    }
    llvm::Expected<TargetProfile> target = ReadTargetProfile(targetProfile);
    if (!target) {
      module.emitError(llvm::toString(target.takeError()));
      return signalPassFailure();
    }
    Attribute contraction =
        parseAttribute(kChannelContraction, module.getContext());
    if (!contraction) {
      module.emitError(
          "cannot build StableHLO attributes: register the "
          "StableHLO dialect or pass --allow-unregistered-dialect");
      return signalPassFailure();
    }
    // Decide for every convolution first, then rewrite.
    std::vector<Decision> decisions;
    module.walk([&](Operation *op) {
      if (op->getName().getStringRef() != kConvolution)
        return;
      std::optional<Decision> decision = Decide(op, *target);
      if (decision)
        decisions.push_back(std::move(*decision));
    });
    if (remarks)
      for (const Decision &decision : decisions)
        Remark(decision);
    if (!reportOutput.empty() &&
        failed(WriteDocument(
            reportOutput, "tfpgo.rewrites document", module.getLoc(),
            [&](llvm::raw_ostream &os) { WriteReport(os, decisions); })))
      return signalPassFailure();
    for (const Decision &decision : decisions)
      if (decision.geometry)
        Rewrite(decision, contraction);
  }

private:
  /// The decision for `op`, or none when it is cold (counted only).
  std::optional<Decision> Decide(Operation *op, const TargetProfile &target) {
    std::optional<ProfilerData> data = GetProfilerData(op);
    if (!data || data->IsFused() || data->share < minShare) {
      ++numCold;
      return std::nullopt;
    }
    Decision decision{op, data->source, data->share};
    llvm::SetVector<size_t> ran;
    for (llvm::StringRef name : llvm::concat<const std::string>(
             llvm::ArrayRef(data->source), data->fused_sources))
      if (auto found = target.by_source.find(name);
          found != target.by_source.end())
        ran.insert(found->second.begin(), found->second.end());
    for (size_t index : ran) {
      const Dispatch &dispatch = target.dispatches[index];
      decision.dispatches.push_back(dispatch.name);
      decision.target_ps += dispatch.total_ps;
      decision.tf_ps += dispatch.tf_self_ps;
    }
    if (ran.empty()) {
      // IREE runs identical executables as one, named after the first op.
      decision.reason = "no dispatch of the target profile names its source";
    } else if (decision.tf_ps == 0) {
      decision.reason = "its dispatches ran no op TensorFlow timed";
    } else if (decision.slowdown() < minSlowdown) {
      decision.reason = "within min-slowdown of TensorFlow's time";
      ++numNearBound;
    } else {
      std::variant<Geometry, std::string> match = Match(op);
      if (auto *geometry = std::get_if<Geometry>(&match)) {
        decision.geometry = *geometry;
        return decision;
      }
      decision.reason = std::get<std::string>(match);
      ++numUnmatched;
    }
    return decision;
  }

  /// Replaces the convolution by (slice +) reshape + dot_general.
  void Rewrite(const Decision &decision, Attribute contraction) {
    Operation *conv = decision.op;
    const Geometry &g = *decision.geometry;
    OpBuilder builder(conv);
    Location loc = conv->getLoc();
    Value input = conv->getOperand(0);
    if (g.stride_h > 1 || g.stride_w > 1) {
      auto kept =
          RankedTensorType::get({g.result.getDimSize(0), g.result.getDimSize(1),
                                 g.result.getDimSize(2), g.input.getDimSize(3)},
                                g.input.getElementType());
      OperationState slice(loc, "stablehlo.slice");
      slice.addOperands(input);
      slice.addTypes(kept);
      slice.propertiesAttr = builder.getDictionaryAttr({
          builder.getNamedAttr("limit_indices", builder.getDenseI64ArrayAttr(
                                                    g.input.getShape())),
          builder.getNamedAttr("start_indices",
                               builder.getDenseI64ArrayAttr({0, 0, 0, 0})),
          builder.getNamedAttr("strides", builder.getDenseI64ArrayAttr(
                                              {1, g.stride_h, g.stride_w, 1})),
      });
      input = builder.create(slice)->getResult(0);
    }
    OperationState reshape(loc, "stablehlo.reshape");
    reshape.addOperands(conv->getOperand(1));
    reshape.addTypes(
        RankedTensorType::get({g.kernel.getDimSize(2), g.kernel.getDimSize(3)},
                              g.kernel.getElementType()));
    Value matrix = builder.create(reshape)->getResult(0);
    OperationState dot(loc, "stablehlo.dot_general");
    dot.addOperands({input, matrix});
    dot.addTypes(g.result);
    llvm::SmallVector<NamedAttribute> properties = {
        builder.getNamedAttr("dot_dimension_numbers", contraction)};
    if (Attribute precision = Inherent(conv, "precision_config"))
      properties.push_back(builder.getNamedAttr("precision_config", precision));
    dot.propertiesAttr = builder.getDictionaryAttr(properties);
    // The measurements stay with the op that now does the work.
    for (llvm::StringRef name : {kProfilerDataAttrName, kProfilerHotAttrName})
      if (Attribute attr = conv->getAttr(name))
        dot.addAttribute(name, attr);
    Operation *product = builder.create(dot);
    conv->getResult(0).replaceAllUsesWith(product->getResult(0));
    conv->erase();
    ++numRewritten;
  }

  void Remark(const Decision &decision) {
    InFlightDiagnostic remark = decision.op->emitRemark();
    std::string figures;
    llvm::raw_string_ostream os(figures);
    os << ": share " << llvm::format("%.2f%%", decision.share * 100);
    if (decision.tf_ps > 0)
      os << ", compiled/TensorFlow "
         << llvm::format("%.1fx", decision.slowdown());
    remark << (decision.geometry ? "rewrote " : "kept ") << decision.source
           << figures;
    if (decision.geometry)
      remark << ", now (slice +) dot_general";
    else
      remark << ": " << decision.reason;
  }

  void WriteReport(llvm::raw_ostream &os,
                   const std::vector<Decision> &decisions) const {
    llvm::json::OStream json(os, /*IndentSize=*/1);
    auto write = [&](const Decision &d) {
      json.object([&] {
        json.attribute("source", d.source);
        json.attribute("share", RoundShare(d.share));
        json.attribute("tf_ps", d.tf_ps);
        json.attribute("target_ps", d.target_ps);
        if (d.tf_ps > 0)
          json.attribute("slowdown", d.slowdown());
        json.attributeArray("dispatches", [&] {
          for (const std::string &name : d.dispatches)
            json.value(name);
        });
        if (!d.geometry) {
          json.attribute("reason", d.reason);
          return;
        }
        json.attribute("form",
                       d.geometry->stride_h > 1 || d.geometry->stride_w > 1
                           ? "slice + dot_general"
                           : "dot_general");
        json.attribute("input", Shape(d.geometry->input));
        json.attribute("kernel", Shape(d.geometry->kernel));
        json.attributeArray("strides", [&] {
          json.value(d.geometry->stride_h);
          json.value(d.geometry->stride_w);
        });
      });
    };
    json.object([&] {
      json.attribute("format", "tfpgo.rewrites");
      json.attribute("version", 1);
      json.attribute("time_unit", "ps");
      json.attribute("pass", getArgument());
      json.attribute("target_profile", targetProfile);
      json.attribute("min_share", minShare.getValue());
      json.attribute("min_slowdown", minSlowdown.getValue());
      json.attributeArray("rewritten", [&] {
        for (const Decision &d : decisions)
          if (d.geometry)
            write(d);
      });
      json.attributeArray("declined", [&] {
        for (const Decision &d : decisions)
          if (!d.geometry)
            write(d);
      });
    });
    os << "\n";
  }
};

} // namespace
} // namespace TF
} // namespace mlir
