// The worker protocol: every message survives encode/decode; partial, truncated and garbled input
// gives a ProtocolError with a clear message (never a crash); the channel over a socket; the
// reference file.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <filesystem>
#include <fstream>

#include "tune/WorkerProtocol.h"

using namespace rtcg;
using namespace rtcg::worker;

namespace {

SetupMessage sampleSetup() {
  SetupMessage s;
  s.fileName = "k.rtcg";
  s.source = "kernel k(n: int, out z: f32[n]) { for i in 0..n { z[i] = 1.0; } }\n\"quoted\" \xc3\xa9";
  s.kernel = "k";
  s.sizes = {{"n", 500}, {"m", 3}};
  s.scalars = {{"a", 0.1f}, {"b", -0.3333333333333333}};
  s.seed = 42;
  s.inputFiles = {{"rowptr", "/tmp/m rowptr.txt"}, {"col", "/tmp/col\u00e9.txt"}};
  s.inputs = {{"x", 1.25, 1e-300}, {"y", -0.0, 3.5}};
  s.referencePath = "/tmp/ref";
  s.deviceOrdinal = 1;
  s.warmup = 3;
  s.repeats = 7;
  s.flushL2 = false;
  s.timingBudgetSeconds = 1.5;
  s.precision = "tf32x3";
  return s;
}

CandidateMessage sampleCandidate() {
  CandidateMessage c;
  c.id = 17;
  LaunchSpec l;
  l.function = "k_0";
  l.grid = {4, 2, 1};
  l.block = {256, 1, 1};
  l.dynamicSharedBytes = 4096;
  l.params = {1, 2, 4};
  c.launches = {l, l};
  // The second launch passes a TMA tensor map (`mma: ... tma`).
  c.launches[1].tensorMaps = {{1, "", ScalarType::BF16, 1000, 200, 2000, 64, 128},
                              {3, "k_local_a8", ScalarType::I8, 128, 4096, 128, 128, 128}};
  c.cubin = std::string("\x7f" "ELF\0\0binary\xff", 12);
  c.raceMs = 2.5;
  c.raceTimedMs = 1.25;
  c.raceCloseMs = 1.125;
  return c;
}

ResultMessage sampleResult() {
  ResultMessage r;
  r.id = 17;
  r.outcome = Outcome::WrongResult;
  r.reason = "z: rel 1 > 1e-5";
  r.medianMs = 0.125;
  r.minMs = 0.1;
  r.repeats = 20;
  r.relativeError = 0.5;
  r.registers = 40;
  r.localBytes = 8;
  r.sharedBytes = 1024;
  r.occupancy = 0.75;
  r.launchMs = {0.5, 1.25};
  r.fatal = true;
  return r;
}

Message roundTrip(const Message& m) {
  std::string frame = encode(m);
  size_t consumed = 0;
  std::optional<Message> back = decode(frame, consumed);
  EXPECT_TRUE(back.has_value());
  EXPECT_EQ(consumed, frame.size());
  // Every proper prefix is incomplete, never an error.
  for (size_t n = 0; n < frame.size(); n += std::max<size_t>(1, frame.size() / 37)) {
    size_t c = 0;
    EXPECT_FALSE(decode(std::string_view(frame).substr(0, n), c).has_value()) << "prefix " << n;
  }
  return *back;
}

std::string frameOf(const std::string& json, const std::string& blob = "") {
  std::string f = "RTCG";
  for (int i = 0; i < 4; ++i) f.push_back(char((json.size() >> (8 * i)) & 0xff));
  for (int i = 0; i < 8; ++i) f.push_back(char((uint64_t(blob.size()) >> (8 * i)) & 0xff));
  return f + json + blob;
}

std::string decodeError(const std::string& bytes) {
  size_t consumed = 0;
  try {
    decode(bytes, consumed);
  } catch (const ProtocolError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(WorkerProtocol, SetupRoundTrips) {
  SetupMessage s = sampleSetup();
  auto back = std::get<SetupMessage>(roundTrip(s));
  EXPECT_EQ(back.fileName, s.fileName);
  EXPECT_EQ(back.source, s.source);
  EXPECT_EQ(back.kernel, s.kernel);
  EXPECT_EQ(back.sizes, s.sizes);
  EXPECT_EQ(back.scalars, s.scalars);  // doubles round-trip exactly
  EXPECT_EQ(back.seed, s.seed);
  EXPECT_EQ(back.inputFiles, s.inputFiles);
  ASSERT_EQ(back.inputs.size(), 2u);
  EXPECT_EQ(back.inputs[0].sumSquares, 1e-300);
  EXPECT_EQ(back.inputs[1].name, "y");
  EXPECT_EQ(back.referencePath, s.referencePath);
  EXPECT_EQ(back.deviceOrdinal, 1);
  EXPECT_EQ(back.warmup, 3);
  EXPECT_EQ(back.repeats, 7);
  EXPECT_FALSE(back.flushL2);
  EXPECT_EQ(back.timingBudgetSeconds, 1.5);
  EXPECT_EQ(back.precision, "tf32x3");
}

TEST(WorkerProtocol, CandidateRoundTripsWithItsCubin) {
  CandidateMessage c = sampleCandidate();
  auto back = std::get<CandidateMessage>(roundTrip(c));
  EXPECT_EQ(back.id, 17);
  EXPECT_EQ(back.raceMs, 2.5);
  EXPECT_EQ(back.raceTimedMs, 1.25);
  EXPECT_EQ(back.raceCloseMs, 1.125);
  EXPECT_EQ(back.cubin, c.cubin);
  ASSERT_EQ(back.launches.size(), 2u);
  EXPECT_EQ(back.launches[1].function, "k_0");
  EXPECT_EQ(back.launches[1].grid, c.launches[1].grid);
  EXPECT_EQ(back.launches[1].block, c.launches[1].block);
  EXPECT_EQ(back.launches[1].dynamicSharedBytes, 4096u);
  EXPECT_EQ(back.launches[1].params, c.launches[1].params);
  EXPECT_TRUE(back.launches[0].tensorMaps.empty());
  EXPECT_EQ(back.launches[1].tensorMaps, c.launches[1].tensorMaps);
}

TEST(WorkerProtocol, EveryOtherMessageRoundTrips) {
  auto ready = std::get<ReadyMessage>(roundTrip(ReadyMessage{"NVIDIA H100", "sm_90", 13000, 0.5}));
  EXPECT_EQ(ready.device, "NVIDIA H100");
  EXPECT_EQ(ready.arch, "sm_90");
  EXPECT_EQ(ready.driverVersion, 13000);
  auto err = std::get<ErrorMessage>(roundTrip(ErrorMessage{"no CUDA device", true}));
  EXPECT_EQ(err.message, "no CUDA device");
  EXPECT_TRUE(err.noDevice);
  auto prog = std::get<ProgressMessage>(roundTrip(ProgressMessage{5, 2.5, 2, 20}));
  EXPECT_EQ(prog.id, 5);
  EXPECT_EQ(prog.firstLaunchMs, 2.5);
  EXPECT_EQ(prog.repeats, 20);
  ResultMessage r = sampleResult();
  auto back = std::get<ResultMessage>(roundTrip(r));
  EXPECT_EQ(back.outcome, Outcome::WrongResult);
  EXPECT_EQ(back.reason, r.reason);
  EXPECT_EQ(back.medianMs, 0.125);
  EXPECT_EQ(back.occupancy, 0.75);
  EXPECT_EQ(back.sharedBytes, 1024);
  EXPECT_EQ(back.launchMs, (std::vector<double>{0.5, 1.25}));
  EXPECT_TRUE(back.fatal);
  // A result without per-launch times (one launch, a lost race, an older worker) has none.
  r.launchMs.clear();
  EXPECT_TRUE(std::get<ResultMessage>(roundTrip(r)).launchMs.empty());
  for (Outcome o : {Outcome::Verified, Outcome::LaunchFailed, Outcome::Faulted}) {
    r.outcome = o;
    EXPECT_EQ(std::get<ResultMessage>(roundTrip(r)).outcome, o);
  }
  EXPECT_TRUE(std::holds_alternative<QuitMessage>(roundTrip(QuitMessage{})));
}

TEST(WorkerProtocol, NonFiniteRelativeErrorsSurviveTheTrip) {
  // A wrong result with NaN in its output has an infinite relative error; JSON cannot carry it
  // as a number, and the reply must still be read as a wrong result, not as a broken worker.
  ResultMessage r = sampleResult();
  for (double v : {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
    r.relativeError = v;
    EXPECT_EQ(std::get<ResultMessage>(roundTrip(r)).relativeError, v);
  }
  r.relativeError = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(std::get<ResultMessage>(roundTrip(r)).relativeError));
}

TEST(WorkerProtocol, TwoFramesInOneBuffer) {
  std::string bytes = encode(QuitMessage{}) + encode(ProgressMessage{1, 1, 1, 1});
  size_t consumed = 0;
  auto first = decode(bytes, consumed);
  ASSERT_TRUE(first);
  EXPECT_TRUE(std::holds_alternative<QuitMessage>(*first));
  auto second = decode(std::string_view(bytes).substr(consumed), consumed);
  ASSERT_TRUE(second);
  EXPECT_TRUE(std::holds_alternative<ProgressMessage>(*second));
}

TEST(WorkerProtocol, GarbageIsAClearError) {
  EXPECT_NE(decodeError("hello world, this is not a frame").find("bad frame start 'hello world"), std::string::npos);
  EXPECT_NE(decodeError("X").find("bad frame start"), std::string::npos);
  EXPECT_NE(decodeError(std::string("RTCG\xff\xff\xff\xff garbage and more", 25)).find("bytes of JSON"),
            std::string::npos);
  EXPECT_NE(decodeError(std::string("RTCG\0\0\0\0\0\0\0\0", 12) + "xxxx").find("0 bytes of JSON"), std::string::npos);
  EXPECT_NE(decodeError(frameOf("{not json")).find("not valid JSON"), std::string::npos);
  EXPECT_NE(decodeError(frameOf("[1,2]")).find("not a JSON object"), std::string::npos);
  EXPECT_NE(decodeError(frameOf(R"({"x":1})")).find("without member 'type'"), std::string::npos);
  EXPECT_NE(decodeError(frameOf(R"({"type":"bogus"})")).find("unknown message type 'bogus'"), std::string::npos);
  EXPECT_NE(decodeError(frameOf(R"({"type":"progress","id":1})")).find("'progress' message without member"),
            std::string::npos);
  EXPECT_NE(decodeError(frameOf(R"({"type":"progress","id":"one","firstLaunchMs":1,"warmup":1,"repeats":1})"))
                .find("member 'id' has the wrong type"),
            std::string::npos);
  EXPECT_NE(decodeError(frameOf(R"({"type":"quit"})", "blob")).find("unexpected bytes"), std::string::npos);
  EXPECT_NE(decodeError(frameOf(R"({"type":"candidate","id":1,"launches":[{"function":"f"}]})"))
                .find("'launch' message without member 'grid'"),
            std::string::npos);
  std::string result = encode(sampleResult());
  std::string bad = frameOf(R"({"type":"result","id":1,"outcome":"exploded","reason":"","medianMs":0,"minMs":0,)"
                            R"("repeats":0,"relativeError":0,"registers":0,"localBytes":0,"sharedBytes":0,)"
                            R"("occupancy":0,"fatal":false})");
  EXPECT_NE(decodeError(bad).find("unknown outcome 'exploded'"), std::string::npos);
}

TEST(WorkerProtocol, RandomBytesNeverCrash) {
  std::string frame = encode(sampleCandidate());
  uint64_t state = 12345;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bytes = frame;
    for (int k = 0; k < 3; ++k) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      bytes[(state >> 33) % bytes.size()] = char(state >> 13);
    }
    size_t consumed = 0;
    try {
      decode(bytes, consumed);
    } catch (const ProtocolError&) {
    }
  }
}

TEST(WorkerChannel, SendsAndReceivesOverASocket) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  Channel a(sv[0]), b(sv[1]);
  ASSERT_TRUE(a.send(sampleCandidate()));
  ASSERT_TRUE(a.send(QuitMessage{}));
  Channel::Received r = b.receive(5);
  ASSERT_EQ(r.status, Channel::Status::Message);
  EXPECT_EQ(std::get<CandidateMessage>(*r.message).cubin, sampleCandidate().cubin);
  r = b.receive(5);
  ASSERT_EQ(r.status, Channel::Status::Message);
  EXPECT_TRUE(std::holds_alternative<QuitMessage>(*r.message));
  // Nothing more: a timeout, quickly.
  EXPECT_EQ(b.receive(0.05).status, Channel::Status::Timeout);
  // Half a frame, then the peer closes: a protocol error naming the cut.
  std::string frame = encode(sampleResult());
  ASSERT_EQ(::write(sv[0], frame.data(), 10), 10);
  ::close(sv[0]);
  try {
    b.receive(5);
    FAIL() << "expected a ProtocolError";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("closed in the middle of a message"), std::string::npos) << e.what();
  }
  ::close(sv[1]);
}

