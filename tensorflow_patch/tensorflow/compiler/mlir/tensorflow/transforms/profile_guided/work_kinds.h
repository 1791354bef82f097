//===- work_kinds.h - The kind of work an op does ---------------*- C++ -*-===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// The one rule for how much of a profiled op's time a lowered op that carries
// it does (docs/formats.md, "Conservation"): a source's time goes to its
// carriers of the highest kind. `tf-profile-materialize-annotations` reads
// this table, and so does tfpgo's Python side for the code of IREE's
// executables, which no C++ pass of ours can parse
// (python/tfpgo/attribution/work_kind.py parses the `kNamedWork` rows below:
// keep one row a line, in this exact form).
//
//===----------------------------------------------------------------------===//

#ifndef TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_WORK_KINDS_H_
#define TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_WORK_KINDS_H_

#include "llvm/ADT/StringRef.h"

namespace mlir {
namespace TF {

/// How much of a source's time an op that carries it does, lowest first: a
/// constant computes nothing, a copy or reshape only moves data, an
/// elementwise op computes, an op with a reduction loop (a convolution, a
/// matmul) does the work of a fused kernel.
enum class Work { kNone = 0, kMovement = 1, kCompute = 2, kReduction = 3 };

/// An op name's kind, for ops whose structure does not say it (a linalg op's
/// reduction loops do; these rows give the same answer for the named linalg
/// ops, for readers that cannot ask the op). `prefix`: the row matches every
/// name that starts with `name` (linalg's conv_2d_nhwc_hwcf and the like).
struct NamedWork {
  const char *dialect;
  const char *name;
  bool prefix;
  Work kind;
};

inline constexpr NamedWork kNamedWork[] = {
    {"stablehlo", "convolution", false, Work::kReduction},
    {"stablehlo", "dot", false, Work::kReduction},
    {"stablehlo", "dot_general", false, Work::kReduction},
    {"stablehlo", "reduce", false, Work::kReduction},
    {"stablehlo", "reduce_window", false, Work::kReduction},
    {"stablehlo", "select_and_scatter", false, Work::kReduction},
    {"stablehlo", "reshape", false, Work::kMovement},
    {"stablehlo", "broadcast_in_dim", false, Work::kMovement},
    {"stablehlo", "broadcast", false, Work::kMovement},
    {"stablehlo", "dynamic_broadcast_in_dim", false, Work::kMovement},
    {"stablehlo", "transpose", false, Work::kMovement},
    {"stablehlo", "pad", false, Work::kMovement},
    {"stablehlo", "slice", false, Work::kMovement},
    {"stablehlo", "dynamic_slice", false, Work::kMovement},
    {"stablehlo", "concatenate", false, Work::kMovement},
    {"stablehlo", "bitcast_convert", false, Work::kMovement},
    {"stablehlo", "get_tuple_element", false, Work::kMovement},
    {"stablehlo", "tuple", false, Work::kMovement},
    {"mhlo", "convolution", false, Work::kReduction},
    {"mhlo", "dot", false, Work::kReduction},
    {"mhlo", "dot_general", false, Work::kReduction},
    {"mhlo", "reduce", false, Work::kReduction},
    {"mhlo", "reduce_window", false, Work::kReduction},
    {"mhlo", "select_and_scatter", false, Work::kReduction},
    {"mhlo", "reshape", false, Work::kMovement},
    {"mhlo", "broadcast_in_dim", false, Work::kMovement},
    {"mhlo", "broadcast", false, Work::kMovement},
    {"mhlo", "dynamic_broadcast_in_dim", false, Work::kMovement},
    {"mhlo", "transpose", false, Work::kMovement},
    {"mhlo", "pad", false, Work::kMovement},
    {"mhlo", "slice", false, Work::kMovement},
    {"mhlo", "dynamic_slice", false, Work::kMovement},
    {"mhlo", "concatenate", false, Work::kMovement},
    {"mhlo", "bitcast_convert", false, Work::kMovement},
    {"mhlo", "get_tuple_element", false, Work::kMovement},
    {"mhlo", "tuple", false, Work::kMovement},
    {"linalg", "fill", false, Work::kMovement},
    {"linalg", "copy", false, Work::kMovement},
    {"linalg", "transpose", false, Work::kMovement},
    {"linalg", "broadcast", false, Work::kMovement},
    {"linalg", "conv", true, Work::kReduction},
    {"linalg", "depthwise_conv", true, Work::kReduction},
    {"linalg", "pooling", true, Work::kReduction},
    {"linalg", "matmul", true, Work::kReduction},
    {"linalg", "batch_matmul", true, Work::kReduction},
    {"linalg", "batch_reduce_matmul", true, Work::kReduction},
    {"linalg", "matvec", true, Work::kReduction},
    {"linalg", "batch_matvec", true, Work::kReduction},
    {"linalg", "vecmat", true, Work::kReduction},
    {"linalg", "batch_vecmat", true, Work::kReduction},
    {"linalg", "dot", true, Work::kReduction},
    {"linalg", "mmt4d", true, Work::kReduction},
    {"linalg", "batch_mmt4d", true, Work::kReduction},
    {"linalg", "contract", true, Work::kReduction},
    {"linalg", "reduce", true, Work::kReduction},
    {"tensor", "pad", false, Work::kMovement},
    {"tensor", "extract_slice", false, Work::kMovement},
    {"tensor", "insert_slice", false, Work::kMovement},
    {"tensor", "expand_shape", false, Work::kMovement},
    {"tensor", "collapse_shape", false, Work::kMovement},
    {"tensor", "reshape", false, Work::kMovement},
    {"tensor", "cast", false, Work::kMovement},
    {"tensor", "concat", false, Work::kMovement},
    {"tensor", "bitcast", false, Work::kMovement},
};

/// The kind `kNamedWork` gives `dialect.name`, or `fallback` when no row does.
inline Work NamedWorkKind(llvm::StringRef dialect, llvm::StringRef name,
                          Work fallback) {
  for (const NamedWork &row : kNamedWork)
    if (dialect == row.dialect &&
        (row.prefix ? name.starts_with(row.name) : name == row.name))
      return row.kind;
  return fallback;
}

} // namespace TF
} // namespace mlir

#endif // TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_WORK_KINDS_H_
