// Self times of nested intervals (tfpgo_nested_self_times in kernels.h).

#include <algorithm>
#include <vector>

#include "kernels.h"

extern "C" int64_t tfpgo_nested_self_times(int64_t count, const int64_t *starts,
                                           const int64_t *ends,
                                           const int64_t *tracks,
                                           const int64_t *order,
                                           int64_t *self_ps) {
  // positions (in sorted order) of the intervals enclosing the current one
  std::vector<int64_t> stack;
  for (int64_t at = 0; at < count; ++at) {
    if (order[at] < 0 || order[at] >= count)
      return -1;
    if (at > 0 && tracks[at] != tracks[at - 1])
      stack.clear();
    while (!stack.empty() && ends[stack.back()] <= starts[at])
      stack.pop_back();
    if (!stack.empty()) {
      const int64_t parent = stack.back();
      self_ps[order[parent]] -= std::min(ends[at], ends[parent]) - starts[at];
    }
    stack.push_back(at);
  }
  return 0;
}