TEST(WorkerChannel, PeerGoneIsEofAndSendReportsIt) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  Channel a(sv[0]);
  ::close(sv[1]);
  EXPECT_EQ(a.receive(1).status, Channel::Status::Eof);
  EXPECT_FALSE(a.send(sampleCandidate()));  // EPIPE, and no SIGPIPE kills the test
  ::close(sv[0]);
}

TEST(ReferenceFile, RoundTripsAndRejectsDamage) {
  std::string path = (std::filesystem::temp_directory_path() / "rtcg_test_reference.bin").string();
  std::vector<ReferenceArray> arrays = {{2, {1.0, -0.0, 1e-310, 3.25}}, {4, {}}};
  writeReferenceFile(path, arrays);
  std::vector<ReferenceArray> back = readReferenceFile(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].param, 2);
  EXPECT_EQ(back[0].values, arrays[0].values);
  EXPECT_EQ(back[1].param, 4);
  EXPECT_TRUE(back[1].values.empty());

  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 12);
  try {
    readReferenceFile(path);
    FAIL() << "expected an error for a truncated file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is malformed"), std::string::npos) << e.what();
  }
  std::ofstream(path, std::ios::trunc) << "garbage";
  EXPECT_THROW(readReferenceFile(path), Error);
  std::filesystem::remove(path);
  EXPECT_THROW(readReferenceFile(path), Error);
}

