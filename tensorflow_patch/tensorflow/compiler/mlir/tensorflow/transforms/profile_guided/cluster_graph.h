//===- cluster_graph.h - Cycle-free contraction of a DAG --------*- C++ -*-===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// TensorFlow's mark_for_compilation_pass.cc grows XLA clusters by contracting
// edges of the graph and refuses a contraction that would create a cycle
// (cluster -> unclustered op -> cluster) with XLA's GraphCycles
// (xla/service/graphcycles). ClusterGraph does the same for the ops of one
// block: it keeps a topological order of the clusters (Pearce and Kelly's
// dynamic topological order, as GraphCycles does), so a reachability search
// only visits the clusters ranked between the two it merges.
//
//===----------------------------------------------------------------------===//

#ifndef TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_CLUSTER_GRAPH_H_
#define TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_CLUSTER_GRAPH_H_

#include <optional>
#include <vector>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir {
namespace TF {

/// A DAG over nodes 0..n-1, numbered in a topological order (a block's ops
/// in program order), whose nodes are merged into clusters.
class ClusterGraph {
public:
  explicit ClusterGraph(int num_nodes);

  /// Adds the edge `from` -> `to` (`from` < `to`) between two unmerged nodes.
  void AddEdge(int from, int to);

  /// The cluster (its representative node) that `node` belongs to.
  int ClusterOf(int node);

  /// Merges the clusters of `a` and `b` unless that creates a cycle, i.e.
  /// unless one reaches the other through a third cluster. Returns
  /// std::nullopt when merged, else the first node of such a path after the
  /// source cluster (the op the cycle would go through).
  std::optional<int> TryMerge(int a, int b);

private:
  struct Cluster {
    int rank;
    llvm::DenseSet<int> in, out; ///< Neighbouring clusters.
  };

  /// Depth-first search from `start` along out-edges (or in-edges if
  /// `!forward`) through clusters ranked strictly between `low` and `high`;
  /// appends them to `visited`. Returns true if it reached `target`.
  bool Search(int start, bool forward, int low, int high, int target,
              llvm::SmallVectorImpl<int> &visited);

  std::vector<Cluster> clusters_;
  std::vector<int> parent_;    ///< Union-find over nodes.
  std::vector<unsigned> seen_; ///< Visit marks of the current search.
  unsigned generation_ = 0;
};

} // namespace TF
} // namespace mlir

#endif // TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_CLUSTER_GRAPH_H_
