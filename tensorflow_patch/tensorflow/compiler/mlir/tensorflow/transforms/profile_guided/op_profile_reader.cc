//===- op_profile_reader.cc - Reads op_profile.json -----------------------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Reads the document with a JsonCursor in one pass. Keys may come in any
// order, so each entry's fields are collected first and checked once the
// entry is complete, in a fixed order; the first problem wins, but a syntax
// error anywhere in the text wins over it (it is reported as `not JSON`).
//
//===----------------------------------------------------------------------===//

#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/op_profile_reader.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/json_cursor.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/StringSaver.h"

namespace mlir {
namespace TF {
namespace {

using Kind = JsonCursor::Kind;

llvm::Error Invalid(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// One `ops[i]` object as read; nullopt/false marks a missing or mistyped
/// field.
struct RawEntry {
  std::optional<llvm::StringRef> name;
  bool op_types_ok = false;
  llvm::SmallVector<llvm::StringRef, 1> op_types;
  std::optional<int64_t> count, total_ps, self_ps, min_ps, max_ps,
      first_start_ps;
  bool durations_is_array = false;
  bool durations_ok = false;
  /// Optional (version 2); a mistyped one is an error.
  bool xla_ok = true;
  llvm::StringRef xla_module, xla_fusion;
  /// Optional (version 3; 0 when absent); a mistyped one is an error.
  std::optional<int64_t> device_self_ps = 0, device_count = 0;
};

class OpProfileParser {
public:
  explicit OpProfileParser(llvm::StringRef text)
      : cursor_(text), saver_(*profile_.storage) {}

  llvm::Expected<OpProfile> Parse();

private:
  void ReadTotals();
  void ReadOps();
  void ReadEntry(size_t position);
  /// Checks a complete entry; returns the problem, or "" if there is none.
  std::string Check(const RawEntry &raw, size_t position) const;

  /// The next value as an integer, or nullopt (value skipped) if it is none.
  std::optional<int64_t> ReadIntegerField();
  /// The next value as a string (copied into the profile), or nullopt.
  std::optional<llvm::StringRef> ReadStringField();
  /// Reads an array of strings into `out`; false if it is not one.
  bool ReadStringArray(llvm::SmallVectorImpl<llvm::StringRef> &out);
  /// Reads `durations_ps` into `durations_`.
  void ReadDurations(RawEntry &raw);

  JsonCursor cursor_;
  OpProfile profile_;
  llvm::StringSaver saver_;
  /// The first problem found in `ops`, reported once the text is known to
  /// be valid JSON.
  std::string ops_problem_;
  llvm::SmallVector<int64_t, 16> durations_;
};

std::optional<int64_t> OpProfileParser::ReadIntegerField() {
  if (cursor_.Peek() == Kind::kNumber)
    return cursor_.ReadInteger();
  cursor_.SkipValue();
  return std::nullopt;
}

std::optional<llvm::StringRef> OpProfileParser::ReadStringField() {
  if (cursor_.Peek() != Kind::kString) {
    cursor_.SkipValue();
    return std::nullopt;
  }
  std::optional<llvm::StringRef> text = cursor_.ReadString();
  if (!text)
    return std::nullopt;
  return saver_.save(*text);
}

bool OpProfileParser::ReadStringArray(
    llvm::SmallVectorImpl<llvm::StringRef> &out) {
  out.clear();
  if (cursor_.Peek() != Kind::kArray) {
    cursor_.SkipValue();
    return false;
  }
  bool all_strings = true;
  cursor_.BeginArray();
  while (cursor_.NextElement()) {
    std::optional<llvm::StringRef> text = ReadStringField();
    if (text)
      out.push_back(*text);
    all_strings &= text.has_value();
  }
  return all_strings;
}

void OpProfileParser::ReadDurations(RawEntry &raw) {
  durations_.clear();
  raw.durations_is_array = cursor_.Peek() == Kind::kArray;
  raw.durations_ok = raw.durations_is_array;
  if (!raw.durations_is_array) {
    cursor_.SkipValue();
    return;
  }
  cursor_.BeginArray();
  while (cursor_.NextElement()) {
    std::optional<int64_t> ps = ReadIntegerField();
    if (ps && *ps >= 0)
      durations_.push_back(*ps);
    else
      raw.durations_ok = false;
  }
}

std::string OpProfileParser::Check(const RawEntry &raw, size_t position) const {
  std::string where = "ops[" + std::to_string(position) + "]";
  if (!raw.name || raw.name->empty())
    return where + ": 'name' must be a non-empty string";
  where += " ('" + raw.name->str() + "')";
  if (!raw.op_types_ok)
    return where + ": 'op_types' must be an array of strings";
  std::pair<llvm::StringRef, const std::optional<int64_t> &> counts[] = {
      {"count", raw.count},     {"total_ps", raw.total_ps},
      {"self_ps", raw.self_ps}, {"min_ps", raw.min_ps},
      {"max_ps", raw.max_ps},   {"first_start_ps", raw.first_start_ps},
  };
  for (const auto &[key, value] : counts)
    if (!value || *value < 0)
      return where + ": '" + key.str() + "' must be a non-negative integer";
  for (const auto &[key, value] :
       {std::pair<llvm::StringRef, const std::optional<int64_t> &>{
            "device_self_ps", raw.device_self_ps},
        {"device_count", raw.device_count}})
    if (!value || *value < 0)
      return where + ": '" + key.str() + "' must be a non-negative integer";
  if (!raw.durations_is_array)
    return where + ": 'durations_ps' must be an array of integers";
  if (!raw.durations_ok)
    return where + ": 'durations_ps' must hold non-negative integers";
  // An entry that ran only on the device has no host executions.
  if (!*raw.count && !*raw.device_count)
    return where + ": 'count' and 'device_count' are both 0: an entry must "
                   "have run on the host or on a device";
  if (static_cast<int64_t>(durations_.size()) != *raw.count)
    return where + ": 'durations_ps' must hold 'count' (" +
           std::to_string(*raw.count) + ") durations";
  if (!std::is_sorted(durations_.begin(), durations_.end()))
    return where + ": 'durations_ps' must be sorted ascending";
  if (!raw.xla_ok)
    return where + ": 'xla_module' and 'xla_fusion' must be strings";
  return "";
}

void OpProfileParser::ReadEntry(size_t position) {
  // After the first problem only the syntax still matters.
  if (!ops_problem_.empty() || cursor_.Peek() != Kind::kObject) {
    if (ops_problem_.empty())
      ops_problem_ = "ops[" + std::to_string(position) + "] is not an object";
    cursor_.SkipValue();
    return;
  }
  RawEntry raw;
  // The optional XLA strings (version 2): a mistyped one fails the entry.
  auto read_xla = [&](llvm::StringRef &out) {
    std::optional<llvm::StringRef> text = ReadStringField();
    raw.xla_ok &= text.has_value();
    out = text.value_or("");
  };
  durations_.clear();
  cursor_.BeginObject();
  for (llvm::StringRef key; cursor_.NextKey(key);) {
    if (key == "name")
      raw.name = ReadStringField();
    else if (key == "op_types")
      raw.op_types_ok = ReadStringArray(raw.op_types);
    else if (key == "count")
      raw.count = ReadIntegerField();
    else if (key == "total_ps")
      raw.total_ps = ReadIntegerField();
    else if (key == "self_ps")
      raw.self_ps = ReadIntegerField();
    else if (key == "min_ps")
      raw.min_ps = ReadIntegerField();
    else if (key == "max_ps")
      raw.max_ps = ReadIntegerField();
    else if (key == "first_start_ps")
      raw.first_start_ps = ReadIntegerField();
    else if (key == "durations_ps")
      ReadDurations(raw);
    else if (key == "xla_module")
      read_xla(raw.xla_module);
    else if (key == "xla_fusion")
      read_xla(raw.xla_fusion);
    else if (key == "device_self_ps")
      raw.device_self_ps = ReadIntegerField();
    else if (key == "device_count")
      raw.device_count = ReadIntegerField();
    else
      cursor_.SkipValue();
  }
  if (!cursor_.ok())
    return;
  ops_problem_ = Check(raw, position);
  if (!ops_problem_.empty())
    return;
  OpProfileEntry &entry = profile_.ops.emplace_back();
  entry.name = *raw.name;
  entry.op_types = std::move(raw.op_types);
  entry.count = *raw.count;
  entry.total_ps = *raw.total_ps;
  entry.self_ps = *raw.self_ps;
  entry.min_ps = *raw.min_ps;
  entry.max_ps = *raw.max_ps;
  entry.first_start_ps = *raw.first_start_ps;
  entry.xla_module = raw.xla_module;
  entry.xla_fusion = raw.xla_fusion;
  entry.device_self_ps = *raw.device_self_ps;
  entry.device_count = *raw.device_count;
  int64_t *durations = profile_.storage->Allocate<int64_t>(durations_.size());
  std::copy(durations_.begin(), durations_.end(), durations);
  entry.durations_ps = llvm::ArrayRef<int64_t>(durations, durations_.size());
}

void OpProfileParser::ReadOps() {
  profile_.ops.clear();
  ops_problem_.clear();
  cursor_.BeginArray();
  for (size_t position = 0; cursor_.NextElement(); ++position)
    ReadEntry(position);
}

void OpProfileParser::ReadTotals() {
  profile_.op_self_ps = 0;
  profile_.device_attributed_ps = 0;
  if (cursor_.Peek() != Kind::kObject) {
    cursor_.SkipValue();
    return;
  }
  cursor_.BeginObject();
  for (llvm::StringRef key; cursor_.NextKey(key);) {
    if (key == "op_self_ps")
      profile_.op_self_ps = ReadIntegerField().value_or(0);
    else if (key == "device_attributed_ps")
      profile_.device_attributed_ps = ReadIntegerField().value_or(0);
    else
      cursor_.SkipValue();
  }
}

llvm::Expected<OpProfile> OpProfileParser::Parse() {
  std::optional<std::string> format;
  std::optional<int64_t> version;
  bool has_ops = false;
  bool is_object = cursor_.Peek() == Kind::kObject;
  if (!is_object) {
    cursor_.SkipValue();
  } else {
    cursor_.BeginObject();
    for (llvm::StringRef key; cursor_.NextKey(key);) {
      if (key == "format") {
        std::optional<llvm::StringRef> text = ReadStringField();
        format = text ? std::optional<std::string>(text->str()) : std::nullopt;
      } else if (key == "version") {
        version = ReadIntegerField();
      } else if (key == "totals") {
        ReadTotals();
      } else if (key == "ops" && cursor_.Peek() == Kind::kArray) {
        has_ops = true;
        ReadOps();
      } else {
        has_ops &= key != "ops";
        cursor_.SkipValue();
      }
    }
  }
  if (!cursor_.Finish())
    return Invalid("not JSON: " + llvm::toString(cursor_.TakeError()));
  if (!is_object)
    return Invalid("the document is not a JSON object");
  if (!format || *format != "tfpgo.op_profile")
    return Invalid("'format' is not \"tfpgo.op_profile\"; pass the "
                   "op_profile.json written by the trace reader");
  if (!version || *version < 1 || *version > kOpProfileVersion)
    return Invalid("unsupported 'version' (this reader knows 1 to " +
                   llvm::Twine(kOpProfileVersion) + ")");
  if (!has_ops)
    return Invalid("'ops' must be an array");
  if (!ops_problem_.empty())
    return Invalid(ops_problem_);
  return std::move(profile_);
}

} // namespace

llvm::Expected<OpProfile> ParseOpProfile(llvm::StringRef json_text) {
  size_t bad_byte = 0;
  if (!llvm::json::isUTF8(json_text, &bad_byte))
    return Invalid("not JSON: invalid UTF-8 at byte " + llvm::Twine(bad_byte));
  return OpProfileParser(json_text).Parse();
}

llvm::Expected<OpProfile> ReadOpProfile(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return Invalid("cannot read '" + path +
                   "': " + buffer.getError().message());
  llvm::Expected<OpProfile> profile = ParseOpProfile((*buffer)->getBuffer());
  if (!profile)
    return Invalid("invalid op profile '" + path +
                   "': " + llvm::toString(profile.takeError()));
  return profile;
}

} // namespace TF
} // namespace mlir