// A large output (24 MB here; hundreds of MB for the bench's 67 M-element outputs) comes back
// whole, every value in place; a missing file is named.
TEST(ReferenceFile, LargeOutputsRoundTripWhole) {
  std::string path = (std::filesystem::temp_directory_path() / "rtcg_test_reference_large.bin").string();
  ReferenceArray big{7, std::vector<double>(3'000'001)};
  for (size_t i = 0; i < big.values.size(); ++i) big.values[i] = double(i) * 0.5 - 1e6;
  writeReferenceFile(path, {big, {9, {4.0}}});
  std::vector<ReferenceArray> back = readReferenceFile(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].param, 7);
  EXPECT_TRUE(back[0].values == big.values);
  EXPECT_EQ(back[1].values, std::vector<double>{4.0});
  std::filesystem::remove(path);
  try {
    readReferenceFile(path);
    FAIL() << "expected an error for a missing file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read the reference file '" + path + "'"), std::string::npos) << e.what();
  }
}

TEST(ReferenceFile, MasksRoundTripAndAFullReferenceKeepsTheFirstFormat) {
  std::string path = (std::filesystem::temp_directory_path() / "rtcg_test_reference_masks.bin").string();
  auto header = [&] {
    std::ifstream in(path, std::ios::binary);
    std::string h(8, '\0');
    in.read(h.data(), 8);
    return h;
  };
  // Full: no masks, the first format byte for byte (16 + 12 + 8 * 3 bytes).
  writeReferenceFile(path, {{1, {1.0, 2.0, 3.0}}});
  EXPECT_EQ(header(), "RTCGREF1");
  EXPECT_EQ(std::filesystem::file_size(path), 12u + 12u + 24u);
  EXPECT_TRUE(readReferenceFile(path)[0].checked.empty());

  // Sampled: a mask per output that has one (an output may have none); only the checked elements'
  // values are written, as runs (the unchecked come back NaN).
  std::vector<ReferenceArray> arrays = {{3, {1.5, 99.0, -2.0, 98.0}, {1, 0, 1, 0}}, {5, {7.0, 8.0}, {}}};
  writeReferenceFile(path, arrays);
  EXPECT_EQ(header(), "RTCGREF4");
  // 12 + output 0: 4 + 1 + 8 + 1 + 8 + 2 runs x 16 + 2 values x 8; output 1: 4 + 1 + 8 + 1 + 2 x 8.
  EXPECT_EQ(std::filesystem::file_size(path), 12u + 70u + 30u);
  std::vector<ReferenceArray> back = readReferenceFile(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].param, 3);
  EXPECT_EQ(back[0].checked, arrays[0].checked);
  EXPECT_EQ(back[0].values[0], 1.5);
  EXPECT_TRUE(std::isnan(back[0].values[1]));
  EXPECT_EQ(back[0].values[2], -2.0);
  EXPECT_TRUE(std::isnan(back[0].values[3]));
  EXPECT_EQ(back[1].param, 5);
  EXPECT_EQ(back[1].values, arrays[1].values);
  EXPECT_TRUE(back[1].checked.empty());

  // A long sample (every 64th row of 4096 x 4096, as a sampled GEMM's) travels as its rows alone.
  {
    ReferenceArray big;
    big.param = 1;
    big.values.assign(size_t(4096) * 4096, 0.0);
    big.checked.assign(big.values.size(), 0);
    for (size_t row = 0; row < 4096; row += 64)
      for (size_t c = 0; c < 4096; ++c) {
        big.values[row * 4096 + c] = double(row) + double(c) / 8192;
        big.checked[row * 4096 + c] = 1;
      }
    writeReferenceFile(path, {big});
    EXPECT_LT(std::filesystem::file_size(path), big.values.size() * 8 / 60);
    std::vector<ReferenceArray> again = readReferenceFile(path);
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].checked, big.checked);
    for (size_t k = 0; k < big.values.size(); ++k)
      if (big.checked[k]) ASSERT_EQ(again[0].values[k], big.values[k]) << k;
  }

  // Damage: a run out of order or outside the output, a mask flag other than 0 or 1, a truncated
  // file, a mask of the wrong size.
  const size_t runs = 12 + 4 + 1 + 8 + 1 + 8;  // the first output's first run
  auto patch = [&](size_t at, uint64_t value) {
    writeReferenceFile(path, arrays);
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(std::streamoff(at));
    for (int b = 0; b < 8; ++b) f.put(char((value >> (8 * b)) & 0xff));
  };
  patch(runs + 16, 0);  // the second run starts where the first did
  try {
    readReferenceFile(path);
    FAIL() << "expected an error for runs out of order";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mask of output 0"), std::string::npos) << e.what();
  }
  patch(runs + 16, 4);  // past the output's 4 elements
  EXPECT_THROW(readReferenceFile(path), Error);
  writeReferenceFile(path, arrays);
  {
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(12 + 4 + 1 + 8);  // the first output's mask flag
    f.put(char(7));
  }
  try {
    readReferenceFile(path);
    FAIL() << "expected an error for a bad mask flag";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mask flag 7"), std::string::npos) << e.what();
  }
  writeReferenceFile(path, arrays);
  std::filesystem::resize_file(path, runs + 20);
  EXPECT_THROW(readReferenceFile(path), Error);
  EXPECT_THROW(writeReferenceFile(path, {{1, {1.0, 2.0}, {1}}}), Error);
  std::filesystem::remove(path);
}

