//===- xplane_columns.cc - XSpace protobuf to columnar records ------------===//
//
// Decodes an `.xplane.pb` (an XSpace, tsl/profiler/protobuf/xplane.proto) and
// writes its events as fixed-width columns to stdout, so that Python reads
// millions of events with numpy and never loops over them. It only decodes:
// every rule (names, flows, steps, the DAG, the op profile) stays in Python,
// python/tfpgo/readers/xplane.py, which documents the record stream.
//
//   xplane-columns FILE [BASE_NS]
//
// Records: a 4-byte tag, a u64 payload size, the payload (little-endian):
//   BASE  i64 base_ns (given, or the earliest line timestamp)
//   HOST  one hostname, UTF-8
//   PLAN  a plane's name; its EMET/SMET/META/LINE/FLOW/STAT records follow
//   EMET  event metadata: u64 n, i64 ids[n], u64 sizes[n], names
//   SMET  stat metadata: the same layout
//   META  the raw bytes of a `/host:metadata` plane (read with protobuf)
//   LINE  u64 n, u64 name size, name, i64 metadata_id[n], start_ps[n],
//         duration_ps[n]; start_ps = offset_ps + (timestamp_ns - base_ns) *
//         1000
//   FLOW  the last LINE's context stats: u64 m, i64 event[m], role[m]
//         (0 producer `_p`, 1 consumer `_c`), type[m] (`_pt`/`_ct`), id[m]
//   STAT  the last LINE's other stats: u64 k, i64 event[k], metadata_id[k],
//         value[k] (integer or double bits), u8 kind[k] (0 none, 1 double,
//         2 uint64, 3 int64, 4 str, 5 bytes, 6 ref), u64 sizes[k], payloads
//   DONE  u64 planes
// A line of more than kChunkEvents events is written as several LINE records.
// Malformed input: one line on stderr, exit status 1.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <string_view>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

namespace {

/// Lines longer than this are written in chunks (bounded buffers).
constexpr size_t kChunkEvents = 1 << 20;

/// Thrown on malformed input; `what` says where.
struct DecodeError {
  std::string what;
};

/// A cursor over one protobuf message's bytes.
class Reader {
public:
  Reader(const uint8_t *begin, const uint8_t *end) : pos(begin), end(end) {}

  bool done() const { return pos >= end; }
  const uint8_t *position() const { return pos; }

  uint64_t varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= end)
        throw DecodeError{"truncated varint"};
      uint8_t byte = *pos++;
      value |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80))
        return value;
    }
    throw DecodeError{"varint longer than 10 bytes"};
  }

  /// The next field's number and wire type.
  std::pair<uint32_t, uint32_t> tag() {
    uint64_t key = varint();
    uint32_t field = uint32_t(key >> 3);
    if (field == 0)
      throw DecodeError{"field number 0"};
    return {field, uint32_t(key & 7)};
  }

  Reader bytes() {
    uint64_t size = varint();
    if (size > uint64_t(end - pos))
      throw DecodeError{"length-delimited field runs past its message"};
    Reader inner(pos, pos + size);
    pos += size;
    return inner;
  }

  uint64_t fixed(int size) {
    if (end - pos < size)
      throw DecodeError{"truncated fixed-width field"};
    uint64_t value = 0;
    std::memcpy(&value, pos, size);
    pos += size;
    return value;
  }

  /// Skips a field of `wire` type (groups included, as protobuf does).
  void skip(uint32_t field, uint32_t wire) {
    switch (wire) {
    case 0:
      varint();
      return;
    case 1:
      fixed(8);
      return;
    case 2:
      bytes();
      return;
    case 5:
      fixed(4);
      return;
    case 3:
      for (;;) {
        if (done())
          throw DecodeError{"unterminated group"};
        auto [inner, innerWire] = tag();
        if (innerWire == 4) {
          if (inner != field)
            throw DecodeError{"mismatched end group"};
          return;
        }
        skip(inner, innerWire);
      }
    default:
      throw DecodeError{"invalid wire type"};
    }
  }

  std::string_view view() const {
    return {reinterpret_cast<const char *>(pos), size_t(end - pos)};
  }

private:
  const uint8_t *pos;
  const uint8_t *end;
};

/// Buffered binary output to stdout.
class Output {
public:
  void raw(const void *data, size_t size) {
    const char *bytes = static_cast<const char *>(data);
    if (size >= kDirect) { // a column: straight out, not through the buffer
      flush();
      put(bytes, size);
      return;
    }
    buffer.insert(buffer.end(), bytes, bytes + size);
    if (buffer.size() >= (1u << 22))
      flush();
  }
  void u64(uint64_t value) { raw(&value, 8); }
  void record(const char tag[4], uint64_t size) {
    raw(tag, 4);
    u64(size);
  }
  void flush() {
    put(buffer.data(), buffer.size());
    buffer.clear();
  }

private:
  static constexpr size_t kDirect = 1u << 16;

