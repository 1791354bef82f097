//===- conv_to_dot.cc - Hot, slow convolutions as dot_generals ------------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Implements `tf-profile-guided-conv-to-dot` (passes.td): the first pass that
// transforms from the annotations. It decides from two measurements, the
// TensorFlow profile on each op (`profiler_data`) and the compiled program's
// dispatch profile (`iree_profile.json`), and rewrites only the convolutions
// that are both hot and far slower compiled than under TensorFlow: 1x1 ones
// as one (slice +) dot_general, with `kernels=kxk` the others as a sum of
// one dot_general per kernel tap over a shifted slice of the padded input,
// and with `kernels=tiles` those whose windows tile the input (a patch
// embedding, its filter gradient) as one reshape + dot_general.
//
// The ops are matched by name and read through their properties, so the pass
// works on StableHLO parsed as unregistered ops (tfpgo-opt, which has no
// StableHLO dialect) and on the registered dialect (a TensorFlow tf-opt)
// alike.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <array>
#include <cmath>
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
  int64_t count = 0;      ///< Its invocations over the profiled runs.
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
    std::optional<int64_t> count =
        entry ? entry->getInteger("count") : std::nullopt;
    const llvm::json::Array *sources =
        entry ? entry->getArray("sources") : nullptr;
    std::optional<llvm::StringRef> name =
        entry ? entry->getString("name") : std::nullopt;
    if (!name || !total || !tf || !sources || !count || *count < 1)
      return Invalid(path,
                     "dispatch " + llvm::Twine(profile.dispatches.size()) +
                         " lacks name, count, total_ps, tf_self_ps or sources");
    for (const llvm::json::Value &source : *sources)
      if (std::optional<llvm::StringRef> text = source.getAsString())
        profile.by_source[*text].push_back(profile.dispatches.size());
    profile.dispatches.push_back({name->str(), *count, *total, *tf});
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

