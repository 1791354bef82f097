//===- json_cursor.cc - Pull parser over an in-memory JSON text -----------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/json_cursor.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir {
namespace TF {
namespace {

/// Levels of arrays and objects SkipValue reads inside the value it skips;
/// deeper, it fails instead of exhausting the stack.
constexpr unsigned kMaxDepth = 1024;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

/// Value of hex digit `c`, or -1.
int HexValue(char c) {
  if (IsDigit(c))
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

} // namespace

void JsonCursor::SkipWhitespace() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
      return;
    ++pos_;
  }
}

bool JsonCursor::Consume(char c) {
  if (pos_ >= text_.size() || text_[pos_] != c)
    return false;
  ++pos_;
  return true;
}

bool JsonCursor::Fail(const llvm::Twine &message) {
  if (ok()) {
    error_ = message.str();
    if (error_.empty())
      error_ = "invalid JSON";
    error_pos_ = pos_;
  }
  return false;
}

JsonCursor::Kind JsonCursor::Peek() {
  SkipWhitespace();
  if (!ok() || pos_ >= text_.size())
    return Kind::kInvalid;
  char c = text_[pos_];
  switch (c) {
  case '{':
    return Kind::kObject;
  case '[':
    return Kind::kArray;
  case '"':
    return Kind::kString;
  case 't':
  case 'f':
  case 'n':
    return Kind::kLiteral;
  default:
    return c == '-' || IsDigit(c) ? Kind::kNumber : Kind::kInvalid;
  }
}

bool JsonCursor::BeginObject() {
  if (Peek() != Kind::kObject)
    return Fail("expected '{'");
  ++pos_;
  after_open_ = true;
  return true;
}

bool JsonCursor::NextKey(llvm::StringRef &key) {
  bool first = after_open_;
  after_open_ = false;
  SkipWhitespace();
  if (!ok() || Consume('}'))
    return false;
  if (pos_ >= text_.size())
    return Fail("unexpected end of input");
  if (!first) {
    if (!Consume(','))
      return Fail("expected ',' or '}'");
    SkipWhitespace();
  }
  if (pos_ >= text_.size() || text_[pos_] != '"')
    return Fail(first ? "expected a string key or '}'"
                      : "expected a string key");
  if (!ParseString(key))
    return false;
  SkipWhitespace();
  return Consume(':') || Fail("expected ':'");
}

bool JsonCursor::BeginArray() {
  if (Peek() != Kind::kArray)
    return Fail("expected '['");
  ++pos_;
  after_open_ = true;
  return true;
}

bool JsonCursor::NextElement() {
  bool first = after_open_;
  after_open_ = false;
  SkipWhitespace();
  if (!ok() || Consume(']'))
    return false;
  if (pos_ >= text_.size())
    return Fail("unexpected end of input");
  return first || Consume(',') || Fail("expected ',' or ']'");
}

std::optional<llvm::StringRef> JsonCursor::ReadString() {
  llvm::StringRef out;
  if (Peek() != Kind::kString) {
    Fail("expected a string");
    return std::nullopt;
  }
  if (!ParseString(out))
    return std::nullopt;
  return out;
}

std::optional<int64_t> JsonCursor::ReadInteger() {
  if (Peek() != Kind::kNumber) {
    Fail("expected a number");
    return std::nullopt;
  }
  return ParseNumber();
}

bool JsonCursor::ParseString(llvm::StringRef &out) {
  size_t start = ++pos_; // Past the opening quote.
  // Fast path: no escapes, the string is a slice of the text.
  for (; pos_ < text_.size(); ++pos_) {
    char c = text_[pos_];
    if (c == '"') {
      out = text_.slice(start, pos_++);
      return true;
    }
    if (c == '\\')
      break;
    if (static_cast<unsigned char>(c) < 0x20)
      return Fail("control character in a string");
  }
  scratch_.assign(text_.data() + start, pos_ - start);
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == '"') {
      ++pos_;
      out = scratch_;
      return true;
    }
    if (c == '\\') {
      if (!ParseEscape())
        return false;
      continue;
    }
    if (static_cast<unsigned char>(c) < 0x20)
      return Fail("control character in a string");
    scratch_.push_back(c);
    ++pos_;
  }
  return Fail("unterminated string");
}

