// Supervision of the measuring worker, with a fake worker that misbehaves on purpose: a worker
// that dies at setup or reports no device is a clean error; a candidate that crashes the worker,
// hangs it, makes it talk garbage or reports a fatal CUDA error is recorded with the reason, and
// the next candidate gets a fresh worker.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "tune/ServedWorker.h"
#include "tune/WorkerMain.h"
#include "tune/WorkerProcess.h"

using namespace rtcg;
using namespace rtcg::worker;

namespace {

struct FakeMode {
  explicit FakeMode(const char* mode) { ::setenv("RTCG_FAKE_WORKER_MODE", mode, 1); }
  ~FakeMode() { ::unsetenv("RTCG_FAKE_WORKER_MODE"); }
};

// The fake names the device of its command line in its ready message (fake_worker.cpp).
struct FakeNamesDevice {
  FakeNamesDevice() { ::setenv("RTCG_FAKE_WORKER_NAME_DEVICE", "1", 1); }
  ~FakeNamesDevice() { ::unsetenv("RTCG_FAKE_WORKER_NAME_DEVICE"); }
};

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

CandidateMessage candidate(int64_t id) {
  CandidateMessage c;
  c.id = id;
  c.launches.push_back(LaunchSpec{"k_0", {1, 1, 1}, {32, 1, 1}, 0, {0}});
  c.cubin = std::string(size_t(100 + id), 'x');
  return c;
}

}  // namespace

TEST(FindWorker, ExplicitPathMustBeExecutable) {
  EXPECT_EQ(findWorker(RTCG_FAKE_WORKER), RTCG_FAKE_WORKER);
  std::string msg = errorOf([] { findWorker("/nonexistent/rtcg-worker"); });
  EXPECT_NE(msg.find("'/nonexistent/rtcg-worker' is not an executable file"), std::string::npos) << msg;
  std::string plain = (std::filesystem::temp_directory_path() / "rtcg_not_executable").string();
  std::ofstream(plain) << "#!/bin/sh\n";
  ::chmod(plain.c_str(), 0644);
  EXPECT_NE(errorOf([&] { findWorker(plain); }).find("not an executable file"), std::string::npos);
  std::filesystem::remove(plain);
}

TEST(FindWorker, EnvironmentVariableAndSearch) {
  ::setenv("RTCG_WORKER", "/nonexistent/worker", 1);
  std::string msg = errorOf([] { findWorker(); });
  EXPECT_NE(msg.find("RTCG_WORKER='/nonexistent/worker'"), std::string::npos) << msg;
  ::setenv("RTCG_WORKER", RTCG_FAKE_WORKER, 1);
  EXPECT_EQ(findWorker(), RTCG_FAKE_WORKER);
  ::unsetenv("RTCG_WORKER");
  // From tests/tuner/ the build tree's tools/rtcg-worker/rtcg-worker is found.
  EXPECT_EQ(std::filesystem::canonical(findWorker()), std::filesystem::canonical(RTCG_WORKER_EXE));
}

