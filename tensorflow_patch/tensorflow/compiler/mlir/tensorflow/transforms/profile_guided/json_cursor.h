//===- json_cursor.h - Pull parser over an in-memory JSON text --*- C++ -*-===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// A pull parser: the reader asks for the value it expects next and gets it
// straight from the text, so no document tree is built. op_profile.json holds
// one small object per runtime node name with an array of durations; reading
// it through llvm::json::Value allocated (and later freed) a map per entry and
// a Value per duration, which cost more than annotating the module.
//
// The first syntax error stops the cursor: every later call fails, and
// TakeError() reports the error with its line and column.
//
//===----------------------------------------------------------------------===//

#ifndef TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_JSON_CURSOR_H_
#define TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_JSON_CURSOR_H_

#include <cstdint>
#include <optional>
#include <string>

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

namespace mlir {
namespace TF {

/// Reads one JSON text (RFC 8259, UTF-8 checked by the caller) front to back.
///
///   cursor.BeginObject();
///   for (llvm::StringRef key; cursor.NextKey(key);)
///     if (key == "n") n = cursor.ReadInteger(); else cursor.SkipValue();
///   if (!cursor.Finish()) return cursor.TakeError();
class JsonCursor {
public:
  /// What the next value is, judged by its first character.
  enum class Kind { kObject, kArray, kString, kNumber, kLiteral, kInvalid };

  explicit JsonCursor(llvm::StringRef text) : text_(text) {}

  /// Kind of the next value; consumes only whitespace.
  Kind Peek();

  /// Consumes `{`; false (and an error) if the next value is no object.
  bool BeginObject();
  /// Reads the next key of the object begun last, and its `:`. Returns false
  /// after consuming the closing `}` or on an error. `key` stays valid until
  /// the next call that reads a string.
  bool NextKey(llvm::StringRef &key);

  /// Consumes `[`; false (and an error) if the next value is no array.
  bool BeginArray();
  /// Returns true if another element follows (then read or skip it), false
  /// after consuming the closing `]` or on an error.
  bool NextElement();

  /// Reads a string; std::nullopt (and an error) if the next value is none.
  /// The result stays valid until the next call that reads a string.
  std::optional<llvm::StringRef> ReadString();
  /// Reads a number. Returns it if it is an integer that fits in int64 (also
  /// `3.0` or `3e2`, like llvm::json::Value::getAsInteger); std::nullopt for
  /// other numbers and, with an error, if the next value is no number.
  std::optional<int64_t> ReadInteger();
  /// Reads and discards the next value, whatever it is.
  bool SkipValue();

  /// Checks that only whitespace follows the top-level value.
  bool Finish();

  /// True while no syntax error has been seen.
  bool ok() const { return error_.empty(); }
  /// The syntax error as `line L, column C: <what>`; success if none.
  llvm::Error TakeError();

private:
  bool Fail(const llvm::Twine &message);
  void SkipWhitespace();
  bool Consume(char c);
  bool ParseString(llvm::StringRef &out);
  bool ParseEscape();
  std::optional<int64_t> ParseNumber();
  bool SkipValueAt(unsigned depth);

  llvm::StringRef text_;
  size_t pos_ = 0;
  /// True right after `{` or `[`: the next key/element needs no comma.
  bool after_open_ = false;
  /// Unescaped copy of the last string read when it had escapes.
  std::string scratch_;
  std::string error_;
  size_t error_pos_ = 0;
};

} // namespace TF
} // namespace mlir

#endif // TENSORFLOW_COMPILER_MLIR_TENSORFLOW_TRANSFORMS_PROFILE_GUIDED_JSON_CURSOR_H_
