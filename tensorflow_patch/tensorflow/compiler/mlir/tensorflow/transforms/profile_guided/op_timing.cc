//===- op_timing.cc - Runtime executions merged per op --------------------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/op_timing.h"

#include <charconv>

namespace mlir {
namespace TF {

double RoundShare(double value) {
  char text[32];
  std::to_chars_result printed =
      std::to_chars(text, text + sizeof(text), value,
                    std::chars_format::scientific, kShareDigits - 1);
  double rounded = value;
  if (printed.ec == std::errc())
    std::from_chars(text, printed.ptr, rounded);
  return rounded;
}

} // namespace TF
} // namespace mlir