TEST(WorkerProcess, WorkerDyingAtSetupIsAClearError) {
  FakeMode mode("die-at-setup");
  std::string msg = errorOf([] { WorkerProcess w(RTCG_FAKE_WORKER, SetupMessage{}, {5, 1}); });
  EXPECT_NE(msg.find("exited with status 7"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fake worker: dying at setup"), std::string::npos) << msg;  // its stderr
}

TEST(WorkerProcess, NoDeviceInTheWorkerIsNoDeviceError) {
  FakeMode mode("no-device");
  try {
    WorkerProcess w(RTCG_FAKE_WORKER, SetupMessage{}, {5, 1});
    FAIL() << "expected NoDeviceError";
  } catch (const NoDeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA device (fake)"), std::string::npos);
  }
}

TEST(WorkerProcess, GarbageAtSetupIsAClearError) {
  FakeMode mode("garbage-setup");
  std::string msg = errorOf([] { WorkerProcess w(RTCG_FAKE_WORKER, SetupMessage{}, {5, 1}); });
  EXPECT_NE(msg.find("malformed reply"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bad frame start 'this is not a fr"), std::string::npos) << msg;
  // Killed, not waited for: the fake worker sleeps a minute after its garbage, so a wait would
  // show as a test of a minute (a wall-clock limit here flaked under load).
}

TEST(WorkerProcess, SurvivesCrashesHangsGarbageAndFaults) {
  FakeNamesDevice named;
  FakeMode mode("mixed");
  std::vector<std::string> log;
  WorkerProcess w(RTCG_FAKE_WORKER, SetupMessage{}, {5, 0.5}, [&](const std::string& s) { log.push_back(s); });
  EXPECT_EQ(w.ready().device, "Fake GPU (device 0 from its start)");  // its device on its command line

  MeasureOutcome ok = w.measure(candidate(0));
  EXPECT_EQ(ok.status, CandidateStatus::Verified) << ok.reason;
  EXPECT_EQ(ok.result.medianMs, 1.0);
  EXPECT_EQ(ok.result.registers, 100);  // the fake echoes the cubin's size

  MeasureOutcome crash = w.measure(candidate(1));
  EXPECT_EQ(crash.status, CandidateStatus::Faulted);
  EXPECT_NE(crash.reason.find("killed by signal 11"), std::string::npos) << crash.reason;
  EXPECT_NE(crash.reason.find("crashing on candidate 1"), std::string::npos) << crash.reason;

  // The hang ends by the timeout's kill, which the reason names (not by a time limit: those
  // flaked under load).
  MeasureOutcome hang = w.measure(candidate(2));
  EXPECT_EQ(hang.status, CandidateStatus::TimedOut);
  EXPECT_NE(hang.reason.find("the worker was killed"), std::string::npos) << hang.reason;

  MeasureOutcome garbage = w.measure(candidate(3));
  EXPECT_EQ(garbage.status, CandidateStatus::Faulted);
  EXPECT_NE(garbage.reason.find("malformed reply"), std::string::npos) << garbage.reason;

  MeasureOutcome fault = w.measure(candidate(4));
  EXPECT_EQ(fault.status, CandidateStatus::Faulted);
  EXPECT_NE(fault.reason.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << fault.reason;

  MeasureOutcome after = w.measure(candidate(5));
  EXPECT_EQ(after.status, CandidateStatus::Verified) << after.reason;
  EXPECT_EQ(after.result.medianMs, 6.0);
  EXPECT_EQ(w.restarts(), 4);  // after the crash, the hang, the garbage and the fault
  EXPECT_FALSE(log.empty());
}

// A worker started before its setup exists (its CUDA context is made meanwhile): the device is on
// its command line, the setup follows, then candidates; a worker that dies later is restarted
// the same way (its device on its command line) and set up again.
TEST(WorkerProcess, StartsBeforeItsSetup) {
  FakeNamesDevice named;
  FakeMode mode("mixed");
  std::vector<std::string> log;
  WorkerProcess w(RTCG_FAKE_WORKER, 3, {5, 0.5}, [&](const std::string& s) { log.push_back(s); });
  EXPECT_GT(w.pid(), 0);
  EXPECT_TRUE(w.ready().device.empty());  // not set up yet
  EXPECT_THROW(w.measure(candidate(0)), InternalError);
  SetupMessage s;
  s.deviceOrdinal = 3;
  w.setUp(s);
  EXPECT_EQ(w.ready().device, "Fake GPU (device 3 from its start)");
  EXPECT_EQ(w.measure(candidate(0)).status, CandidateStatus::Verified);
  EXPECT_EQ(w.measure(candidate(1)).status, CandidateStatus::Faulted);  // the fake crashes
  EXPECT_EQ(w.measure(candidate(5)).status, CandidateStatus::Verified);
  EXPECT_EQ(w.restarts(), 1);
  EXPECT_EQ(w.ready().device, "Fake GPU (device 3 from its start)");
  EXPECT_THROW(w.setUp(s), InternalError);
}

// The measuring worker's command line: --serve, with --device N to begin its context at once.
TEST(WorkerMain, ServeArgumentsNameTheDevice) {
  auto parse = [](std::vector<std::string> args) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    return serveArgs(int(argv.size()), argv.data());
  };
  EXPECT_EQ(parse({"rtcg-worker", "--serve"}), std::optional<int>(-1));
  EXPECT_EQ(parse({"rtcg-worker", "--serve", "--device", "2"}), std::optional<int>(2));
  EXPECT_EQ(parse({"rtcg-worker", "--serve", "--device"}), std::nullopt);
  EXPECT_EQ(parse({"rtcg-worker", "--serve", "--device", "-1"}), std::nullopt);
  EXPECT_EQ(parse({"rtcg-worker", "--serve", "--device", "2x"}), std::nullopt);
  EXPECT_EQ(parse({"rtcg-worker", "--compile-worker"}), std::nullopt);
  EXPECT_EQ(parse({"rtcg-worker"}), std::nullopt);
}

// The real worker's setup on this machine: it binds the kernel, regenerates the inputs, checks them
// against the parent's checksums and reads the reference, then needs a device.
namespace {

SetupMessage realSetup(const std::string& referencePath) {
  SetupMessage s;
  s.fileName = "axpby.rtcg";
  s.source = "kernel axpby(n: int, a: f32, x: f32[n], b: f32, y: f32[n], out z: f32[n]) {\n"
             "  for i in 0..n { z[i] = a * x[i] + b * y[i]; }\n}\n";
  s.kernel = "axpby";
  s.sizes = {{"n", 1000}};
  s.scalars = {{"a", 0.5}, {"b", -2}};
  s.referencePath = referencePath;
  return s;
}

}  // namespace

TEST(RealWorker, SetupChecksInputsThenNeedsADevice) {
  std::string ref = (std::filesystem::temp_directory_path() / "rtcg_test_worker_ref.bin").string();
  writeReferenceFile(ref, {{5, std::vector<double>(1000, 0.0)}});
  SetupMessage s = realSetup(ref);
  // Wrong checksums: the worker refuses (before it needs a device).
  s.inputs = {{"x", 1.0, 2.0}};
  std::string msg = errorOf([&] { WorkerProcess w(RTCG_WORKER_EXE, s, {30, 5}); });
  EXPECT_NE(msg.find("input 'x' differs from the parent's"), std::string::npos) << msg;
  // A kernel that does not bind: the diagnostics come back.
  SetupMessage unbound = realSetup(ref);
  unbound.sizes.clear();
  msg = errorOf([&] { WorkerProcess w(RTCG_WORKER_EXE, unbound, {30, 5}); });
  EXPECT_NE(msg.find("does not bind in the worker"), std::string::npos) << msg;
  // Right checksums: ready on a GPU host, NoDeviceError elsewhere.
  s.inputs.clear();
  try {
    WorkerProcess w(RTCG_WORKER_EXE, s, {60, 5});
    EXPECT_FALSE(w.ready().device.empty());
  } catch (const NoDeviceError& e) {
    EXPECT_FALSE(std::string(e.what()).empty());
  }
  std::filesystem::remove(ref);
}

// Started before its setup, the real worker creates its context meanwhile (on a thread): what the
// setup gets wrong is still reported first, and a missing device after it, as NoDeviceError.
TEST(RealWorker, StartedBeforeItsSetupChecksInputsThenNeedsADevice) {
  std::string ref = (std::filesystem::temp_directory_path() / "rtcg_test_worker_ref_early.bin").string();
  writeReferenceFile(ref, {{5, std::vector<double>(1000, 0.0)}});
  SetupMessage s = realSetup(ref);
  s.inputs = {{"x", 1.0, 2.0}};
  std::string msg = errorOf([&] {
    WorkerProcess w(RTCG_WORKER_EXE, 0, {30, 5});
    w.setUp(s);
  });
  EXPECT_NE(msg.find("input 'x' differs from the parent's"), std::string::npos) << msg;
  s.inputs.clear();
  try {
    WorkerProcess w(RTCG_WORKER_EXE, 0, {60, 5});
    w.setUp(s);
    EXPECT_FALSE(w.ready().device.empty());
  } catch (const NoDeviceError& e) {
    EXPECT_FALSE(std::string(e.what()).empty());
  }
  // Ended before any setup (the search stopped first): it quits without one.
  { WorkerProcess w(RTCG_WORKER_EXE, 0, {30, 5}); }
  std::filesystem::remove(ref);
}

// A worker served for another rank's search (rtcgc tune under MPI) is set up before that search's
// reference exists; the reference's bytes come before the first candidate, in the file the worker
// reads at its first candidate.
TEST(ServedWorker, TakesTheReferenceAfterItsSetup) {
  FakeMode mode("verified");
  ServedWorker served(encode(SetupMessage{}), "", 0, RTCG_FAKE_WORKER);
  const std::string path = served.setup().referencePath;
  ASSERT_FALSE(path.empty());
  EXPECT_EQ(std::filesystem::file_size(path), 0u);
  served.setReference("the reference's bytes");
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "the reference's bytes");
  int restarts = -1;
  MeasureOutcome o = decodeOutcome(served.measure(encode(candidate(3))), &restarts);
  EXPECT_EQ(o.status, CandidateStatus::Verified) << o.reason;
  EXPECT_EQ(restarts, 0);
}

// Another rank's worker may be started before rank 0's setup arrives (rtcgc tune under MPI starts
// it first): the served worker sets up that process rather than another.
TEST(ServedWorker, SetsUpAWorkerStartedBeforeTheSetup) {
  FakeNamesDevice named;
  FakeMode mode("verified");
  auto started = std::make_unique<WorkerProcess>(RTCG_FAKE_WORKER, 2, WorkerTimeouts{});
  const pid_t pid = started->pid();
  ServedWorker served(encode(SetupMessage{}), "", 2, RTCG_FAKE_WORKER, {}, std::move(started));
  EXPECT_EQ(served.worker().pid(), pid);
  EXPECT_EQ(served.worker().ready().device, "Fake GPU (device 2 from its start)");
  EXPECT_EQ(served.setup().deviceOrdinal, 2);
  served.setReference("bytes");
  EXPECT_EQ(decodeOutcome(served.measure(encode(candidate(3)))).status, CandidateStatus::Verified);
}
