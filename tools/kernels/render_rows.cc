// Rows of columns rendered as text (tfpgo_render_rows in kernels.h): the
// mechanical half of writing a large JSON document, whose layout Python
// describes as segments.

#include <cstring>

#include "kernels.h"

namespace {

constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536"
    "37383940414243444546474849505152535455565758596061626364656667686970717273"
    "7475767778798081828384858687888990919293949596979899";

// Writes `value` in decimal at `out` (room for 20 bytes); returns the end.
char *WriteDecimal(int64_t value, char *out) {
  uint64_t magnitude = static_cast<uint64_t>(value);
  if (value < 0) {
    *out++ = '-';
    magnitude = 0 - magnitude; // well defined for INT64_MIN too
  }
  char digits[20];
  char *end = digits + sizeof(digits);
  char *at = end;
  while (magnitude >= 100) {
    const unsigned pair = static_cast<unsigned>(magnitude % 100) * 2;
    magnitude /= 100;
    at -= 2;
    std::memcpy(at, kDigitPairs + pair, 2);
  }
  if (magnitude >= 10) {
    at -= 2;
    std::memcpy(at, kDigitPairs + magnitude * 2, 2);
  } else {
    *--at = static_cast<char>('0' + magnitude);
  }
  std::memcpy(out, at, end - at);
  return out + (end - at);
}

constexpr int64_t kMaxDecimal = 20; // "-9223372036854775808"

} // namespace

extern "C" int64_t tfpgo_render_rows(const TfpgoSegment *segments,
                                     int64_t segment_count, int64_t row_count,
                                     const char *separator,
                                     int64_t separator_size, char *out,
                                     int64_t capacity) {
  char *at = out;
  char *const limit = out + capacity;
  for (int64_t row = 0; row < row_count; ++row) {
    if (row > 0) {
      if (limit - at < separator_size)
        return -1;
      std::memcpy(at, separator, separator_size);
      at += separator_size;
    }
    for (int64_t index = 0; index < segment_count; ++index) {
      const TfpgoSegment &segment = segments[index];
      switch (segment.kind) {
      case kTfpgoLiteral:
        if (limit - at < segment.text_size)
          return -1;
        std::memcpy(at, segment.text, segment.text_size);
        at += segment.text_size;
        break;
      case kTfpgoIntOrNull:
        if (segment.values[row] == segment.null_value) {
          if (limit - at < 4)
            return -1;
          std::memcpy(at, "null", 4);
          at += 4;
          break;
        }
        [[fallthrough]];
      case kTfpgoInt:
        if (limit - at < kMaxDecimal)
          return -1;
        at = WriteDecimal(segment.values[row], at);
        break;
      case kTfpgoLookup: {
        const int64_t entry = segment.values[row];
        if (entry < 0 || entry >= segment.count)
          return -2;
        const int64_t begin = segment.offsets[entry];
        const int64_t size = segment.offsets[entry + 1] - begin;
        if (begin < 0 || size < 0 || begin + size > segment.text_size)
          return -2;
        if (limit - at < size)
          return -1;
        std::memcpy(at, segment.text + begin, size);
        at += size;
        break;
      }
      case kTfpgoIntList: {
        const int64_t begin = segment.offsets[row];
        const int64_t end = segment.offsets[row + 1];
        if (begin < 0 || end < begin || end > segment.count)
          return -2;
        for (int64_t item = begin; item < end; ++item) {
          if (limit - at < kMaxDecimal + 1)
            return -1;
          if (item > begin)
            *at++ = ',';
          at = WriteDecimal(segment.values[item], at);
        }
        break;
      }
      default:
        return -2;
      }
    }
  }
  return at - out;
}