  static void put(const char *bytes, size_t size) {
    if (size && std::fwrite(bytes, 1, size, stdout) != size)
      throw DecodeError{"cannot write the output"};
  }

  std::vector<char> buffer;
};

/// An id -> name table (the event or stat metadata of a plane).
struct NameTable {
  std::vector<int64_t> ids;
  std::vector<std::string_view> names;
  std::unordered_map<int64_t, size_t> slot;

  void set(int64_t id, std::string_view name) {
    auto [it, added] = slot.emplace(id, ids.size());
    if (added) {
      ids.push_back(id);
      names.push_back(name);
    } else {
      names[it->second] = name; // protobuf maps: the last entry wins
    }
  }

  void write(Output &out, const char tag[4]) const {
    uint64_t size = 8 + 16 * ids.size();
    for (auto name : names)
      size += name.size();
    out.record(tag, size);
    out.u64(ids.size());
    out.raw(ids.data(), 8 * ids.size());
    for (auto name : names)
      out.u64(name.size());
    for (auto name : names)
      out.raw(name.data(), name.size());
  }
};

/// A map entry (key = 1, value = 2) of a plane's metadata map: the key and the
/// `name` (field 2) of the value message.
void readMapEntry(Reader entry, NameTable &table) {
  int64_t key = 0;
  std::string_view name;
  while (!entry.done()) {
    auto [field, wire] = entry.tag();
    if (field == 1 && wire == 0) {
      key = int64_t(entry.varint());
    } else if (field == 2 && wire == 2) {
      Reader value = entry.bytes();
      name = {};
      while (!value.done()) {
        auto [inner, innerWire] = value.tag();
        if (inner == 2 && innerWire == 2)
          name = value.bytes().view();
        else
          value.skip(inner, innerWire);
      }
    } else {
      entry.skip(field, wire);
    }
  }
  table.set(key, name);
}

/// What a stat's metadata id means for decoding.
enum class StatRole : uint8_t {
  Kept,
  Producer,
  ProducerType,
  Consumer,
  ConsumerType
};

/// Columns of one chunk of a line's events, and their stats.
struct LineChunk {
  std::vector<int64_t> metadataId, start, duration;
  std::vector<int64_t> flowEvent, flowRole, flowType, flowId;
  std::vector<int64_t> statEvent, statId, statValue;
  std::vector<uint8_t> statKind;
  std::vector<std::string_view> statPayload;

  /// Empties every column and keeps its memory: the next chunk reuses the
  /// pages instead of faulting in fresh ones.
  void clear() {
    for (auto *column : {&metadataId, &start, &duration, &flowEvent, &flowRole,
                         &flowType, &flowId, &statEvent, &statId, &statValue})
      column->clear();
    statKind.clear();
    statPayload.clear();
  }
};

class Decoder {
public:
  Decoder(Output &out) : out(out) {}

  /// Decodes the XSpace in [begin, end) (all of it, or throws).
  void run(const uint8_t *begin, const uint8_t *end, bool haveBase,
           int64_t base) {
    std::vector<Reader> planes;
    std::vector<std::string_view> hosts;
    Reader space(begin, end);
    while (!space.done()) {
      auto [field, wire] = space.tag();
      if (field == 1 && wire == 2)
        planes.push_back(space.bytes());
      else if (field == 4 && wire == 2)
        hosts.push_back(space.bytes().view());
      else
        space.skip(field, wire);
    }
    if (!haveBase)
      base = earliestLine(planes);
    out.record("BASE", 8);
    out.u64(uint64_t(base));
    for (auto host : hosts) {
      out.record("HOST", host.size());
      out.raw(host.data(), host.size());
    }
    for (Reader plane : planes)
      decodePlane(plane, base);
    out.record("DONE", 8);
    out.u64(planes.size());
  }

private:
  /// The smallest `timestamp_ns` of any line (0 without lines).
  static int64_t earliestLine(const std::vector<Reader> &planes) {
    bool any = false;
    int64_t best = 0;
    for (Reader plane : planes) {
      while (!plane.done()) {
        auto [field, wire] = plane.tag();
        if (field != 3 || wire != 2) {
          plane.skip(field, wire);
          continue;
        }
        Reader line = plane.bytes();
        int64_t stamp = 0;
        while (!line.done()) {
          auto [inner, innerWire] = line.tag();
          if (inner == 3 && innerWire == 0)
            stamp = int64_t(line.varint());
          else
            line.skip(inner, innerWire);
        }
        best = any ? std::min(best, stamp) : stamp;
        any = true;
      }
    }
    return best;
  }

