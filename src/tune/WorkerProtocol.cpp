#include "tune/WorkerProtocol.h"

#include "support/InputFile.h"

#include <cmath>
#include <limits>

#include <errno.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

namespace rtcg::worker {

using nlohmann::json;

namespace {

void putLe(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}

uint64_t getLe(std::string_view in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(uint8_t(in[at + i])) << (8 * i);
  return v;
}

json launchToJson(const LaunchSpec& l) {
  json maps = json::array();
  for (const TensorMapSpec& t : l.tensorMaps) {
    json m = {{"param", t.param},      {"type", int(t.type)},        {"inner", t.inner},      {"outer", t.outer},
              {"pitch", t.pitchBytes}, {"boxInner", t.boxInner}, {"boxOuter", t.boxOuter}};
    if (!t.symbol.empty()) m["symbol"] = t.symbol;  // a kernel-local array's
    maps.push_back(std::move(m));
  }
  return {{"function", l.function}, {"grid", l.grid}, {"block", l.block}, {"smem", l.dynamicSharedBytes},
          {"params", l.params},     {"tensorMaps", maps}};
}

// Typed member access with messages that name the message type and member.
template <class T>
T member(const json& j, const char* type, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) throw ProtocolError(fmt::format("'{}' message without member '{}'", type, name));
  try {
    return it->template get<T>();
  } catch (const json::exception& e) {
    throw ProtocolError(fmt::format("'{}' message: member '{}' has the wrong type ({})", type, name, e.what()));
  }
}

// JSON has no NaN or infinity (nlohmann writes them as null), yet a wrong result's relative
// error is often infinite (NaN in the output): such values travel as the strings "inf", "-inf"
// and "nan".
json finiteOrText(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double numberOrText(const json& j, const char* type, const char* name) {
  auto it = j.find(name);
  if (it != j.end() && it->is_string()) {
    const std::string& text = it->get_ref<const std::string&>();
    if (text == "inf") return std::numeric_limits<double>::infinity();
    if (text == "-inf") return -std::numeric_limits<double>::infinity();
    if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  return member<double>(j, type, name);
}


LaunchSpec launchFromJson(const json& j) {
  if (!j.is_object()) throw ProtocolError("'candidate' message: a launch is not an object");
  LaunchSpec l;
  l.function = member<std::string>(j, "launch", "function");
  l.grid = member<std::array<uint32_t, 3>>(j, "launch", "grid");
  l.block = member<std::array<uint32_t, 3>>(j, "launch", "block");
  l.dynamicSharedBytes = member<uint32_t>(j, "launch", "smem");
  l.params = member<std::vector<int>>(j, "launch", "params");
  // TMA tensor maps (optional: launches without them may leave the member out).
  const json maps = j.contains("tensorMaps") ? member<json>(j, "launch", "tensorMaps") : json::array();
  if (!maps.is_array()) throw ProtocolError("'launch' message: member 'tensorMaps' is not an array");
  for (const json& t : maps) {
    TensorMapSpec m;
    m.param = member<int>(t, "tensor map", "param");
    m.type = ScalarType(member<int>(t, "tensor map", "type"));
    m.inner = member<uint64_t>(t, "tensor map", "inner");
    m.outer = member<uint64_t>(t, "tensor map", "outer");
    m.pitchBytes = member<uint64_t>(t, "tensor map", "pitch");
    m.boxInner = member<uint32_t>(t, "tensor map", "boxInner");
    m.boxOuter = member<uint32_t>(t, "tensor map", "boxOuter");
    if (t.contains("symbol")) m.symbol = member<std::string>(t, "tensor map", "symbol");
    l.tensorMaps.push_back(m);
  }
  return l;
}

Outcome outcomeFromName(const std::string& s) {
  for (Outcome o : {Outcome::Verified, Outcome::WrongResult, Outcome::LaunchFailed, Outcome::Faulted})
    if (s == outcomeName(o)) return o;
  throw ProtocolError(fmt::format("'result' message: unknown outcome '{}'", s));
}

struct ToJson {
  json operator()(const SetupMessage& m) const {
    json inputs = json::array();
    for (const InputChecksum& c : m.inputs) inputs.push_back({{"name", c.name}, {"sum", c.sum}, {"sumsq", c.sumSquares}});
    return {{"fileName", m.fileName}, {"source", m.source},     {"kernel", m.kernel},
            {"sizes", m.sizes},       {"scalars", m.scalars},   {"seed", m.seed},
            {"inputFiles", m.inputFiles},
            {"inputs", inputs},       {"reference", m.referencePath}, {"device", m.deviceOrdinal},
            {"warmup", m.warmup},     {"repeats", m.repeats},   {"flushL2", m.flushL2},
            {"timingBudget", m.timingBudgetSeconds}, {"precision", m.precision}};
  }
  json operator()(const ReadyMessage& m) const {
    return {{"device", m.device}, {"arch", m.arch}, {"driver", m.driverVersion}, {"setupSeconds", m.setupSeconds}};
  }
  json operator()(const ErrorMessage& m) const { return {{"message", m.message}, {"noDevice", m.noDevice}}; }
  json operator()(const CandidateMessage& m) const {
    json launches = json::array();
    for (const LaunchSpec& l : m.launches) launches.push_back(launchToJson(l));
    return {{"id", m.id}, {"launches", launches}, {"raceMs", m.raceMs}, {"raceTimedMs", m.raceTimedMs},
            {"raceCloseMs", m.raceCloseMs}};
  }
  json operator()(const ProgressMessage& m) const {
    return {{"id", m.id}, {"firstLaunchMs", m.firstLaunchMs}, {"warmup", m.warmup}, {"repeats", m.repeats}};
  }
  json operator()(const ResultMessage& m) const {
    return {{"id", m.id},
            {"outcome", outcomeName(m.outcome)},
            {"reason", m.reason},
            {"medianMs", m.medianMs},
            {"minMs", m.minMs},
            {"repeats", m.repeats},
            {"relativeError", finiteOrText(m.relativeError)},
            {"registers", m.registers},
            {"localBytes", m.localBytes},
            {"sharedBytes", m.sharedBytes},
            {"occupancy", m.occupancy},
            {"launchMs", m.launchMs},
            {"fatal", m.fatal}};
  }
  json operator()(const QuitMessage&) const { return json::object(); }
};

Message fromJson(const json& j, std::string blob) {
  if (!j.is_object()) throw ProtocolError("the message is not a JSON object");
  std::string type = member<std::string>(j, "message", "type");
  const char* t = type.c_str();
  if (type != "candidate" && !blob.empty())
    throw ProtocolError(fmt::format("'{}' message with {} unexpected bytes of binary data", type, blob.size()));
  if (type == "setup") {
    SetupMessage m;
    m.fileName = member<std::string>(j, t, "fileName");
    m.source = member<std::string>(j, t, "source");
    m.kernel = member<std::string>(j, t, "kernel");
    m.sizes = member<std::map<std::string, int64_t>>(j, t, "sizes");
    m.scalars = member<std::map<std::string, double>>(j, t, "scalars");
    m.seed = member<uint64_t>(j, t, "seed");
    m.inputFiles = member<std::map<std::string, std::string>>(j, t, "inputFiles");
    json inputs = member<json>(j, t, "inputs");
    if (!inputs.is_array()) throw ProtocolError("'setup' message: member 'inputs' is not an array");
    for (const json& c : inputs)
      m.inputs.push_back({member<std::string>(c, "input checksum", "name"), member<double>(c, "input checksum", "sum"),
                          member<double>(c, "input checksum", "sumsq")});
    m.referencePath = member<std::string>(j, t, "reference");
    m.deviceOrdinal = member<int>(j, t, "device");
    m.warmup = member<int>(j, t, "warmup");
    m.repeats = member<int>(j, t, "repeats");
    m.flushL2 = member<bool>(j, t, "flushL2");
    m.timingBudgetSeconds = member<double>(j, t, "timingBudget");
    m.precision = member<std::string>(j, t, "precision");
    if (!parsePrecision(m.precision))
      throw ProtocolError(fmt::format("'setup' message: unknown precision '{}'", m.precision));
    return m;
  }
  if (type == "ready")
    return ReadyMessage{member<std::string>(j, t, "device"), member<std::string>(j, t, "arch"),
                        member<int>(j, t, "driver"), member<double>(j, t, "setupSeconds")};
  if (type == "error") return ErrorMessage{member<std::string>(j, t, "message"), member<bool>(j, t, "noDevice")};
  if (type == "candidate") {
    CandidateMessage m;
    m.id = member<int64_t>(j, t, "id");
    json launches = member<json>(j, t, "launches");
    if (!launches.is_array()) throw ProtocolError("'candidate' message: member 'launches' is not an array");
    for (const json& l : launches) m.launches.push_back(launchFromJson(l));
    m.raceMs = member<double>(j, t, "raceMs");
    m.raceTimedMs = member<double>(j, t, "raceTimedMs");
    m.raceCloseMs = member<double>(j, t, "raceCloseMs");
    m.cubin = std::move(blob);
    return m;
  }
  if (type == "progress")
    return ProgressMessage{member<int64_t>(j, t, "id"), member<double>(j, t, "firstLaunchMs"),
                           member<int>(j, t, "warmup"), member<int>(j, t, "repeats")};
  if (type == "result") {
    ResultMessage m;
    m.id = member<int64_t>(j, t, "id");
    m.outcome = outcomeFromName(member<std::string>(j, t, "outcome"));
    m.reason = member<std::string>(j, t, "reason");
    m.medianMs = member<double>(j, t, "medianMs");
    m.minMs = member<double>(j, t, "minMs");
    m.repeats = member<int>(j, t, "repeats");
    m.relativeError = numberOrText(j, t, "relativeError");
    m.registers = member<int>(j, t, "registers");
    m.localBytes = member<int>(j, t, "localBytes");
    m.sharedBytes = member<int>(j, t, "sharedBytes");
    m.occupancy = member<double>(j, t, "occupancy");
    if (j.contains("launchMs")) m.launchMs = member<std::vector<double>>(j, t, "launchMs");
    m.fatal = member<bool>(j, t, "fatal");
    return m;
  }
  if (type == "quit") return QuitMessage{};
  throw ProtocolError(fmt::format("unknown message type '{}'", type));
}

// A printable rendering of a few bytes of garbage for error messages.
std::string printable(std::string_view bytes) {
  std::string out;
  for (char c : bytes) {
    unsigned char u = static_cast<unsigned char>(c);
    out += (u >= 32 && u < 127) ? std::string(1, c) : fmt::format("\\x{:02x}", u);
  }
  return out;
}

}  // namespace

const char* outcomeName(Outcome o) {
  switch (o) {
    case Outcome::Verified: return "verified";
    case Outcome::WrongResult: return "wrong";
    case Outcome::LaunchFailed: return "launch_failed";
    case Outcome::Faulted: return "faulted";
  }
  return "?";
}

const char* messageType(const Message& m) {
  static const char* const names[] = {"setup", "ready", "error", "candidate", "progress", "result", "quit"};
  return names[m.index()];
}

std::string encode(const Message& m) {
  json j = std::visit(ToJson{}, m);
  j["type"] = messageType(m);
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  const std::string* blob = nullptr;
  if (auto* c = std::get_if<CandidateMessage>(&m)) blob = &c->cubin;
  if (text.size() > kMaxJsonBytes) throw Error(fmt::format("'{}' message too large ({} bytes)", messageType(m), text.size()));
  std::string out = "RTCG";
  putLe(out, text.size(), 4);
  putLe(out, blob ? blob->size() : 0, 8);
  out += text;
  if (blob) out += *blob;
  return out;
}

std::optional<Message> decode(std::string_view buffer, size_t& consumed) {
  size_t magicBytes = std::min<size_t>(buffer.size(), 4);
  if (buffer.substr(0, magicBytes) != std::string_view("RTCG").substr(0, magicBytes))
    throw ProtocolError(fmt::format("bad frame start '{}' (expected 'RTCG')", printable(buffer.substr(0, 16))));
  if (buffer.size() < kHeaderBytes) return std::nullopt;
  uint64_t jsonBytes = getLe(buffer, 4, 4), blobBytes = getLe(buffer, 8, 8);
  if (jsonBytes == 0 || jsonBytes > kMaxJsonBytes)
    throw ProtocolError(fmt::format("bad frame: {} bytes of JSON (1 to {} allowed)", jsonBytes, kMaxJsonBytes));
  if (blobBytes > kMaxBlobBytes)
    throw ProtocolError(fmt::format("bad frame: {} bytes of binary data (at most {} allowed)", blobBytes, kMaxBlobBytes));
  if (buffer.size() < kHeaderBytes + jsonBytes + blobBytes) return std::nullopt;
  json j = json::parse(buffer.substr(kHeaderBytes, jsonBytes), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw ProtocolError("bad frame: the message is not valid JSON");
  Message m = fromJson(j, std::string(buffer.substr(kHeaderBytes + jsonBytes, blobBytes)));
  consumed = kHeaderBytes + jsonBytes + blobBytes;
  return m;
}

bool Channel::send(const Message& m) {
  std::string frame = encode(m);
  size_t done = 0;
  while (done < frame.size()) {
    ssize_t n = ::send(fd_, frame.data() + done, frame.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = ::write(fd_, frame.data() + done, frame.size() - done);  // a pipe
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE || errno == ECONNRESET) return false;
      throw Error(fmt::format("cannot send a '{}' message: {}", messageType(m), std::strerror(errno)));
    }
    done += size_t(n);
  }
  return true;
}

Channel::Received Channel::receive(double timeoutSeconds) {
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                     timeoutSeconds < 0 ? 0 : timeoutSeconds));
  for (;;) {
    size_t consumed = 0;
    if (!buffer_.empty()) {
      if (std::optional<Message> m = decode(buffer_, consumed)) {
        buffer_.erase(0, consumed);
        return {Status::Message, std::move(m)};
      }
    }
    int waitMs = -1;
    if (timeoutSeconds >= 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return {Status::Timeout, std::nullopt};
      waitMs = int(std::min<int64_t>(left, 1 << 30));
    }
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, waitMs);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw Error(fmt::format("cannot wait for the worker: {}", std::strerror(errno)));
    }
    if (r == 0) continue;  // the deadline check above reports the timeout
    char chunk[65536];
    ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == ECONNRESET) n = 0;
      else throw Error(fmt::format("cannot read from the worker: {}", std::strerror(errno)));
    }
    if (n == 0) {
      if (!buffer_.empty())
        throw ProtocolError(fmt::format("the connection closed in the middle of a message ({} bytes of it read)",
                                        buffer_.size()));
      return {Status::Eof, std::nullopt};
    }
    buffer_.append(chunk, size_t(n));
  }
}