/// The integers of an integer, `array<i64: ...>`, `array<i1: ...>` (a
/// convolution's window_reversal) or dense integer attribute.
std::optional<llvm::SmallVector<int64_t>> Integers(Attribute attr) {
  if (auto integer = dyn_cast_or_null<IntegerAttr>(attr))
    return llvm::SmallVector<int64_t>{integer.getInt()};
  if (auto array = dyn_cast_or_null<DenseI64ArrayAttr>(attr))
    return llvm::SmallVector<int64_t>(array.asArrayRef());
  if (auto flags = dyn_cast_or_null<DenseBoolArrayAttr>(attr))
    return llvm::to_vector(llvm::map_range(
        flags.asArrayRef(), [](bool flag) { return int64_t(flag); }));
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

/// How the window of a convolution that tiles its input reads one spatial
/// dimension of size O*K (O outputs, K taps): input position K*o + k (a
/// patch: stride K), or o + O*k (the taps O apart: kernel dilation O, as a
/// patch embedding's filter gradient has).
enum class Tiling { kPatch, kDilated };

/// The dimension labels of a 2-D convolution's input, kernel and output
/// (`b`, `f`, `i`, `o`, `0`, `1`), in the order of their dimensions.
using Layouts = std::array<std::string, 3>;

/// A convolution the pass can write as dot_generals: 1x1, with
/// `kernels=kxk` any other window, with `kernels=tiles` one whose windows
/// tile the input (then `tiling` is set, and `layouts`, any layout).
struct Geometry {
  RankedTensorType input, kernel, result;
  int64_t stride_h = 1, stride_w = 1;
  /// Zero padding of the rows and columns: low and high of each.
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  std::optional<std::array<Tiling, 2>> tiling;
  Layouts layouts;

  bool IsUnit() const {
    return kernel.getDimSize(0) == 1 && kernel.getDimSize(1) == 1;
  }
  int64_t Taps() const { return kernel.getDimSize(0) * kernel.getDimSize(1); }
  bool IsPadded() const {
    return pad_top || pad_bottom || pad_left || pad_right;
  }
  bool IsStrided() const { return stride_h > 1 || stride_w > 1; }
  /// The permutation from the tiled rewrite's dot_general result (the
  /// input's batch and spatial dims in its order, then the kernel's output
  /// features) to the output layout; empty when they agree.
  llvm::SmallVector<int64_t> OutputPermutation() const {
    std::string produced;
    for (char label : layouts[0])
      if (label != 'f')
        produced.push_back(label);
    produced.push_back('f');
    llvm::SmallVector<int64_t> permutation;
    for (char label : layouts[2])
      permutation.push_back(produced.find(label));
    if (llvm::equal(permutation, llvm::seq<int64_t>(0, 4)))
      permutation.clear();
    return permutation;
  }
  std::string Form() const {
    if (tiling)
      return std::string("reshape + dot_general") +
             (OutputPermutation().empty() ? "" : " + transpose");
    if (IsUnit())
      return IsStrided() ? "slice + dot_general" : "dot_general";
    return (IsPadded() ? "pad + " : "") + std::to_string(Taps()) +
           " shifted slices + dot_generals, summed";
  }
};

/// Which kernels a run of the pass rewrites (its `kernels` option).
enum class Kernels { kUnit, kSpatial, kTiles };

/// The labels of `numbers` (`#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b,
/// 0, 1, f]>`), or none when it is not a 2-D convolution's.
std::optional<Layouts> ReadLayouts(llvm::StringRef numbers) {
  Layouts layouts;
  size_t at = 0;
  for (std::string &layout : layouts) {
    size_t open = numbers.find('[', at);
    size_t close = numbers.find(']', open);
    if (open == llvm::StringRef::npos || close == llvm::StringRef::npos)
      return std::nullopt;
    for (char c : numbers.slice(open + 1, close))
      if (c != ',' && c != ' ')
        layout.push_back(c);
    at = close + 1;
  }
  auto has = [](std::string layout, llvm::StringRef labels) {
    std::sort(layout.begin(), layout.end());
    return layout == labels;
  };
  if (!has(layouts[0], "01bf") || !has(layouts[1], "01io") ||
      !has(layouts[2], "01bf"))
    return std::nullopt;
  return layouts;
}

/// How a window of `taps` taps, `stride` and `dilation` apart, producing
/// `outputs` positions, tiles an input dimension of `size`: each position
/// read by exactly one tap of one output; none when it does not.
std::optional<Tiling> Tiles(int64_t size, int64_t taps, int64_t outputs,
                            int64_t stride, int64_t dilation) {
  if (size != taps * outputs)
    return std::nullopt;
  if ((dilation == 1 || taps == 1) && (stride == taps || outputs == 1))
    return Tiling::kPatch;
  if ((stride == 1 || outputs == 1) && (dilation == outputs || taps == 1))
    return Tiling::kDilated;
  return std::nullopt;
}

/// The geometry of `op` if its windows tile its input (any layout, no
/// padding, input dilation, reversal or groups), else why not.
std::variant<Geometry, std::string> MatchTiles(Operation *op) {
  auto input = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto kernel = dyn_cast<RankedTensorType>(op->getOperand(1).getType());
  auto result = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  Attribute numbers = Inherent(op, "dimension_numbers");
  std::optional<Layouts> layouts =
      numbers ? ReadLayouts(Printed(numbers)) : std::nullopt;
  if (!layouts)
    return std::string("unreadable dimension numbers");
  if (!AllEqual(Inherent(op, "feature_group_count"), 1) ||
      !AllEqual(Inherent(op, "batch_group_count"), 1))
    return std::string("grouped (depthwise) convolution");
  if (!AllEqual(Inherent(op, "lhs_dilation"), 1))
    return std::string("input dilation (a transposed convolution)");
  if (!AllEqual(Inherent(op, "window_reversal"), 0))
    return std::string("reversed window");
  if (Attribute padding = Inherent(op, "padding");
      padding && !AllEqual(padding, 0))
    return std::string("padded");
  auto pair =
      [&](llvm::StringRef name) -> std::optional<std::array<int64_t, 2>> {
    Attribute attr = Inherent(op, name);
    if (!attr)
      return std::array<int64_t, 2>{1, 1};
    std::optional<llvm::SmallVector<int64_t>> values = Integers(attr);
    if (!values || values->size() != 2 || (*values)[0] < 1 || (*values)[1] < 1)
      return std::nullopt;
    return std::array<int64_t, 2>{(*values)[0], (*values)[1]};
  };
  std::optional<std::array<int64_t, 2>> strides = pair("window_strides");
  std::optional<std::array<int64_t, 2>> dilations = pair("rhs_dilation");
  if (!strides || !dilations)
    return std::string("unreadable window_strides or rhs_dilation");
  auto dim = [&](RankedTensorType type, size_t side, char label) {
    return type.getDimSize((*layouts)[side].find(label));
  };
  if (dim(input, 0, 'f') != dim(kernel, 1, 'i') ||
      dim(input, 0, 'b') != dim(result, 2, 'b') ||
      dim(kernel, 1, 'o') != dim(result, 2, 'f'))
    return std::string("result shape does not follow from the operands");
  Geometry geometry{input, kernel, result, (*strides)[0], (*strides)[1]};
  geometry.dilation_h = (*dilations)[0];
  geometry.dilation_w = (*dilations)[1];
  geometry.layouts = *layouts;
  std::array<Tiling, 2> tiling;
  for (int spatial = 0; spatial < 2; ++spatial) {
    char label = '0' + spatial;
    std::optional<Tiling> tiles = Tiles(
        dim(input, 0, label), dim(kernel, 1, label), dim(result, 2, label),
        (*strides)[spatial], (*dilations)[spatial]);
    if (!tiles)
      return std::string("windows overlap or leave input out");
    tiling[spatial] = *tiles;
  }
  if (dim(kernel, 1, '0') == 1 && dim(kernel, 1, '1') == 1)
    return std::string("kernel is 1x1 (kernels=1x1 rewrites it)");
  geometry.tiling = tiling;
  return geometry;
}

/// The geometry of `op` if it is an NHWC/HWIO convolution of the `kernels`
/// kind without dilation, reversal or groups (1x1 ones also unpadded); else
/// why not.
std::variant<Geometry, std::string> Match(Operation *op, Kernels kernels) {
  if (op->getNumOperands() != 2 || op->getNumResults() != 1)
    return std::string("not a two-operand convolution");
  auto input = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto kernel = dyn_cast<RankedTensorType>(op->getOperand(1).getType());
  auto result = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!input || !kernel || !result || !input.hasStaticShape() ||
      !kernel.hasStaticShape() || !result.hasStaticShape() ||
      input.getRank() != 4 || kernel.getRank() != 4)
    return std::string("not a static 2-D convolution");
  if (kernels == Kernels::kTiles)
    return MatchTiles(op);
  Attribute numbers = Inherent(op, "dimension_numbers");
  if (!numbers || Printed(numbers) != kNhwcHwio)
    return std::string("layout is not NHWC/HWIO");
  bool unit = kernel.getDimSize(0) == 1 && kernel.getDimSize(1) == 1;
  if (kernels == Kernels::kUnit && !unit)
    return std::string("kernel is not 1x1 (kernels=kxk rewrites it)");
  if (kernels == Kernels::kSpatial && unit)
    return std::string("kernel is 1x1 (kernels=1x1 rewrites it)");
  if (kernels == Kernels::kSpatial &&
      std::holds_alternative<Geometry>(MatchTiles(op)))
    return std::string("windows tile the input (kernels=tiles rewrites it)");
  if (!AllEqual(Inherent(op, "feature_group_count"), 1) ||
      !AllEqual(Inherent(op, "batch_group_count"), 1))
    return std::string("grouped (depthwise) convolution");
  if (!AllEqual(Inherent(op, "lhs_dilation"), 1))
    return std::string("input dilation (a transposed convolution)");
  if (!unit && !AllEqual(Inherent(op, "rhs_dilation"), 1))
    return std::string("dilated kernel");
  if (!AllEqual(Inherent(op, "window_reversal"), 0))
    return std::string("reversed window");
  Geometry geometry{input, kernel, result};
  if (Attribute padding = Inherent(op, "padding")) {
    std::optional<llvm::SmallVector<int64_t>> values = Integers(padding);
    if (!values || values->size() != 4 ||
        llvm::any_of(*values, [](int64_t v) { return v < 0; }))
      return std::string("unreadable or negative padding");
    geometry.pad_top = (*values)[0];
    geometry.pad_bottom = (*values)[1];
    geometry.pad_left = (*values)[2];
    geometry.pad_right = (*values)[3];
  }
  if (unit && geometry.IsPadded())
    return std::string("padded");
  if (Attribute strides = Inherent(op, "window_strides")) {
    std::optional<llvm::SmallVector<int64_t>> values = Integers(strides);
    if (!values || values->size() != 2 || (*values)[0] < 1 || (*values)[1] < 1)
      return std::string("unreadable window_strides");
    geometry.stride_h = (*values)[0];
    geometry.stride_w = (*values)[1];
  }
  // The positions a window of `window` taps starts at, `stride` apart.
  auto kept = [](int64_t padded, int64_t window, int64_t stride) {
    return padded < window ? 0 : (padded - window) / stride + 1;
  };
  llvm::SmallVector<int64_t> expected = {
      input.getDimSize(0),
      kept(input.getDimSize(1) + geometry.pad_top + geometry.pad_bottom,
           kernel.getDimSize(0), geometry.stride_h),
      kept(input.getDimSize(2) + geometry.pad_left + geometry.pad_right,
           kernel.getDimSize(1), geometry.stride_w),
      kernel.getDimSize(3)};
  if (result.getShape() != llvm::ArrayRef<int64_t>(expected) ||
      kernel.getDimSize(2) != input.getDimSize(3))
    return std::string("result shape does not follow from the operands");
  return geometry;
}