  void decodePlane(Reader plane, int64_t base) {
    Reader whole = plane;
    std::string_view name;
    std::vector<Reader> lines;
    NameTable events, stats;
    while (!plane.done()) {
      auto [field, wire] = plane.tag();
      if (field == 2 && wire == 2)
        name = plane.bytes().view();
      else if (field == 3 && wire == 2)
        lines.push_back(plane.bytes());
      else if (field == 4 && wire == 2)
        readMapEntry(plane.bytes(), events);
      else if (field == 5 && wire == 2)
        readMapEntry(plane.bytes(), stats);
      else
        plane.skip(field, wire);
    }
    out.record("PLAN", name.size());
    out.raw(name.data(), name.size());
    if (name == "/host:metadata") {
      std::string_view bytes = whole.view();
      out.record("META", bytes.size());
      out.raw(bytes.data(), bytes.size());
      return;
    }
    events.write(out, "EMET");
    stats.write(out, "SMET");
    roles.clear();
    for (size_t i = 0; i < stats.ids.size(); ++i) {
      std::string_view stat = stats.names[i];
      StatRole role = stat == "_p"    ? StatRole::Producer
                      : stat == "_pt" ? StatRole::ProducerType
                      : stat == "_c"  ? StatRole::Consumer
                      : stat == "_ct" ? StatRole::ConsumerType
                                      : StatRole::Kept;
      roles[stats.ids[i]] = role;
    }
    for (Reader line : lines)
      decodeLine(line, base);
  }

  void decodeLine(Reader line, int64_t base) {
    std::string_view name, displayName;
    int64_t stamp = 0;
    std::vector<Reader> &events = lineEvents; // reused: lines can be long
    events.clear();
    const uint8_t *first = line.position();
    while (!line.done()) {
      auto [field, wire] = line.tag();
      if (field == 2 && wire == 2)
        name = line.bytes().view();
      else if (field == 11 && wire == 2)
        displayName = line.bytes().view();
      else if (field == 3 && wire == 0)
        stamp = int64_t(line.varint());
      else if (field == 4 && wire == 2)
        events.push_back(line.bytes());
      else
        line.skip(field, wire);
    }
    if (events.empty())
      return;
    std::string_view shown = displayName.empty() ? name : displayName;
    int64_t shift = int64_t(uint64_t(stamp - base) * 1000);
    chunk.clear();
    for (Reader event : events) {
      decodeEvent(event, shift);
      if (chunk.start.size() == kChunkEvents) {
        writeChunk(shown);
        chunk.clear();
      }
    }
    if (!chunk.start.empty())
      writeChunk(shown);
    release(first, line.position());
  }

  void decodeEvent(Reader event, int64_t shift) {
    int64_t index = int64_t(chunk.start.size());
    int64_t metadataId = 0, offset = 0, duration = 0;
    bool producer = false, consumer = false;
    int64_t producerId = 0, producerType = 0, consumerId = 0, consumerType = 0;
    while (!event.done()) {
      auto [field, wire] = event.tag();
      if (field == 1 && wire == 0) {
        metadataId = int64_t(event.varint());
      } else if (field == 2 && wire == 0) {
        offset = int64_t(event.varint());
      } else if (field == 5 && wire == 0) {
        event.varint();
        offset = 0; // num_occurrences shares offset_ps's oneof
      } else if (field == 3 && wire == 0) {
        duration = int64_t(event.varint());
      } else if (field == 4 && wire == 2) {
        Stat stat = decodeStat(event.bytes());
        auto found = roles.find(stat.id);
        StatRole role = found == roles.end() ? StatRole::Kept : found->second;
        int64_t integer = stat.isInteger() ? stat.value : 0;
        switch (role) {
        case StatRole::Kept:
          chunk.statEvent.push_back(index);
          chunk.statId.push_back(stat.id);
          chunk.statValue.push_back(stat.value);
          chunk.statKind.push_back(stat.kind);
          chunk.statPayload.push_back(stat.payload);
          break;
        case StatRole::Producer:
          producer = true;
          producerId = integer;
          break;
        case StatRole::Consumer:
          consumer = true;
          consumerId = integer;
          break;
        case StatRole::ProducerType:
          producerType = integer;
          break;
        case StatRole::ConsumerType:
          consumerType = integer;
          break;
        }
      } else {
        event.skip(field, wire);
      }
    }
    chunk.metadataId.push_back(metadataId);
    chunk.start.push_back(int64_t(uint64_t(offset) + uint64_t(shift)));
    chunk.duration.push_back(duration);
    if (producer)
      addFlow(index, 0, producerType, producerId);
    if (consumer)
      addFlow(index, 1, consumerType, consumerId);
  }