namespace {

// A mask's checked elements as (start, length) runs, ascending.
std::vector<std::pair<uint64_t, uint64_t>> checkedRuns(const std::vector<uint8_t>& checked) {
  std::vector<std::pair<uint64_t, uint64_t>> runs;
  for (size_t k = 0; k < checked.size();) {
    if (!checked[k]) {
      ++k;
      continue;
    }
    size_t end = k;
    while (end < checked.size() && checked[end]) ++end;
    runs.emplace_back(k, end - k);
    k = end;
  }
  return runs;
}

// Eight bytes a value, little endian: a copy where the machine is.
void putValues(std::string& out, const void* values, size_t count) {
  if constexpr (std::endian::native == std::endian::little) {
    out.append(static_cast<const char*>(values), count * 8);
  } else {
    const auto* v = static_cast<const uint64_t*>(values);
    for (size_t k = 0; k < count; ++k) putLe(out, v[k], 8);
  }
}

void getValues(std::string_view in, size_t at, void* values, size_t count) {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(values, in.data() + at, count * 8);
  } else {
    auto* v = static_cast<uint64_t*>(values);
    for (size_t k = 0; k < count; ++k) v[k] = getLe(in, at + 8 * k, 8);
  }
}

}  // namespace

void writeReferenceFile(const std::string& path, const std::vector<ReferenceArray>& outputs) {
  static_assert(sizeof(double) == 8 && sizeof(int64_t) == 8);
  for (const ReferenceArray& a : outputs) {
    if (!a.integers.empty() && !a.values.empty())
      throw Error(fmt::format("reference output {}: both exact integers and float values", a.param));
    const size_t count = a.integers.empty() ? a.values.size() : a.integers.size();
    if (!a.checked.empty() && a.checked.size() != count)
      throw Error(fmt::format("reference output {}: a mask of {} elements for {} values", a.param, a.checked.size(),
                              count));
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(fmt::format("cannot write the reference file '{}': {}", path, std::strerror(errno)));
  // A full float reference keeps the first format, byte for byte.
  const bool sampled = std::any_of(outputs.begin(), outputs.end(), [](const ReferenceArray& a) { return !a.checked.empty(); });
  const bool integers = std::any_of(outputs.begin(), outputs.end(), [](const ReferenceArray& a) { return !a.integers.empty(); });
  const bool runsFormat = sampled || integers;
  // The bytes between the values gather in `head`; the values go to the file from their arrays (a
  // large output's are hundreds of MB, not copied first).
  std::string head = runsFormat ? "RTCGREF4" : "RTCGREF1";
  auto values = [&](const void* at, size_t count) {
    if constexpr (std::endian::native == std::endian::little) {
      out.write(head.data(), std::streamsize(head.size()));
      out.write(static_cast<const char*>(at), std::streamsize(count * 8));
      head.clear();
    } else {
      putValues(head, at, count);
    }
  };
  putLe(head, outputs.size(), 4);
  for (const ReferenceArray& a : outputs) {
    const bool exact = !a.integers.empty();
    const size_t count = exact ? a.integers.size() : a.values.size();
    const void* data = exact ? static_cast<const void*>(a.integers.data()) : static_cast<const void*>(a.values.data());
    putLe(head, uint32_t(a.param), 4);
    if (runsFormat) head += char(exact ? 1 : 0);
    putLe(head, count, 8);
    if (!runsFormat || a.checked.empty()) {
      if (runsFormat) head += char(0);
      values(data, count);
      continue;
    }
    // A sample: only the checked elements' values travel (a sampled GEMM's are 1/64 of them).
    std::vector<std::pair<uint64_t, uint64_t>> runs = checkedRuns(a.checked);
    head += char(1);
    putLe(head, runs.size(), 8);
    for (const auto& [start, length] : runs) putLe(head, start, 8), putLe(head, length, 8);
    for (const auto& [start, length] : runs) values(static_cast<const char*>(data) + start * 8, length);
  }
  out.write(head.data(), std::streamsize(head.size()));
  out.flush();
  if (!out) throw Error(fmt::format("cannot write the reference file '{}': {}", path, std::strerror(errno)));
}

std::vector<ReferenceArray> readReferenceFile(const std::string& path) {
  // Read in one pass into a text of the file's size: hundreds of MB for a large output (an
  // istreambuf_iterator's byte-by-byte read took seconds of the first candidate's measurement).
  std::string data;
  try {
    data = readInputFile(path, SIZE_MAX);
  } catch (const InputFileError& e) {
    throw Error(fmt::format("cannot read the reference file '{}': {}", path, e.reason()));
  }
  auto bad = [&](const std::string& why) {
    return Error(fmt::format("reference file '{}' is malformed: {}", path, why));
  };
  const int version = data.size() < 12 || data.compare(0, 7, "RTCGREF") != 0 ? 0 : data[7] - '0';
  if (version != 1 && version != 4) throw bad("no 'RTCGREF1' or 'RTCGREF4' header");
  const bool runsFormat = version == 4;
  uint64_t count = getLe(data, 8, 4);
  size_t at = 12;
  std::vector<ReferenceArray> out;
  for (uint64_t i = 0; i < count; ++i) {
    if (data.size() - at < (runsFormat ? 14u : 12u)) throw bad(fmt::format("truncated in the header of output {}", i));
    ReferenceArray a;
    a.param = int(int32_t(uint32_t(getLe(data, at, 4))));
    at += 4;
    const uint8_t exact = runsFormat ? uint8_t(data[at++]) : 0;
    if (exact > 1) throw bad(fmt::format("output {} has integer flag {} (0 or 1)", i, exact));
    const uint64_t n = getLe(data, at, 8);
    at += 8;
    const uint8_t masked = runsFormat ? uint8_t(data[at++]) : 0;
    if (masked > 1) throw bad(fmt::format("output {} has mask flag {} (0 or 1)", i, masked));
    std::vector<std::pair<uint64_t, uint64_t>> runs;
    if (masked) {
      if (data.size() - at < 8) throw bad(fmt::format("truncated before the runs of output {}", i));
      const uint64_t r = getLe(data, at, 8);
      at += 8;
      if (r > (data.size() - at) / 16) throw bad(fmt::format("output {} claims {} runs; the file is shorter", i, r));
      uint64_t next = 0;  // runs ascend, apart, within the output
      for (uint64_t k = 0; k < r; ++k, at += 16) {
        const uint64_t start = getLe(data, at, 8), length = getLe(data, at + 8, 8);
        if (start < next || length == 0 || length > n || start > n - length)
          throw bad(fmt::format("the mask of output {} has a run {}+{} outside its {} elements or out of order", i,
                                start, length, n));
        runs.emplace_back(start, length);
        next = start + length + 1;
      }
    } else {
      runs.emplace_back(0, n);
    }
    uint64_t carried = 0;
    for (const auto& run : runs) carried += run.second;
    if (carried > (data.size() - at) / 8) throw bad(fmt::format("output {} claims {} values; the file is shorter", i, carried));
    // Unchecked elements: NaN (an integer output's 0), never read as reference values.
    if (exact) a.integers.assign(n, 0);
    else a.values.assign(n, std::numeric_limits<double>::quiet_NaN());
    void* values = exact ? static_cast<void*>(a.integers.data()) : static_cast<void*>(a.values.data());
    for (const auto& [start, length] : runs) {
      getValues(data, at, static_cast<char*>(values) + start * 8, length);
      at += length * 8;
    }
    if (masked) {
      a.checked.assign(n, 0);
      for (const auto& [start, length] : runs)
        std::fill(a.checked.begin() + std::ptrdiff_t(start), a.checked.begin() + std::ptrdiff_t(start + length), 1);
    }
    out.push_back(std::move(a));
  }
  if (at != data.size()) throw bad(fmt::format("{} bytes after the last output", data.size() - at));
  return out;
}

}  // namespace rtcg::worker