/// The dispatches of the target profile whose sources name the source of
/// `data` or one of its fused sources.
llvm::SetVector<size_t> NamedDispatches(const ProfilerData &data,
                                        const TargetProfile &target) {
  llvm::SetVector<size_t> ran;
  for (llvm::StringRef name : llvm::concat<const std::string>(
           llvm::ArrayRef(data.source), data.fused_sources))
    if (auto found = target.by_source.find(name);
        found != target.by_source.end())
      ran.insert(found->second.begin(), found->second.end());
  return ran;
}

/// What makes two convolutions one executable to IREE: their operand and
/// result types and their attributes, the profile's aside.
std::string DispatchForm(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (Type type : op->getOperandTypes())
    os << type << ",";
  for (Type type : op->getResultTypes())
    os << type << ",";
  if (Attribute properties = op->getPropertiesAsAttribute())
    os << properties;
  for (NamedAttribute attr : op->getAttrs())
    if (attr.getName() != kProfilerDataAttrName &&
        attr.getName() != kProfilerHotAttrName)
      os << attr.getName() << "=" << attr.getValue() << ",";
  return text;
}

/// A convolution a dispatch names, whose dispatches stand for the
/// convolutions of the same form no dispatch names: IREE runs identical
/// dispatches as one executable named after the first site.
struct Twin {
  std::string source;
  llvm::SetVector<size_t> dispatches;
};