  void addFlow(int64_t index, int64_t role, int64_t type, int64_t id) {
    chunk.flowEvent.push_back(index);
    chunk.flowRole.push_back(role);
    chunk.flowType.push_back(type);
    chunk.flowId.push_back(id);
  }

  struct Stat {
    int64_t id = 0;
    uint8_t kind = 0;
    int64_t value = 0;
    std::string_view payload;
    bool isInteger() const { return kind == 2 || kind == 3; }
  };

  /// One XStat; the oneof `value` keeps the last field set, as protobuf does.
  static Stat decodeStat(Reader reader) {
    Stat stat;
    while (!reader.done()) {
      auto [field, wire] = reader.tag();
      if (field == 1 && wire == 0) {
        stat.id = int64_t(reader.varint());
      } else if (field == 2 && wire == 1) {
        stat = {stat.id, 1, int64_t(reader.fixed(8)), {}};
      } else if ((field == 3 || field == 4 || field == 7) && wire == 0) {
        uint8_t kind = field == 3 ? 2 : field == 4 ? 3 : 6;
        stat = {stat.id, kind, int64_t(reader.varint()), {}};
      } else if ((field == 5 || field == 6) && wire == 2) {
        stat = {stat.id, uint8_t(field == 5 ? 4 : 5), 0, reader.bytes().view()};
      } else {
        reader.skip(field, wire);
      }
    }
    return stat;
  }

  void writeChunk(std::string_view name) {
    uint64_t n = chunk.start.size();
    out.record("LINE", 16 + name.size() + 24 * n);
    out.u64(n);
    out.u64(name.size());
    out.raw(name.data(), name.size());
    out.raw(chunk.metadataId.data(), 8 * n);
    out.raw(chunk.start.data(), 8 * n);
    out.raw(chunk.duration.data(), 8 * n);
    uint64_t flows = chunk.flowEvent.size();
    if (flows) {
      out.record("FLOW", 8 + 32 * flows);
      out.u64(flows);
      for (auto *column :
           {&chunk.flowEvent, &chunk.flowRole, &chunk.flowType, &chunk.flowId})
        out.raw(column->data(), 8 * flows);
    }
    uint64_t stats = chunk.statEvent.size();
    if (stats) {
      uint64_t size = 8 + 33 * stats;
      for (auto payload : chunk.statPayload)
        size += payload.size();
      out.record("STAT", size);
      out.u64(stats);
      out.raw(chunk.statEvent.data(), 8 * stats);
      out.raw(chunk.statId.data(), 8 * stats);
      out.raw(chunk.statValue.data(), 8 * stats);
      out.raw(chunk.statKind.data(), stats);
      for (auto payload : chunk.statPayload)
        out.u64(payload.size());
      for (auto payload : chunk.statPayload)
        out.raw(payload.data(), payload.size());
    }
  }

  /// Drops decoded pages of the mapped file from memory (they are not read
  /// again).
  static void release(const uint8_t *begin, const uint8_t *end) {
    static const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
    uintptr_t low = (uintptr_t(begin) + page - 1) & ~(page - 1);
    uintptr_t high = uintptr_t(end) & ~(page - 1);
    if (high > low)
      madvise(reinterpret_cast<void *>(low), high - low, MADV_DONTNEED);
  }

  Output &out;
  std::unordered_map<int64_t, StatRole> roles;
  LineChunk chunk;
  std::vector<Reader> lineEvents;
};

} // namespace

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: xplane-columns FILE [BASE_NS]\n");
    return 2;
  }
  int fd = open(argv[1], O_RDONLY);
  struct stat info;
  if (fd < 0 || fstat(fd, &info) != 0) {
    std::fprintf(stderr, "cannot open: %s\n", std::strerror(errno));
    return 1;
  }
  size_t size = size_t(info.st_size);
  const uint8_t *data = nullptr;
  if (size) {
    void *mapped = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapped == MAP_FAILED) {
      std::fprintf(stderr, "cannot map: %s\n", std::strerror(errno));
      return 1;
    }
    madvise(mapped, size, MADV_SEQUENTIAL);
    data = static_cast<const uint8_t *>(mapped);
  }
  try {
    Output out;
    Decoder decoder(out);
    decoder.run(data, data + size, argc == 3,
                argc == 3 ? std::atoll(argv[2]) : 0);
    out.flush();
  } catch (const DecodeError &error) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s\n", error.what.c_str());
    return 1;
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}
