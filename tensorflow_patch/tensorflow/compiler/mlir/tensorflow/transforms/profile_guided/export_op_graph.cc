//===- export_op_graph.cc - Write op_graph.json ---------------------------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Implements `tf-profile-export-op-graph`. Like ViewOpGraph it gathers nodes
// and edges first and writes them afterwards, but as the versioned
// `tfpgo.op_graph` JSON document (docs/formats.md) that the plotter reads.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "tensorflow/compiler/mlir/tensorflow/ir/tf_profiler_annotations.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/document_output.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/node_names.h"
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace TF {

#define GEN_PASS_DEF_PROFILEEXPORTOPGRAPHPASS
#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h.inc"

namespace {

/// Version of the `tfpgo.op_graph` document this pass writes.
constexpr int64_t kOpGraphVersion = 1;

enum class EdgeKind { kData, kControl, kCall };

llvm::StringRef EdgeKindName(EdgeKind kind) {
  switch (kind) {
  case EdgeKind::kData:
    return "data";
  case EdgeKind::kControl:
    return "control";
  case EdgeKind::kCall:
    return "call";
  }
  return "data";
}

/// One edge; `callee`/`attr` are set for call edges only. Both are
/// StringAttr data owned by the context.
struct Edge {
  int64_t from;
  int64_t to;
  EdgeKind kind;
  llvm::StringRef callee;
  llvm::StringRef attr;
};

/// Returns true for tf_executor control tokens, registered or not.
bool IsControlType(Type type) {
  if (auto opaque = llvm::dyn_cast<OpaqueType>(type))
    return opaque.getDialectNamespace().getValue() == "tf_executor" &&
           opaque.getTypeData() == "control";
  return type.getDialect().getNamespace() == "tf_executor";
}

/// The op graph of a module, gathered before anything is written.
class OpGraph {
public:
  explicit OpGraph(ModuleOp module) : symbols_(module) {
    for (auto function : module.getOps<FunctionOpInterface>()) {
      functions_.push_back(function);
      function->walk<WalkOrder::PreOrder>([&](Operation *op) {
        if (op == function.getOperation())
          return;
        ids_[op] = static_cast<int64_t>(nodes_.size());
        nodes_.push_back(op);
        node_functions_.push_back(function.getName());
      });
    }
    for (Operation *op : nodes_)
      CollectEdges(op);
  }

  size_t NumNodes() const { return nodes_.size(); }
  size_t NumEdges() const { return edges_.size(); }

  /// Writes the document with one function, node or edge per line: compact
  /// enough for tens of MB, still greppable and diffable record by record.
  void Write(llvm::raw_ostream &os) const {
    // The document runs to tens of MB: write it in large chunks.
    os.SetBufferSize(1 << 20);
    os << "{\"format\":\"tfpgo.op_graph\",\"version\":" << kOpGraphVersion
       << ",\"time_unit\":\"ps\",\n";
    WriteRecords(os, "functions", functions_.size(),
                 [&](llvm::json::OStream &json, size_t index) {
                   FunctionOpInterface function = functions_[index];
                   json.object([&] {
                     json.attribute("name", function.getName());
                     json.attribute("entry", function.isPublic());
                   });
                 });
    os << ",\n";
    WriteRecords(
        os, "nodes", nodes_.size(),
        [&](llvm::json::OStream &json, size_t id) { WriteNode(json, id); });
    os << ",\n";
    WriteRecords(os, "edges", edges_.size(),
                 [&](llvm::json::OStream &json, size_t index) {
                   WriteEdge(json, edges_[index]);
                 });
    os << "}\n";
  }

private:
  void CollectEdges(Operation *op) {
    int64_t to = ids_.lookup(op);
    for (Value operand : op->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      auto it = producer ? ids_.find(producer) : ids_.end();
      if (it == ids_.end())
        continue;
      edges_.push_back({it->second,
                        to,
                        IsControlType(operand.getType()) ? EdgeKind::kControl
                                                         : EdgeKind::kData,
                        {},
                        {}});
    }
    AddCallEdges(to, op->getAttrs());
    // Unregistered ops keep `<{f = @callee}>` in an opaque properties
    // dictionary that getAttrs() does not list.
    if (!op->isRegistered())
      if (auto properties = llvm::dyn_cast_or_null<DictionaryAttr>(
              op->getPropertiesAsAttribute()))
        AddCallEdges(to, properties.getValue());
  }

  /// Adds a call edge for every function symbol among `attrs` (directly or
  /// in an array, e.g. Case `branches`).
  void AddCallEdges(int64_t from, llvm::ArrayRef<NamedAttribute> attrs) {
    for (NamedAttribute attr : attrs) {
      if (auto symbol = llvm::dyn_cast<FlatSymbolRefAttr>(attr.getValue()))
        AddCallEdge(from, symbol, attr.getName().getValue());
      else if (auto array = llvm::dyn_cast<ArrayAttr>(attr.getValue()))
        for (Attribute element : array)
          if (auto symbol = llvm::dyn_cast<FlatSymbolRefAttr>(element))
            AddCallEdge(from, symbol, attr.getName().getValue());
    }
  }

  /// A call edge goes to the first op of the callee's entry block.
  void AddCallEdge(int64_t from, FlatSymbolRefAttr symbol,
                   llvm::StringRef attr) {
    auto callee = llvm::dyn_cast_or_null<FunctionOpInterface>(
        symbols_.lookup(symbol.getValue()));
    if (!callee || callee.isExternal() || callee.front().empty())
      return;
    edges_.push_back({from, ids_.lookup(&callee.front().front()),
                      EdgeKind::kCall, symbol.getValue(), attr});
  }

  /// Writes `"key": [` and then each record compact on its own line.
  static void WriteRecords(
      llvm::raw_ostream &os, llvm::StringRef key, size_t count,
      llvm::function_ref<void(llvm::json::OStream &, size_t)> write_record) {
    os << '"' << key << "\": [";
    for (size_t index = 0; index < count; ++index) {
      os << (index ? ",\n " : "\n ");
      llvm::json::OStream json(os);
      write_record(json, index);
    }
    os << (count ? "\n]" : "]");
  }

  void WriteNode(llvm::json::OStream &json, size_t id) const {
    Operation *op = nodes_[id];
    llvm::StringRef name = GetNodeName(op);
    Operation *parent = op->getParentOp();
    auto parent_it = parent ? ids_.find(parent) : ids_.end();
    std::optional<ProfilerData> data;
    if (IsProfileAnnotatableAtAnyLevel(op))
      data = GetProfilerData(op);
    auto hot = op->getAttrOfType<IntegerAttr>(kProfilerHotAttrName);
    // Values are written in place: a json::Value per field would allocate.
    auto optional = [&](llvm::StringRef key, bool present, auto write) {
      json.attributeBegin(key);
      if (present)
        write();
      else
        json.value(nullptr);
      json.attributeEnd();
    };
    bool measured = data && !data->IsFused();
    json.object([&] {
      json.attribute("id", static_cast<int64_t>(id));
      json.attribute("op", op->getName().getStringRef());
      optional("name", !name.empty(), [&] { json.value(name); });
      json.attribute("function", node_functions_[id]);
      optional("parent", parent_it != ids_.end(),
               [&] { json.value(parent_it->second); });
      optional("profiler_data", measured,
               [&] { WriteProfilerData(json, *data); });
      optional("fused_into", data && data->IsFused(),
               [&] { json.value(data->fused_into); });
      json.attribute("hot", static_cast<bool>(hot));
      optional("hot_rank", static_cast<bool>(hot),
               [&] { json.value(hot.getInt()); });
      auto trips = op->getAttrOfType<FloatAttr>(kProfilerTripCountAttrName);
      optional("trip_count", static_cast<bool>(trips),
               [&] { json.value(trips.getValueAsDouble()); });
    });
  }

  static void WriteProfilerData(llvm::json::OStream &json,
                                const ProfilerData &data) {
    json.object([&] {
      json.attribute("ts", data.ts);
      json.attribute("dur", data.dur);
      json.attribute("count", data.count);
      json.attribute("total", data.total);
      json.attribute("self", data.self);
      json.attribute("min", data.min);
      json.attribute("max", data.max);
      json.attribute("p50", data.p50);
      json.attribute("p95", data.p95);
      json.attribute("share", data.share);
      // Optional fields: only where the annotate or materialize pass set them.
      if (data.device_count > 0) {
        json.attribute("device_self", data.device_self);
        json.attribute("device_count", data.device_count);
        json.attribute("device_share", data.device_share);
      }
      if (data.merged > 0)
        json.attribute("merged", data.merged);
      if (!data.source.empty())
        json.attribute("source", data.source);
      if (data.fanout > 0) {
        json.attribute("fanout", data.fanout);
        json.attribute("source_self", data.source_self);
      }
      if (data.source_device_self > 0)
        json.attribute("source_device_self", data.source_device_self);
      if (!data.fused_sources.empty())
        json.attributeArray("fused_sources", [&] {
          for (const std::string &source : data.fused_sources)
            json.value(source);
        });
      if (!data.fused_parts.empty())
        json.attributeArray("fused_parts", [&] {
          for (int64_t part : data.fused_parts)
            json.value(part);
        });
      if (!data.xla_module.empty())
        json.attribute("xla_module", data.xla_module);
      if (!data.xla_fusion.empty())
        json.attribute("xla_fusion", data.xla_fusion);
    });
  }

  static void WriteEdge(llvm::json::OStream &json, const Edge &edge) {
    json.object([&] {
      json.attribute("from", edge.from);
      json.attribute("to", edge.to);
      json.attribute("kind", EdgeKindName(edge.kind));
      if (edge.kind == EdgeKind::kCall) {
        json.attribute("callee", edge.callee);
        json.attribute("attr", edge.attr);
      }
    });
  }

  SymbolTable symbols_;
  std::vector<FunctionOpInterface> functions_;
  std::vector<Operation *> nodes_;
  std::vector<llvm::StringRef> node_functions_;
  llvm::DenseMap<Operation *, int64_t> ids_;
  std::vector<Edge> edges_;
};

/// See passes.td.
class ProfileExportOpGraphPass
    : public impl::ProfileExportOpGraphPassBase<ProfileExportOpGraphPass> {
public:
  using ProfileExportOpGraphPassBase::ProfileExportOpGraphPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (output.empty()) {
      emitError(module.getLoc(),
                "tf-profile-export-op-graph needs 'output': the path "
                "of the op_graph.json to write");
      return signalPassFailure();
    }
    OpGraph graph(module);
    if (failed(WriteDocument(output, "op graph", module.getLoc(),
                             [&](llvm::raw_ostream &os) { graph.Write(os); })))
      return signalPassFailure();
    numNodes += graph.NumNodes();
    numEdges += graph.NumEdges();
    // The IR is unchanged, which also spares the module a re-verification.
    markAllAnalysesPreserved();
  }
};

} // namespace
} // namespace TF
} // namespace mlir