/// What the pass decided for one hot convolution.
struct Decision {
  Operation *op;
  std::string source;
  double share = 0;
  int64_t tf_ps = 0;     ///< TensorFlow's time for its dispatches' ops.
  int64_t target_ps = 0; ///< The compiled program's time in them.
  /// One execution of the op under TensorFlow, and the time of one
  /// invocation of each dispatch that ran it, summed: what `slowdown`
  /// compares. Per execution, because IREE runs identical convolutions
  /// (ResNet's blocks of a stage) as one executable whose sources name
  /// only the first site, and TensorFlow's time of a dispatch's ops also
  /// holds the producers it fused only part of.
  double tf_execution_ps = 0;
  double target_invocation_ps = 0;
  llvm::SmallVector<std::string> dispatches;
  /// Set when its dispatches are those of a convolution of the same form.
  std::string twin;
  std::optional<Geometry> geometry; ///< Set when it is rewritten.
  std::string reason;               ///< Why not, when it is not.

  bool Compared() const { return !dispatches.empty() && tf_execution_ps > 0; }
  double slowdown() const {
    return tf_execution_ps > 0 ? target_invocation_ps / tf_execution_ps : 0.0;
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
    if (kernels != "1x1" && kernels != "kxk" && kernels != "tiles") {
      module.emitError("tf-profile-guided-conv-to-dot: kernels='")
          << kernels.getValue()
          << "' is none of 1x1, kxk, tiles; pass kernels=1x1 (the default), "
             "kernels=kxk or kernels=tiles";
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
    llvm::SmallVector<Operation *> convolutions;
    module.walk([&](Operation *op) {
      if (op->getName().getStringRef() == kConvolution)
        convolutions.push_back(op);
    });
    llvm::StringMap<Twin> twins;
    for (Operation *op : convolutions)
      if (std::optional<ProfilerData> data = GetProfilerData(op);
          data && !data->IsFused())
        if (llvm::SetVector<size_t> ran = NamedDispatches(*data, *target);
            !ran.empty())
          twins.try_emplace(DispatchForm(op),
                            Twin{data->source, std::move(ran)});
    // Decide for every convolution first, then rewrite.
    std::vector<Decision> decisions;
    for (Operation *op : convolutions) {
      std::optional<Decision> decision = Decide(op, *target, twins);
      if (decision)
        decisions.push_back(std::move(*decision));
    }
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
  std::optional<Decision> Decide(Operation *op, const TargetProfile &target,
                                 const llvm::StringMap<Twin> &twins) {
    std::optional<ProfilerData> data = GetProfilerData(op);
    if (!data || data->IsFused() || data->share < minShare) {
      ++numCold;
      return std::nullopt;
    }
    Decision decision{op, data->source, data->share};
    // Below tf an op may hold part of its source's time: compare the whole.
    int64_t tf_self = data->source_self > 0 ? data->source_self : data->self;
    if (data->count > 0)
      decision.tf_execution_ps = double(tf_self) / double(data->count);
    llvm::SetVector<size_t> ran = NamedDispatches(*data, target);
    if (ran.empty())
      if (auto twin = twins.find(DispatchForm(op)); twin != twins.end()) {
        ran = twin->second.dispatches;
        decision.twin = twin->second.source;
      }
    for (size_t index : ran) {
      const Dispatch &dispatch = target.dispatches[index];
      decision.dispatches.push_back(dispatch.name);
      decision.target_ps += dispatch.total_ps;
      decision.tf_ps += dispatch.tf_self_ps;
      decision.target_invocation_ps +=
          double(dispatch.total_ps) / double(dispatch.count);
    }
    if (ran.empty()) {
      decision.reason = "no dispatch of the target profile names its source, "
                        "nor that of a convolution of the same form";
    } else if (decision.tf_execution_ps == 0) {
      decision.reason = "TensorFlow timed no execution of it";
    } else if (decision.slowdown() < minSlowdown) {
      decision.reason = "within min-slowdown of TensorFlow's time";
      ++numNearBound;
    } else {
      Kernels kind = kernels == "kxk"     ? Kernels::kSpatial
                     : kernels == "tiles" ? Kernels::kTiles
                                          : Kernels::kUnit;
      std::variant<Geometry, std::string> match = Match(op, kind);
      auto *geometry = std::get_if<Geometry>(&match);
      if (!geometry) {
        decision.reason = std::get<std::string>(match);
        ++numUnmatched;
      } else if (!sources.empty() &&
                 !llvm::is_contained(sources, data->source)) {
        decision.reason = "not among sources=";
        ++numUnlisted;
      } else {
        decision.geometry = *geometry;
      }
    }
    return decision;
  }

  /// Replaces the convolution by dot_generals: one (1x1), or one per tap of
  /// the window summed. The new ops keep its location, so its profile
  /// travels on; the op that yields its result takes its annotations.
  void Rewrite(const Decision &decision, Attribute contraction) {
    Operation *conv = decision.op;
    const Geometry &g = *decision.geometry;
    OpBuilder builder(conv);
    Operation *product = g.tiling ? RewriteTiles(builder, conv, g)
                         : g.IsUnit()
                             ? RewriteUnit(builder, conv, g, contraction)
                             : RewriteSpatial(builder, conv, g, contraction);
    for (llvm::StringRef name : {kProfilerDataAttrName, kProfilerHotAttrName})
      if (Attribute attr = conv->getAttr(name))
        product->setAttr(name, attr);
    conv->getResult(0).replaceAllUsesWith(product->getResult(0));
    conv->erase();
    ++numRewritten;
  }

  static Value Slice(OpBuilder &builder, Location loc, Value input,
                     RankedTensorType type, llvm::ArrayRef<int64_t> start,
                     llvm::ArrayRef<int64_t> limit,
                     llvm::ArrayRef<int64_t> strides) {
    OperationState slice(loc, "stablehlo.slice");
    slice.addOperands(input);
    slice.addTypes(type);
    slice.propertiesAttr = builder.getDictionaryAttr({
        builder.getNamedAttr("limit_indices",
                             builder.getDenseI64ArrayAttr(limit)),
        builder.getNamedAttr("start_indices",
                             builder.getDenseI64ArrayAttr(start)),
        builder.getNamedAttr("strides", builder.getDenseI64ArrayAttr(strides)),
    });
    return builder.create(slice)->getResult(0);
  }

  static Value Reshape(OpBuilder &builder, Location loc, Value input,
                       RankedTensorType type) {
    OperationState reshape(loc, "stablehlo.reshape");
    reshape.addOperands(input);
    reshape.addTypes(type);
    return builder.create(reshape)->getResult(0);
  }

  /// `input` (NHWC) contracted over its channels with the CxK `matrix`.
  static Operation *Dot(OpBuilder &builder, Operation *conv, Value input,
                        Value matrix, RankedTensorType result,
                        Attribute contraction) {
    OperationState dot(conv->getLoc(), "stablehlo.dot_general");
    dot.addOperands({input, matrix});
    dot.addTypes(result);
    llvm::SmallVector<NamedAttribute> properties = {
        builder.getNamedAttr("dot_dimension_numbers", contraction)};
    if (Attribute precision = Inherent(conv, "precision_config"))
      properties.push_back(builder.getNamedAttr("precision_config", precision));
    dot.propertiesAttr = builder.getDictionaryAttr(properties);
    return builder.create(dot);
  }

  /// A 1x1 convolution: (slice of the kept pixels +) one dot_general.
  static Operation *RewriteUnit(OpBuilder &builder, Operation *conv,
                                const Geometry &g, Attribute contraction) {
    Location loc = conv->getLoc();
    Value input = conv->getOperand(0);
    if (g.IsStrided())
      input = Slice(
          builder, loc, input,
          RankedTensorType::get({g.result.getDimSize(0), g.result.getDimSize(1),
                                 g.result.getDimSize(2), g.input.getDimSize(3)},
                                g.input.getElementType()),
          {0, 0, 0, 0}, g.input.getShape(), {1, g.stride_h, g.stride_w, 1});
    Value matrix = Reshape(
        builder, loc, conv->getOperand(1),
        RankedTensorType::get({g.kernel.getDimSize(2), g.kernel.getDimSize(3)},
                              g.kernel.getElementType()));
    return Dot(builder, conv, input, matrix, g.result, contraction);
  }

  /// A convolution whose windows tile its input: the input reshaped so that
  /// each spatial dimension is two, outputs and taps (in the order the
  /// tiling reads them), then one dot_general contracting its channels and
  /// both tap dimensions with the kernel's, and a transpose into the output
  /// layout where the product's order (the input's batch and spatial dims,
  /// then the kernel's output features) is not it.
  static Operation *RewriteTiles(OpBuilder &builder, Operation *conv,
                                 const Geometry &g) {
    Location loc = conv->getLoc();
    const std::string &in = g.layouts[0], &weights = g.layouts[1];
    llvm::SmallVector<int64_t> shape;
    llvm::SmallVector<int64_t> lhs_contracting(3), rhs_contracting(3);
    llvm::SmallVector<int64_t> product_shape;
    for (char label : in) {
      int64_t size = g.input.getDimSize(in.find(label));
      if (label == 'b') {
        product_shape.push_back(size);
        shape.push_back(size);
        continue;
      }
      if (label == 'f') {
        lhs_contracting[0] = shape.size();
        shape.push_back(size);
        continue;
      }
      int spatial = label - '0';
      int64_t taps = g.kernel.getDimSize(weights.find(label));
      int64_t outputs = size / taps;
      product_shape.push_back(outputs);
      bool patch = (*g.tiling)[spatial] == Tiling::kPatch;
      if (patch)
        shape.push_back(outputs);
      lhs_contracting[1 + spatial] = shape.size();
      shape.push_back(taps);
      if (!patch)
        shape.push_back(outputs);
    }
    rhs_contracting = {int64_t(weights.find('i')), int64_t(weights.find('0')),
                       int64_t(weights.find('1'))};
    product_shape.push_back(g.kernel.getDimSize(weights.find('o')));
    Value input =
        Reshape(builder, loc, conv->getOperand(0),
                RankedTensorType::get(shape, g.input.getElementType()));
    std::string numbers;
    llvm::raw_string_ostream os(numbers);
    os << "#stablehlo.dot<lhs_contracting_dimensions = [";
    llvm::interleaveComma(lhs_contracting, os);
    os << "], rhs_contracting_dimensions = [";
    llvm::interleaveComma(rhs_contracting, os);
    os << "]>";
    Attribute contraction = parseAttribute(numbers, conv->getContext());
    llvm::SmallVector<int64_t> permutation = g.OutputPermutation();
    auto product_type =
        permutation.empty()
            ? g.result
            : RankedTensorType::get(product_shape, g.result.getElementType());
    Operation *product = Dot(builder, conv, input, conv->getOperand(1),
                             product_type, contraction);
    if (permutation.empty())
      return product;
    OperationState transpose(loc, "stablehlo.transpose");
    transpose.addOperands(product->getResult(0));
    transpose.addTypes(g.result);
    transpose.propertiesAttr = builder.getDictionaryAttr({builder.getNamedAttr(
        "permutation", builder.getDenseI64ArrayAttr(permutation))});
    return builder.create(transpose);
  }

  /// A KhxKw convolution as the sum over its taps (i, j) of the 1x1
  /// convolution of kernel row (i, j) with the input shifted by (i, j):
  /// zero padding, then per tap a strided slice of the padded input, the
  /// tap's CxK matrix and a dot_general, added up in tap order. Where IREE
  /// compiles a deep convolution with few pixels as a slow direct
  /// convolution, each tap is a matmul it compiles well.
  static Operation *RewriteSpatial(OpBuilder &builder, Operation *conv,
                                   const Geometry &g, Attribute contraction) {
    Location loc = conv->getLoc();
    Type element = g.input.getElementType();
    Value input = conv->getOperand(0);
    int64_t batch = g.input.getDimSize(0), rows = g.result.getDimSize(1),
            columns = g.result.getDimSize(2), channels = g.input.getDimSize(3),
            features = g.kernel.getDimSize(3);
    if (g.IsPadded()) {
      auto scalar = RankedTensorType::get({}, element);
      OperationState zero(loc, "stablehlo.constant");
      zero.addTypes(scalar);
      zero.propertiesAttr = builder.getDictionaryAttr({builder.getNamedAttr(
          "value",
          DenseElementsAttr::get(scalar, builder.getZeroAttr(element)))});
      Value padding = builder.create(zero)->getResult(0);
      OperationState pad(loc, "stablehlo.pad");
      pad.addOperands({input, padding});
      pad.addTypes(RankedTensorType::get(
          {batch, g.input.getDimSize(1) + g.pad_top + g.pad_bottom,
           g.input.getDimSize(2) + g.pad_left + g.pad_right, channels},
          element));
      pad.propertiesAttr = builder.getDictionaryAttr({
          builder.getNamedAttr(
              "edge_padding_high",
              builder.getDenseI64ArrayAttr({0, g.pad_bottom, g.pad_right, 0})),
          builder.getNamedAttr(
              "edge_padding_low",
              builder.getDenseI64ArrayAttr({0, g.pad_top, g.pad_left, 0})),
          builder.getNamedAttr("interior_padding",
                               builder.getDenseI64ArrayAttr({0, 0, 0, 0})),
      });
      input = builder.create(pad)->getResult(0);
    }
    auto shifted =
        RankedTensorType::get({batch, rows, columns, channels}, element);
    auto tap = RankedTensorType::get({1, 1, channels, features},
                                     g.kernel.getElementType());
    auto matrix =
        RankedTensorType::get({channels, features}, g.kernel.getElementType());
    Operation *sum = nullptr;
    for (int64_t i = 0; i < g.kernel.getDimSize(0); ++i) {
      for (int64_t j = 0; j < g.kernel.getDimSize(1); ++j) {
        Value window = Slice(builder, loc, input, shifted, {0, i, j, 0},
                             {batch, i + g.stride_h * (rows - 1) + 1,
                              j + g.stride_w * (columns - 1) + 1, channels},
                             {1, g.stride_h, g.stride_w, 1});
        Value weights =
            Slice(builder, loc, conv->getOperand(1), tap, {i, j, 0, 0},
                  {i + 1, j + 1, channels, features}, {1, 1, 1, 1});
        Operation *product =
            Dot(builder, conv, window, Reshape(builder, loc, weights, matrix),
                g.result, contraction);
        if (!sum) {
          sum = product;
          continue;
        }
        OperationState add(loc, "stablehlo.add");
        add.addOperands({sum->getResult(0), product->getResult(0)});
        add.addTypes(g.result);
        sum = builder.create(add);
      }
    }
    return sum;
  }

  void Remark(const Decision &decision) {
    InFlightDiagnostic remark = decision.op->emitRemark();
    std::string figures;
    llvm::raw_string_ostream os(figures);
    os << ": share " << llvm::format("%.2f%%", decision.share * 100);
    if (decision.Compared())
      os << ", compiled/TensorFlow "
         << llvm::format("%.1fx", decision.slowdown());
    if (!decision.twin.empty())
      os << " (in the dispatches of " << decision.twin << ", same form)";
    remark << (decision.geometry ? "rewrote " : "kept ") << decision.source
           << figures;
    if (decision.geometry)
      remark << ", now " << decision.geometry->Form();
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
        if (d.Compared()) {
          json.attribute("tf_execution_ps", d.tf_execution_ps);
          json.attribute("target_invocation_ps", d.target_invocation_ps);
          json.attribute("slowdown", d.slowdown());
        }
        json.attributeArray("dispatches", [&] {
          for (const std::string &name : d.dispatches)
            json.value(name);
        });
        if (!d.twin.empty())
          json.attribute("twin", d.twin);
        if (!d.geometry) {
          json.attribute("reason", d.reason);
          return;
        }
        json.attribute("form", d.geometry->Form());
        json.attribute("input", Shape(d.geometry->input));
        json.attribute("kernel", Shape(d.geometry->kernel));
        json.attribute("result", Shape(d.geometry->result));
        json.attributeArray("strides", [&] {
          json.value(d.geometry->stride_h);
          json.value(d.geometry->stride_w);
        });
        json.attributeArray("padding", [&] {
          for (int64_t pad : {d.geometry->pad_top, d.geometry->pad_bottom,
                              d.geometry->pad_left, d.geometry->pad_right})
            json.value(pad);
        });
        if (d.geometry->tiling)
          json.attributeArray("kernel_dilation", [&] {
            json.value(d.geometry->dilation_h);
            json.value(d.geometry->dilation_w);
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
      json.attribute("kernels", kernels.getValue());
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
