//===- cluster_graph.cc - Cycle-free contraction of a DAG -----------------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/cluster_graph.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace mlir {
namespace TF {

ClusterGraph::ClusterGraph(int num_nodes)
    : clusters_(num_nodes), parent_(num_nodes), seen_(num_nodes, 0) {
  std::iota(parent_.begin(), parent_.end(), 0);
  for (int node = 0; node < num_nodes; ++node)
    clusters_[node].rank = node;
}

void ClusterGraph::AddEdge(int from, int to) {
  clusters_[from].out.insert(to);
  clusters_[to].in.insert(from);
}

int ClusterGraph::ClusterOf(int node) {
  while (parent_[node] != node) {
    parent_[node] = parent_[parent_[node]];
    node = parent_[node];
  }
  return node;
}

bool ClusterGraph::Search(int start, bool forward, int low, int high,
                          int target, llvm::SmallVectorImpl<int> &visited) {
  llvm::SmallVector<int> stack = {start};
  while (!stack.empty()) {
    int node = stack.pop_back_val();
    if (node == target)
      return true;
    if (seen_[node] == generation_)
      continue;
    seen_[node] = generation_;
    visited.push_back(node);
    for (int next : forward ? clusters_[node].out : clusters_[node].in)
      if (next == target ||
          (clusters_[next].rank > low && clusters_[next].rank < high))
        stack.push_back(next);
  }
  return false;
}

std::optional<int> ClusterGraph::TryMerge(int a, int b) {
  a = ClusterOf(a);
  b = ClusterOf(b);
  if (a == b)
    return std::nullopt;
  if (clusters_[a].rank > clusters_[b].rank)
    std::swap(a, b);
  const int low = clusters_[a].rank, high = clusters_[b].rank;
  // In a topological order, a path a -> x -> b only visits ranks between
  // theirs, and nothing ranked after a reaches a.
  ++generation_;
  seen_[a] = generation_;
  llvm::SmallVector<int> forward; // reachable from a, ranked before b
  for (int next : clusters_[a].out) {
    if (next == b || clusters_[next].rank >= high)
      continue;
    if (Search(next, /*forward=*/true, low, high, b, forward))
      return next;
  }
  ++generation_;
  llvm::SmallVector<int> backward; // reaching b, ranked after a
  for (int previous : clusters_[b].in)
    if (previous != a && clusters_[previous].rank > low)
      Search(previous, /*forward=*/false, low, high, /*target=*/-1, backward);

  // The merged cluster goes after everything that reaches b and before
  // everything a reaches; the affected clusters share their old ranks.
  llvm::SmallVector<int> ranks = {low, high};
  for (int node : llvm::concat<int>(forward, backward))
    ranks.push_back(clusters_[node].rank);
  llvm::sort(ranks);
  auto by_rank = [&](int x, int y) {
    return clusters_[x].rank < clusters_[y].rank;
  };
  llvm::sort(backward, by_rank);
  llvm::sort(forward, by_rank);
  size_t next_rank = 0;
  for (int node : backward)
    clusters_[node].rank = ranks[next_rank++];
  clusters_[a].rank = ranks[next_rank++];
  for (int node : forward)
    clusters_[node].rank = ranks[next_rank++];

  // b's edges become a's.
  Cluster &merged = clusters_[a];
  for (int next : clusters_[b].out) {
    clusters_[next].in.erase(b);
    if (next != a) {
      clusters_[next].in.insert(a);
      merged.out.insert(next);
    }
  }
  for (int previous : clusters_[b].in) {
    clusters_[previous].out.erase(b);
    if (previous != a) {
      clusters_[previous].out.insert(a);
      merged.in.insert(previous);
    }
  }
  merged.out.erase(b);
  merged.in.erase(b);
  clusters_[b].in.clear();
  clusters_[b].out.clear();
  parent_[b] = a;
  return std::nullopt;
}

} // namespace TF
} // namespace mlir