bool JsonCursor::ParseEscape() {
  ++pos_; // Past the backslash.
  if (pos_ >= text_.size())
    return Fail("unterminated string");
  char c = text_[pos_++];
  switch (c) {
  case '"':
  case '\\':
  case '/':
    scratch_.push_back(c);
    return true;
  case 'b':
    scratch_.push_back('\b');
    return true;
  case 'f':
    scratch_.push_back('\f');
    return true;
  case 'n':
    scratch_.push_back('\n');
    return true;
  case 'r':
    scratch_.push_back('\r');
    return true;
  case 't':
    scratch_.push_back('\t');
    return true;
  case 'u':
    break;
  default:
    --pos_;
    return Fail("invalid escape in a string");
  }
  auto read_hex4 = [&](size_t at) -> int {
    if (at + 4 > text_.size())
      return -1;
    int value = 0;
    for (size_t i = at; i < at + 4; ++i) {
      int digit = HexValue(text_[i]);
      if (digit < 0)
        return -1;
      value = value * 16 + digit;
    }
    return value;
  };
  int unit = read_hex4(pos_);
  if (unit < 0)
    return Fail("'\\u' needs four hex digits");
  pos_ += 4;
  unsigned code_point = unit;
  if (unit >= 0xD800 && unit <= 0xDBFF) {
    // A high surrogate pairs with an immediately following low one.
    int low = text_.substr(pos_).starts_with("\\u") ? read_hex4(pos_ + 2) : -1;
    if (low >= 0xDC00 && low <= 0xDFFF) {
      code_point = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
      pos_ += 6;
    } else {
      code_point = 0xFFFD; // Lone surrogate, as llvm::json::parse does.
    }
  } else if (unit >= 0xDC00 && unit <= 0xDFFF) {
    code_point = 0xFFFD;
  }
  char buffer[UNI_MAX_UTF8_BYTES_PER_CODE_POINT];
  char *end = buffer;
  llvm::ConvertCodePointToUTF8(code_point, end);
  scratch_.append(buffer, end);
  return true;
}

std::optional<int64_t> JsonCursor::ParseNumber() {
  size_t start = pos_;
  bool negative = Consume('-');
  auto skip_digits = [&](const char *what) {
    if (pos_ >= text_.size() || !IsDigit(text_[pos_]))
      return Fail(llvm::Twine("expected a digit ") + what);
    while (pos_ < text_.size() && IsDigit(text_[pos_]))
      ++pos_;
    return true;
  };
  size_t digits = pos_;
  if (!Consume('0') && !skip_digits("in a number"))
    return std::nullopt;
  size_t digits_end = pos_;
  bool integral = true;
  if (Consume('.')) {
    integral = false;
    if (!skip_digits("after '.'"))
      return std::nullopt;
  }
  if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    integral = false;
    ++pos_;
    if (!Consume('+'))
      Consume('-');
    if (!skip_digits("in an exponent"))
      return std::nullopt;
  }
  if (integral) {
    // Accumulate the magnitude; anything beyond int64 is not an integer.
    uint64_t magnitude = 0;
    const uint64_t limit =
        static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + negative;
    for (size_t i = digits; i < digits_end; ++i) {
      unsigned digit = text_[i] - '0';
      if (magnitude > (limit - digit) / 10)
        return std::nullopt;
      magnitude = magnitude * 10 + digit;
    }
    return negative ? static_cast<int64_t>(0 - magnitude)
                    : static_cast<int64_t>(magnitude);
  }
  // Rare: a fraction or exponent. An exact integer still counts as one.
  double value = std::strtod(text_.slice(start, pos_).str().c_str(), nullptr);
  double whole;
  if (std::modf(value, &whole) != 0.0 || !(value >= -0x1p63 && value < 0x1p63))
    return std::nullopt;
  return static_cast<int64_t>(value);
}

bool JsonCursor::SkipValue() { return SkipValueAt(0); }

bool JsonCursor::SkipValueAt(unsigned depth) {
  if (depth >= kMaxDepth)
    return Fail("nesting deeper than " + llvm::Twine(kMaxDepth));
  llvm::StringRef ignored;
  switch (Peek()) {
  case Kind::kObject:
    BeginObject();
    while (NextKey(ignored))
      if (!SkipValueAt(depth + 1))
        return false;
    return ok();
  case Kind::kArray:
    BeginArray();
    while (NextElement())
      if (!SkipValueAt(depth + 1))
        return false;
    return ok();
  case Kind::kString:
    return ParseString(ignored);
  case Kind::kNumber:
    ParseNumber();
    return ok();
  case Kind::kLiteral:
    for (llvm::StringRef literal : {"true", "false", "null"}) {
      if (text_.substr(pos_).starts_with(literal)) {
        pos_ += literal.size();
        return true;
      }
    }
    return Fail("expected a value");
  case Kind::kInvalid:
    if (!ok())
      return false;
    return Fail(pos_ >= text_.size() ? "unexpected end of input"
                                     : "expected a value");
  }
  return false;
}

bool JsonCursor::Finish() {
  SkipWhitespace();
  if (!ok())
    return false;
  return pos_ == text_.size() || Fail("unexpected text after the document");
}

llvm::Error JsonCursor::TakeError() {
  if (ok())
    return llvm::Error::success();
  llvm::StringRef before = text_.take_front(error_pos_);
  size_t line_start = before.rfind('\n');
  size_t column = line_start == llvm::StringRef::npos ? error_pos_ + 1
                                                      : error_pos_ - line_start;
  std::string message = llvm::formatv("line {0}, column {1}: {2}",
                                      before.count('\n') + 1, column, error_);
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace TF
} // namespace mlir
