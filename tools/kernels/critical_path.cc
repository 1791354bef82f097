// The DAG's critical path (tfpgo_critical_path in kernels.h).

#include <algorithm>

#include "kernels.h"

extern "C" int64_t tfpgo_critical_path(int64_t node_count,
                                       const int64_t *weights,
                                       int64_t edge_count,
                                       const int64_t *sources,
                                       const int64_t *targets, int64_t *scratch,
                                       int64_t *path, int64_t *length) {
  if (node_count <= 0) {
    *length = 0;
    return 0;
  }
  int64_t *best_in = scratch;
  int64_t *parent = scratch + node_count;
  std::fill(best_in, best_in + node_count, 0);
  std::fill(parent, parent + node_count, -1);
  for (int64_t edge = 0; edge < edge_count; ++edge) {
    const int64_t source = sources[edge];
    const int64_t target = targets[edge];
    if (source < 0 || target >= node_count || source >= target ||
        (edge > 0 && source < sources[edge - 1]))
      return -1;
    // every edge into `source` came earlier (sources ascend, edges go
    // forward), so best_in[source] is final here
    const int64_t candidate = best_in[source] + weights[source];
    if (candidate > best_in[target]) {
      best_in[target] = candidate;
      parent[target] = source;
    }
  }
  int64_t end = 0;
  int64_t longest = best_in[0] + weights[0];
  for (int64_t node = 1; node < node_count; ++node) {
    const int64_t total = best_in[node] + weights[node];
    if (total > longest) {
      longest = total;
      end = node;
    }
  }
  int64_t size = 0;
  for (int64_t node = end; node >= 0; node = parent[node])
    path[size++] = node;
  std::reverse(path, path + size);
  *length = longest;
  return size;
}
