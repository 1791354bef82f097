//===- op_profile_reader.cc - Reads op_profile.json -----------------------===//
//
// Licensed under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/op_profile_reader.h"

#include <algorithm>
#include <utility>

#include "llvm/ADT/Twine.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

namespace mlir {
namespace TF {
namespace {

llvm::Error Invalid(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Reads the non-negative integer `key` of `object` (`where` names it).
llvm::Error ReadCount(const llvm::json::Object &object, llvm::StringRef key,
                      const llvm::Twine &where, int64_t &out) {
  std::optional<int64_t> value = object.getInteger(key);
  if (!value || *value < 0)
    return Invalid(where + ": '" + key + "' must be a non-negative integer");
  out = *value;
  return llvm::Error::success();
}

llvm::Expected<OpProfileEntry> ParseEntry(const llvm::json::Value &value,
                                          size_t position) {
  std::string where = "ops[" + std::to_string(position) + "]";
  const llvm::json::Object *object = value.getAsObject();
  if (!object)
    return Invalid(where + " is not an object");
  OpProfileEntry entry;
  std::optional<llvm::StringRef> name = object->getString("name");
  if (!name || name->empty())
    return Invalid(where + ": 'name' must be a non-empty string");
  entry.name = name->str();
  where += " ('" + entry.name + "')";
  const llvm::json::Array *op_types = object->getArray("op_types");
  if (!op_types)
    return Invalid(where + ": 'op_types' must be an array of strings");
  for (const llvm::json::Value &type : *op_types) {
    std::optional<llvm::StringRef> text = type.getAsString();
    if (!text)
      return Invalid(where + ": 'op_types' must be an array of strings");
    entry.op_types.push_back(text->str());
  }
  if (llvm::Error error = ReadCount(*object, "count", where, entry.count))
    return std::move(error);
  if (llvm::Error error = ReadCount(*object, "total_ps", where, entry.total_ps))
    return std::move(error);
  if (llvm::Error error = ReadCount(*object, "self_ps", where, entry.self_ps))
    return std::move(error);
  if (llvm::Error error = ReadCount(*object, "min_ps", where, entry.min_ps))
    return std::move(error);
  if (llvm::Error error = ReadCount(*object, "max_ps", where, entry.max_ps))
    return std::move(error);
  if (llvm::Error error =
          ReadCount(*object, "first_start_ps", where, entry.first_start_ps))
    return std::move(error);
  const llvm::json::Array *durations = object->getArray("durations_ps");
  if (!durations)
    return Invalid(where + ": 'durations_ps' must be an array of integers");
  for (const llvm::json::Value &duration : *durations) {
    std::optional<int64_t> ps = duration.getAsInteger();
    if (!ps || *ps < 0)
      return Invalid(where + ": 'durations_ps' must hold non-negative integers");
    entry.durations_ps.push_back(*ps);
  }
  if (static_cast<int64_t>(entry.durations_ps.size()) != entry.count ||
      entry.count == 0)
    return Invalid(where + ": 'durations_ps' must hold 'count' (" +
                   llvm::Twine(entry.count) + " > 0) durations");
  if (!std::is_sorted(entry.durations_ps.begin(), entry.durations_ps.end()))
    return Invalid(where + ": 'durations_ps' must be sorted ascending");
  return entry;
}

} // namespace

llvm::Expected<OpProfile> ParseOpProfile(llvm::StringRef json_text) {
  llvm::Expected<llvm::json::Value> document = llvm::json::parse(json_text);
  if (!document)
    return Invalid("not JSON: " + llvm::toString(document.takeError()));
  const llvm::json::Object *root = document->getAsObject();
  if (!root)
    return Invalid("the document is not a JSON object");
  std::optional<llvm::StringRef> format = root->getString("format");
  if (!format || *format != "tfpgo.op_profile")
    return Invalid("'format' is not \"tfpgo.op_profile\"; pass the "
                   "op_profile.json written by the trace reader");
  std::optional<int64_t> version = root->getInteger("version");
  if (!version || *version < 1 || *version > kOpProfileVersion)
    return Invalid("unsupported 'version' (this reader knows 1 to " +
                   llvm::Twine(kOpProfileVersion) + ")");
  OpProfile profile;
  if (const llvm::json::Object *totals = root->getObject("totals"))
    profile.op_self_ps = totals->getInteger("op_self_ps").value_or(0);
  const llvm::json::Array *ops = root->getArray("ops");
  if (!ops)
    return Invalid("'ops' must be an array");
  profile.ops.reserve(ops->size());
  for (size_t i = 0; i < ops->size(); ++i) {
    llvm::Expected<OpProfileEntry> entry = ParseEntry((*ops)[i], i);
    if (!entry)
      return entry.takeError();
    profile.ops.push_back(std::move(*entry));
  }
  return profile;
}

llvm::Expected<OpProfile> ReadOpProfile(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return Invalid("cannot read '" + path + "': " + buffer.getError().message());
  llvm::Expected<OpProfile> profile = ParseOpProfile((*buffer)->getBuffer());
  if (!profile)
    return Invalid("invalid op profile '" + path +
                   "': " + llvm::toString(profile.takeError()));
  return profile;
}

} // namespace TF
} // namespace mlir
