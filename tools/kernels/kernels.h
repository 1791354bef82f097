// tfpgo's native kernels: the few sequential loops over every event or node
// that numpy cannot vectorize, behind a C ABI that Python loads with ctypes
// (python/tfpgo/kernels.py). Each rule is implemented here once; Python owns
// the data, passes contiguous int64 arrays, and checks their shapes first.
// Nothing here allocates memory the caller must free or prints anything.

#ifndef TFPGO_TOOLS_KERNELS_KERNELS_H_
#define TFPGO_TOOLS_KERNELS_KERNELS_H_

#include <cstdint>

extern "C" {

// Longest duration-weighted path of a DAG whose `edge_count` edges
// (sources[i] -> targets[i], sorted by source) go from smaller to larger ids:
// the one-pass relaxation of the edges in source order, where a node's best
// incoming total is replaced only by a strictly larger one (so its parent is
// the smallest predecessor reaching the maximum, and none when that is 0).
// Writes the path's node ids into `path` (capacity `node_count`) in path
// order and its length into `*length`; returns the number of path nodes, or
// -1 if an edge is out of range or not forward. Uses `scratch` (2 *
// node_count int64) for totals and parents.
int64_t tfpgo_critical_path(int64_t node_count, const int64_t *weights,
                            int64_t edge_count, const int64_t *sources,
                            const int64_t *targets, int64_t *scratch,
                            int64_t *path, int64_t *length);

// Self time of intervals already sorted by (track, start, longer first):
// each one's duration minus the part inside it of every interval directly
// nested in it (a nested interval outlasting its parent is clipped at the
// parent's end). `self_ps[order[i]]` receives interval i's self time;
// `self_ps` must hold the durations on entry. Returns 0, or -1 if an index
// in `order` is out of range.
int64_t tfpgo_nested_self_times(int64_t count, const int64_t *starts,
                                const int64_t *ends, const int64_t *tracks,
                                const int64_t *order, int64_t *self_ps);

// One piece of every row rendered by tfpgo_render_rows.
enum TfpgoSegmentKind : int32_t {
  kTfpgoLiteral = 0,   // `text` (`text_size` bytes), the same in every row
  kTfpgoInt = 1,       // values[row] in decimal
  kTfpgoIntOrNull = 2, // values[row] in decimal, "null" where it equals
                       // `null_value`
  kTfpgoLookup = 3,    // entry values[row] of a string table: the bytes
                       // text[offsets[k]:offsets[k + 1]] for k < `count`
  kTfpgoIntList = 4,   // values[offsets[row]:offsets[row + 1]] in decimal,
                       // joined by ","; `count` values in all
};

struct TfpgoSegment {
  int32_t kind;
  int32_t reserved;
  const char *text;
  int64_t text_size;
  const int64_t *values;
  const int64_t *offsets;
  int64_t count;
  int64_t null_value;
};

// Renders `row_count` rows, each the concatenation of its segments, joined
// by `separator`, into `out`. Returns the bytes written, -1 if they would
// exceed `capacity`, -2 if a lookup index or list bound is out of range.
int64_t tfpgo_render_rows(const TfpgoSegment *segments, int64_t segment_count,
                          int64_t row_count, const char *separator,
                          int64_t separator_size, char *out, int64_t capacity);

} // extern "C"

#endif // TFPGO_TOOLS_KERNELS_KERNELS_H_