// Issue 40, item 10: integer outputs travel to the worker as their exact i64 values (as doubles,
// 2^53 + 1 became 2^53 and a candidate off by one there passed).
TEST(ReferenceFile, IntegersTravelExactly) {
  std::string path = (std::filesystem::temp_directory_path() / "rtcg_test_reference_ints.bin").string();
  const std::vector<int64_t> big = {(int64_t(1) << 53) + 1, INT64_MIN, INT64_MAX, -1};
  ReferenceArray ints;
  ints.param = 2;
  ints.integers = big;
  ints.checked = {1, 1, 0, 1};
  ReferenceArray floats;
  floats.param = 3;
  floats.values = {0.5, -2.0};
  writeReferenceFile(path, {ints, floats});
  std::vector<ReferenceArray> back = readReferenceFile(path);
  ASSERT_EQ(back.size(), 2u);
  // The unchecked element does not travel (it comes back 0).
  EXPECT_EQ(back[0].integers, (std::vector<int64_t>{big[0], big[1], 0, big[3]}));
  EXPECT_TRUE(back[0].values.empty());
  EXPECT_EQ(back[0].checked, ints.checked);
  EXPECT_EQ(back[1].values, floats.values);
  EXPECT_TRUE(back[1].integers.empty());
  // An integer flag other than 0 or 1 is damage; integers and floats at once cannot be written.
  {
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(12 + 4);  // the first output's integer flag
    f.put(char(2));
  }
  EXPECT_THROW(readReferenceFile(path), Error);
  ints.values = {1.0, 2.0, 3.0, 4.0};
  EXPECT_THROW(writeReferenceFile(path, {ints}), Error);
  std::filesystem::remove(path);
}
