// rtcg._rtcg: the nanobind extension under the Python package `rtcg` (python/rtcg). It binds the
// public C++ API only (include/rtcg/rtcg.h, include/rtcg/compiler.h), so that it builds against an
// installed or prebuilt librtcg. The Python layer (python/rtcg/*.py) checks arguments and shapes;
// this layer converts and releases the GIL around compiles, launches and searches.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rtcg/compiler.h"
#include "rtcg/rtcg.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

nb::object errorsModule() { return nb::module_::import_("rtcg._errors"); }

nb::list diagnosticList(const std::vector<rtcg::DiagnosticRecord>& records) {
  nb::object Diagnostic = errorsModule().attr("Diagnostic");
  nb::list out;
  for (const rtcg::DiagnosticRecord& d : records)
    out.append(Diagnostic(d.file, d.line, d.column, d.severity, d.message, d.length));
  return out;
}

void raise(nb::object instance) {
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(instance.ptr())), instance.ptr());
}

// C++ exceptions as the package's exception classes (python/rtcg/_errors.py).
void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const rtcg::CompileError& e) {
    raise(errorsModule().attr("CompileError")(e.what(), diagnosticList(e.diagnostics())));
  } catch (const rtcg::NoDeviceError& e) {
    raise(errorsModule().attr("NoDeviceError")(e.what()));
  } catch (const rtcg::Error& e) {
    raise(errorsModule().attr("Error")(e.what()));
  }
}

// The policy named as rtcgc's --precision names it (the Python side checked the name first).
rtcg::PrecisionPolicy precisionPolicy(const std::string& name) {
  if (name.empty() || name == "ieee") return rtcg::PrecisionPolicy::Ieee;
  if (name == "tf32x3") return rtcg::PrecisionPolicy::Tf32x3;
  if (name == "tf32") return rtcg::PrecisionPolicy::Tf32;
  if (name == "fp64x") return rtcg::PrecisionPolicy::Fp64x;
  if (name == "fp32x") return rtcg::PrecisionPolicy::Fp32x;
  throw rtcg::Error("precision='" + name + "': expected 'ieee', 'tf32x3', 'tf32', 'fp64x' or 'fp32x'");
}

rtcg::compiler::Options options(const std::string& kernel, const std::string& schedule, const std::string& fileName,
                                const std::string& arch, int64_t maxShared, const std::string& precision = "") {
  rtcg::compiler::Options o;
  o.kernel = kernel;
  o.schedule = schedule;
  o.fileName = fileName;
  o.arch = arch;
  o.maxSharedBytes = maxShared;
  o.precision = precisionPolicy(precision);
  return o;
}

nb::dict paramDict(const rtcg::compiler::ParamInfo& p) {
  nb::dict d;
  d["name"] = p.name;
  d["kind"] = p.kind;
  d["type"] = p.type;
  d["mode"] = p.mode;
  d["shape"] = p.shape;
  d["bound_shape"] = p.boundShape;
  return d;
}

nb::dict kernelDict(const rtcg::compiler::KernelInfo& k) {
  nb::dict d;
  d["name"] = k.name;
  nb::list params;
  for (const auto& p : k.params) params.append(paramDict(p));
  d["params"] = params;
  d["sizes"] = k.sizes;
  d["signature"] = k.signature;
  d["diagnostics"] = diagnosticList(k.diagnostics);
  return d;
}

nb::dict candidateDict(const rtcg::compiler::TuneCandidate& c) {
  nb::dict d;
  d["schedule"] = c.schedule;
  d["status"] = c.status;
  d["reason"] = c.reason;
  d["median_ms"] = c.medianMs;
  d["gflops"] = c.gflops;
  d["gbytes"] = c.gbytes;
  d["relative_error"] = c.relativeError;
  d["registers"] = c.registers;
  d["spill_bytes"] = c.spillBytes;
  d["shared_bytes"] = c.sharedBytes;
  d["occupancy"] = c.occupancy;
  d["compile_ms"] = c.compileMs;
  d["completed_s"] = c.completedSeconds;
  return d;
}

// A Python callable kept by C++ (a compiled kernel keeps its options): released with the GIL,
// whatever thread drops the last copy.
struct Held {
  nb::object f;
  explicit Held(nb::object o) : f(std::move(o)) {}
  ~Held() {
    if (!Py_IsInitialized()) {
      f.release();  // the interpreter is gone: leak rather than crash
      return;
    }
    nb::gil_scoped_acquire gil;
    f.reset();
  }
};

// Python callables called from C++ threads: with the GIL, and an exception they raise is reported
// as unraisable (a progress display's bug must not end a search of minutes).
std::function<void(const std::string&)> logFn(nb::object f, const char* what) {
  if (f.is_none()) return {};
  auto held = std::make_shared<Held>(std::move(f));
  return [held, what](const std::string& line) {
    nb::gil_scoped_acquire gil;
    try {
      held->f(line);
    } catch (nb::python_error& e) {
      e.discard_as_unraisable(what);
    }
  };
}

std::function<void(const rtcg::TuningProgress&)> progressFn(nb::object f, const char* what) {
  if (f.is_none()) return {};
  auto held = std::make_shared<Held>(std::move(f));
  return [held, what](const rtcg::TuningProgress& p) {
    nb::gil_scoped_acquire gil;
    try {
      held->f(p.candidates, p.measured, p.verified, p.elapsedSeconds, p.timeLimitSeconds, p.bestMs);
    } catch (nb::python_error& e) {
      e.discard_as_unraisable(what);
    }
  };
}

// rtcg.tune's remote devices (python/rtcg/_tune.py, under mpiexec): `f(setup, reference)` returns
// [(name, measure)] with `measure(candidate) -> outcome`, all bytes. A Python exception in them
// becomes an rtcg::Error (raised in the search's threads, it stops the search).
std::function<std::vector<rtcg::compiler::RemoteDevice>(const std::string&, const std::string&)> remoteFn(nb::object f) {
  if (f.is_none()) return {};
  auto held = std::make_shared<Held>(std::move(f));
  auto bytes = [](const std::string& s) { return nb::bytes(s.data(), s.size()); };
  return [held, bytes](const std::string& setup, const std::string& reference) {
    nb::gil_scoped_acquire gil;
    std::vector<rtcg::compiler::RemoteDevice> out;
    try {
      for (nb::handle item : held->f(bytes(setup), bytes(reference))) {
        nb::tuple t = nb::cast<nb::tuple>(item);
        auto measure = std::make_shared<Held>(nb::borrow(t[1]));
        out.push_back({nb::cast<std::string>(t[0]), [measure, bytes](const std::string& candidate) {
                         nb::gil_scoped_acquire gil;
                         try {
                           nb::bytes b = nb::cast<nb::bytes>(measure->f(bytes(candidate)));
                           return std::string(b.c_str(), b.size());
                         } catch (nb::python_error& e) {
                           throw rtcg::Error(std::string("a remote device failed: ") + e.what());
                         }
                       }});
      }
    } catch (nb::python_error& e) {
      throw rtcg::Error(std::string("setting up the remote devices failed: ") + e.what());
    }
    return out;
  };
}

// rtcg.tune's compile slots on other MPI ranks (python/rtcg/_tune.py): (host, compile) pairs, where
// compile(frame: bytes, timeout: float, abandoned: callable) returns the reply frame or None. A
// Python exception in one ends the search (as a lost host).
std::vector<rtcg::compiler::CompileSlot> compileSlotsFn(nb::object slots) {
  std::vector<rtcg::compiler::CompileSlot> out;
  if (slots.is_none()) return out;
  for (nb::handle item : slots) {
    nb::tuple t = nb::cast<nb::tuple>(item);
    auto compile = std::make_shared<Held>(nb::borrow(t[1]));
    out.push_back({nb::cast<std::string>(t[0]),
                   [compile](const std::string& frame, double timeout,
                             const std::function<bool()>& abandoned) -> std::optional<std::string> {
                     nb::gil_scoped_acquire gil;
                     try {
                       // Valid during this call only: the slot's Python side polls it while it waits.
                       nb::object poll = nb::cpp_function([&abandoned] { return abandoned(); });
                       nb::object reply = compile->f(nb::bytes(frame.data(), frame.size()), timeout, poll);
                       if (reply.is_none()) return std::nullopt;
                       nb::bytes b = nb::cast<nb::bytes>(reply);
                       return std::string(b.c_str(), b.size());
                     } catch (nb::python_error& e) {
                       throw rtcg::Error(std::string("a remote compile slot failed: ") + e.what());
                     }
                   }});
  }
  return out;
}

// One launch argument, as python/rtcg/_launch.py makes it: (kind, value, count, type) with kind
// "host" (value: the address of a NumPy array's data), "device" (a device address) or "scalar"
// (value: the Python number), and type "f32", "f64", "i32", "i64" or "u32" (arrays also "i8", "u8").
struct Arg {
  std::string kind;
  nb::object value;
  size_t count = 0;
  std::string type;
};

template <class T>
void addArray(rtcg::Context& ctx, const Arg& a, std::vector<rtcg::detail::ArgRef>& refs) {
  if (a.kind == "device") {
    uint64_t address = nb::cast<uint64_t>(a.value);
    refs.push_back(rtcg::detail::argRef(ctx.wrap(reinterpret_cast<T*>(address), a.count)));
    return;
  }
  rtcg::detail::ArgRef r;
  r.kind = rtcg::detail::ArgRef::Kind::HostArray;
  r.type = rtcg::elementTypeOf<T>();
  r.count = a.count;
  r.host = reinterpret_cast<void*>(nb::cast<uintptr_t>(a.value));
  r.cppType = "numpy.ndarray";
  refs.push_back(r);
}

std::vector<rtcg::detail::ArgRef> argRefs(rtcg::Context& ctx, const std::vector<std::tuple<std::string, nb::object, size_t, std::string>>& args) {
  std::vector<rtcg::detail::ArgRef> refs;
  for (const auto& [kind, value, count, type] : args) {
    Arg a{kind, value, count, type};
    if (kind == "scalar") {
      if (type == "f32") refs.push_back(rtcg::detail::argRef(nb::cast<float>(value)));
      else if (type == "f64") refs.push_back(rtcg::detail::argRef(nb::cast<double>(value)));
      else if (type == "i32") refs.push_back(rtcg::detail::argRef(nb::cast<int32_t>(value)));
      else if (type == "i64") refs.push_back(rtcg::detail::argRef(nb::cast<int64_t>(value)));
      else if (type == "u32") refs.push_back(rtcg::detail::argRef(nb::cast<uint32_t>(value)));
      else throw rtcg::Error("bad scalar type " + type);
      continue;
    }
    if (kind != "host" && kind != "device") throw rtcg::Error("bad argument kind " + kind);
    if (type == "f32") addArray<float>(ctx, a, refs);
    else if (type == "f64") addArray<double>(ctx, a, refs);
    else if (type == "i32") addArray<int32_t>(ctx, a, refs);
    else if (type == "i64") addArray<int64_t>(ctx, a, refs);
    else if (type == "i8") addArray<int8_t>(ctx, a, refs);
    else if (type == "u8") addArray<uint8_t>(ctx, a, refs);
    else if (type == "u32") addArray<uint32_t>(ctx, a, refs);
    else throw rtcg::Error("bad array type " + type);
  }
  return refs;
}

using ArgTuples = std::vector<std::tuple<std::string, nb::object, size_t, std::string>>;

// ---- raw modules -----------------------------------------------------------------------------------

// One raw launch argument, as python/rtcg/_raw.py makes it: ("array", address, count, type) for a
// device array of f32, f64, i32 or i64 (checked against a declared pointer type), ("pointer",
// address, 0, what) for any other device array, ("bytes", bytes, 0, what) for a value.
template <class T>
rtcg::detail::RawArg rawArray(rtcg::Context& ctx, uint64_t address, size_t count) {
  return rtcg::detail::rawArg(ctx.wrap(reinterpret_cast<T*>(address), count));
}

std::vector<rtcg::detail::RawArg> rawArgs(rtcg::Context& ctx, const ArgTuples& args) {
  std::vector<rtcg::detail::RawArg> out;
  for (const auto& [kind, value, count, type] : args) {
    if (kind == "array") {
      uint64_t address = nb::cast<uint64_t>(value);
      if (type == "f32") out.push_back(rawArray<float>(ctx, address, count));
      else if (type == "f64") out.push_back(rawArray<double>(ctx, address, count));
      else if (type == "i32") out.push_back(rawArray<int32_t>(ctx, address, count));
      else if (type == "i64") out.push_back(rawArray<int64_t>(ctx, address, count));
      else throw rtcg::Error("bad raw array type " + type);
    } else if (kind == "pointer") {
      rtcg::detail::RawArg r = rtcg::detail::rawArg(reinterpret_cast<void*>(nb::cast<uintptr_t>(value)));
      r.description = "a device array of " + type;
      out.push_back(std::move(r));
    } else if (kind == "bytes") {
      rtcg::detail::RawArg r;
      r.kind = rtcg::detail::RawArg::Kind::Value;
      r.bytes = std::string(nb::cast<nb::bytes>(value).c_str(), nb::cast<nb::bytes>(value).size());
      r.description = type;
      out.push_back(std::move(r));
    } else {
      throw rtcg::Error("bad raw argument kind " + kind);
    }
  }
  return out;
}

using Dims = std::tuple<unsigned, unsigned, unsigned>;

rtcg::LaunchConfig launchConfig(const Dims& grid, const Dims& block, size_t shared, uintptr_t stream) {
  rtcg::LaunchConfig c;
  c.grid = rtcg::Dim3(std::get<0>(grid), std::get<1>(grid), std::get<2>(grid));
  c.block = rtcg::Dim3(std::get<0>(block), std::get<1>(block), std::get<2>(block));
  c.sharedBytes = shared;
  c.stream = reinterpret_cast<CUstream_st*>(stream);
  return c;
}

nb::dict rawCandidateDict(const rtcg::RawTuneCandidate& c) {
  nb::dict d;
  d["variant"] = c.variant;
  d["text"] = c.text;
  d["status"] = c.status;
  d["reason"] = c.reason;
  d["median_ms"] = c.medianMs;
  d["relative_error"] = c.relativeError;
  d["compile_ms"] = c.compileMs;
  d["registers"] = c.registers;
  return d;
}

}  // namespace

NB_MODULE(_rtcg, m) {
  m.doc() = "rtcg's C++ library (the package rtcg is its Python interface)";
  nb::register_exception_translator(translate);
  // Contexts and kernels kept in module globals (rtcg.default_context) live to the interpreter's
  // end; nanobind's report of them then is noise, not a leak.
  nb::set_leak_warnings(false);
  m.def("version", [] { return std::string(rtcg::version()); });

  // ---- compile-only ------------------------------------------------------------------------------
  m.def(
      "parse",
      [](const std::string& source, const std::string& fileName) {
        std::vector<rtcg::compiler::KernelInfo> ks = rtcg::compiler::parse(source, fileName);
        nb::list out;
        for (const auto& k : ks) out.append(kernelDict(k));
        return out;
      },
      "source"_a, "file_name"_a);
  m.def(
      "check",
      [](const std::string& source, const rtcg::Sizes& sizes, const std::string& kernel, const std::string& fileName) {
        return kernelDict(rtcg::compiler::check(source, sizes, options(kernel, "", fileName, "sm_90", 0)));
      },
      "source"_a, "sizes"_a, "kernel"_a, "file_name"_a);
  m.def(
      "emit",
      [](const std::string& source, const rtcg::Sizes& sizes, const std::string& kernel, const std::string& schedule,
         const std::string& fileName, int64_t maxShared, const std::string& precision) {
        rtcg::compiler::Options o = options(kernel, schedule, fileName, "sm_90", maxShared, precision);
        nb::gil_scoped_release release;
        return rtcg::compiler::emit(source, sizes, o);
      },
      "source"_a, "sizes"_a, "kernel"_a, "schedule"_a, "file_name"_a, "max_shared"_a, "precision"_a);
  m.def(
      "explain",
      [](const std::string& source, const rtcg::Sizes& sizes, const std::string& kernel, const std::string& schedule,
         const std::string& fileName, const std::string& arch, int64_t maxShared, const std::string& precision) {
        rtcg::compiler::Options o = options(kernel, schedule, fileName, arch, maxShared, precision);
        nb::gil_scoped_release release;
        return rtcg::compiler::explain(source, sizes, o);
      },
      "source"_a, "sizes"_a, "kernel"_a, "schedule"_a, "file_name"_a, "arch"_a, "max_shared"_a, "precision"_a);
  m.def(
      "cubin",
      [](const std::string& source, const rtcg::Sizes& sizes, const std::string& kernel, const std::string& schedule,
         const std::string& fileName, const std::string& arch, int64_t maxShared, bool ptx,
         const std::string& precision) {
        rtcg::compiler::Options o = options(kernel, schedule, fileName, arch, maxShared, precision);
        std::string data;
        {
          nb::gil_scoped_release release;
          data = ptx ? rtcg::compiler::ptx(source, sizes, o) : rtcg::compiler::cubin(source, sizes, o);
        }
        return nb::bytes(data.data(), data.size());
      },
      "source"_a, "sizes"_a, "kernel"_a, "schedule"_a, "file_name"_a, "arch"_a, "max_shared"_a, "ptx"_a,
      "precision"_a);
  m.def(
      "bind_shapes",
      [](const std::string& source, const std::vector<std::optional<std::vector<int64_t>>>& shapes,
         const rtcg::Sizes& given, const std::string& kernel, const std::string& fileName) {
        rtcg::compiler::ShapeBinding b =
            rtcg::compiler::bindShapes(source, shapes, given, options(kernel, "", fileName, "sm_90", 0));
        return std::make_pair(b.sizes, b.from);
      },
      "source"_a, "shapes"_a, "given"_a, "kernel"_a, "file_name"_a);
  // A DLPack-exporting object's array (JAX, or anything without __cuda_array_interface__):
  // (address, shape, strides in elements or None, (code, bits, lanes), device type, device id).
  m.def("dlpack_info", [](nb::ndarray<> a) {
    std::vector<int64_t> shape, strides;
    for (size_t i = 0; i < a.ndim(); ++i) shape.push_back(a.shape(i));
    for (size_t i = 0; i < a.ndim(); ++i) strides.push_back(a.stride(i));
    nb::dlpack::dtype t = a.dtype();
    return nb::make_tuple(uintptr_t(a.data()), shape, strides, nb::make_tuple(int(t.code), int(t.bits), int(t.lanes)),
                          a.device_type(), a.device_id());
  });

  // ---- tuning ------------------------------------------------------------------------------------
  m.def(
      "tune",
      [](const std::string& source, const rtcg::Sizes& sizes, const std::string& kernel, const std::string& fileName,
         int64_t maxCandidates, double timeLimit, const std::vector<int>& devices, const std::string& db,
         const std::string& worker, uint64_t seed, bool resume, nb::object progress, nb::object log,
         const std::string& precision, const std::map<std::string, std::string>& inputFiles, nb::object remote,
         int remoteCount, nb::object compileSlots, int compileThreads) {
        rtcg::compiler::TuneRequest r;
        r.remoteDevices = remoteFn(std::move(remote));
        r.remoteDeviceCount = remoteCount;
        r.compileSlots = compileSlotsFn(std::move(compileSlots));
        r.compileThreads = compileThreads;
        r.precision = precisionPolicy(precision);
        r.inputFiles = inputFiles;
        r.kernel = kernel;
        r.fileName = fileName;
        r.maxCandidates = maxCandidates;
        r.timeLimitSeconds = timeLimit;
        r.devices = devices;
        r.dbPath = db;
        r.workerPath = worker;
        r.seed = seed;
        r.resume = resume;
        r.progress = progressFn(progress, "rtcg.tune progress");
        r.log = logFn(log, "rtcg.tune log");
        rtcg::compiler::TuneReport t;
        {
          nb::gil_scoped_release release;
          t = rtcg::compiler::tune(source, sizes, r);
        }
        nb::dict d;
        d["kernel"] = t.kernel;
        d["sizes"] = t.sizes;
        d["device"] = t.device;
        d["arch"] = t.arch;
        d["search_id"] = t.searchId;
        d["best"] = t.best ? nb::object(candidateDict(*t.best)) : nb::none();
        d["default"] = t.defaultSchedule ? nb::object(candidateDict(*t.defaultSchedule)) : nb::none();
        nb::list cs;
        for (const auto& c : t.candidates) cs.append(candidateDict(c));
        d["candidates"] = cs;
        nb::dict counts;
        counts["enumerated"] = t.enumerated;
        counts["generated"] = t.generated;
        counts["pruned"] = t.pruned;
        counts["verified"] = t.verified;
        counts["wrong"] = t.wrong;
        counts["faulted"] = t.faulted;
        counts["timed_out"] = t.timedOut;
        counts["launch_failed"] = t.launchFailed;
        counts["compile_failed"] = t.compileFailed;
        counts["skipped"] = t.skipped;
        counts["not_measured"] = t.notMeasured;
        d["counts"] = counts;
        d["time_limit_reached"] = t.timeLimitReached;
        d["wall_seconds"] = t.wallSeconds;
        d["reference"] = t.reference;
        d["devices"] = t.devices;
        nb::list on;
        for (const rtcg::compiler::CompileHost& h : t.compiledOn) {
          nb::dict host;
          host["host"] = h.host;
          host["slots"] = h.slots;
          host["compiled"] = h.compiled;
          on.append(host);
        }
        d["compiled_on"] = on;
        return d;
      },
      "source"_a, "sizes"_a, "kernel"_a, "file_name"_a, "max_candidates"_a, "time_limit"_a, "devices"_a, "db"_a,
      "worker"_a, "seed"_a, "resume"_a, "progress"_a.none(), "log"_a.none(), "precision"_a,
      "input_files"_a, "remote"_a.none() = nb::none(), "remote_count"_a = 0, "compile_slots"_a.none() = nb::none(),
      "compile_threads"_a = 0);

  // The compiling side of rtcg.tune under mpiexec: compile slots for another rank's search.
  nb::class_<rtcg::compiler::CompileSlotServer>(m, "CompileSlotServer")
      .def(nb::init<int, const std::string&>(), "slots"_a, "worker"_a = "")
      .def("compile",
           [](rtcg::compiler::CompileSlotServer& s, int slot, nb::bytes frame, double timeout) {
             if (slot < 0 || slot >= s.slots())
               throw nb::index_error(("no compile slot " + std::to_string(slot)).c_str());
             std::string f(frame.c_str(), frame.size()), out;
             {
               nb::gil_scoped_release release;
               out = s.compile(slot, f, timeout);
             }
             return nb::bytes(out.data(), out.size());
           },
           "slot"_a, "frame"_a, "timeout"_a)
      .def("abandon", [](rtcg::compiler::CompileSlotServer& s) {
        nb::gil_scoped_release release;
        s.abandon();
      })
      .def_prop_ro("slots", &rtcg::compiler::CompileSlotServer::slots)
      .def_prop_ro("compiled", &rtcg::compiler::CompileSlotServer::compiled);

  // The measuring side of rtcg.tune under mpiexec: another rank's search measured on this device.
  nb::class_<rtcg::compiler::MeasuringWorker>(m, "MeasuringWorker")
      .def("__init__",
           [](rtcg::compiler::MeasuringWorker* self, nb::bytes setup, nb::bytes reference, int device,
              const std::string& worker) {
             std::string s(setup.c_str(), setup.size()), r(reference.c_str(), reference.size());
             nb::gil_scoped_release release;
             new (self) rtcg::compiler::MeasuringWorker(s, r, device, worker);
           },
           "setup"_a, "reference"_a, "device"_a, "worker"_a = "")
      .def("measure",
           [](rtcg::compiler::MeasuringWorker& w, nb::bytes candidate) {
             std::string c(candidate.c_str(), candidate.size()), out;
             {
               nb::gil_scoped_release release;
               out = w.measure(c);
             }
             return nb::bytes(out.data(), out.size());
           })
      .def_prop_ro("device", &rtcg::compiler::MeasuringWorker::device);

  // ---- devices and kernels -----------------------------------------------------------------------
  nb::class_<rtcg::Context>(m, "Context")
      .def(nb::init<int>(), "device"_a = 0)
      .def("device_info",
           [](const rtcg::Context& c) {
             const rtcg::DeviceInfo& d = c.device();
             nb::dict out;
             out["ordinal"] = d.ordinal;
             out["name"] = d.name;
             out["arch"] = d.arch();
             out["compute_capability"] = nb::make_tuple(d.computeMajor, d.computeMinor);
             out["multiprocessors"] = d.multiprocessors;
             out["total_memory"] = d.totalMemory;
             out["shared_per_block_optin"] = d.sharedPerBlockOptin;
             out["l2_bytes"] = d.l2Bytes;
             out["driver_version"] = d.driverVersion;
             return out;
           })
      .def("synchronize", &rtcg::Context::synchronize, nb::call_guard<nb::gil_scoped_release>())
      .def("cache_stats",
           [](const rtcg::Context& c) {
             rtcg::Context::CacheStats s = c.cacheStats();
             nb::dict d;
             d["nvrtc"] = s.nvrtc;
             d["disk"] = s.disk;
             d["memory"] = s.memory;
             return d;
           })
      .def(
          "compile",
          [](rtcg::Context& c, const std::string& source, const rtcg::Sizes& sizes, const std::string& kernel,
             const std::string& schedule, const std::string& fileName, const std::string& tuning,
             int64_t maxCandidates, double timeLimit, nb::object log, nb::object progress,
             const std::string& precision) {
            rtcg::CompileOptions o;
            o.precision = precisionPolicy(precision);
            o.kernel = kernel;
            o.schedule = schedule;
            o.fileName = fileName;
            if (tuning == "off") o.tuning = rtcg::Tuning::Off;
            else if (tuning == "cached") o.tuning = rtcg::Tuning::UseCached;
            else if (tuning == "tune") o.tuning = rtcg::Tuning::TuneOnFirstUse;
            else throw rtcg::Error("tuning='" + tuning + "': expected 'off', 'cached' or 'tune'");
            o.tuneMaxCandidates = int(maxCandidates);
            o.tuneTimeLimitSeconds = timeLimit;
            o.log = logFn(log, "rtcg compile log");
            o.onTuneProgress = progressFn(progress, "rtcg compile progress");
            nb::gil_scoped_release release;
            return c.compile(source, sizes, o);
          },
          "source"_a, "sizes"_a, "kernel"_a, "schedule"_a, "file_name"_a, "tuning"_a, "max_candidates"_a,
          "time_limit"_a, "log"_a.none(), "progress"_a.none(), "precision"_a);

  m.def(
      "raw_module",
      [](rtcg::Context& ctx, const std::string& source, const std::vector<std::string>& options,
         const std::string& fileName, nb::object log) {
        rtcg::ModuleOptions o;
        o.nvrtcOptions = options;
        o.fileName = fileName;
        o.log = logFn(log, "rtcg SourceModule log");
        nb::gil_scoped_release release;
        return ctx.module(source, o);
      },
      "context"_a, "source"_a, "options"_a, "file_name"_a, "log"_a.none());
  m.def(
      "raw_tune",
      [](rtcg::Context& ctx, const std::string& source, const std::vector<std::string>& options,
         const std::string& fileName, const std::string& function,
         const std::vector<std::pair<std::string, std::vector<std::string>>>& space, nb::object restrict,
         nb::object geometry, std::optional<rtcg::RawFunction> reference, const Dims& refGrid, const Dims& refBlock,
         size_t refShared, const std::vector<size_t>& outputs, double tolerance, bool poison, nb::object check,
         const std::string& problem, const std::string& db, bool useCached, size_t maxVariants, int warmup,
         int repeats, nb::object log, const ArgTuples& args) {
        rtcg::ModuleOptions mo;
        mo.nvrtcOptions = options;
        mo.fileName = fileName;
        rtcg::RawTuneOptions o;
        o.function = function;
        o.space = space;
        // The callables run on this thread, which holds no GIL during the search: each takes it.
        // A Python exception in one ends the search with it (nanobind rethrows it as it unwinds).
        auto held = [](nb::object f) { return std::make_shared<Held>(std::move(f)); };
        if (!restrict.is_none()) {
          auto f = held(restrict);
          o.restrict = [f](const rtcg::RawVariant& v) {
            nb::gil_scoped_acquire gil;
            return nb::cast<bool>(f->f(v));
          };
        }
        auto g = held(geometry);
        o.geometry = [g](const rtcg::RawVariant& v) {
          nb::gil_scoped_acquire gil;
          auto [grid, block, shared] = nb::cast<std::tuple<Dims, Dims, size_t>>(g->f(v));
          return launchConfig(grid, block, shared, 0);
        };
        if (reference) {
          o.reference = *reference;
          o.referenceConfig = launchConfig(refGrid, refBlock, refShared, 0);
        }
        o.outputs = outputs;
        o.tolerance = tolerance;
        o.poisonOutputs = poison;
        if (!check.is_none()) {
          auto f = held(check);
          o.check = [f](const rtcg::RawVariant& v) {
            nb::gil_scoped_acquire gil;
            nb::object r = f->f(v);
            if (r.is_none()) return std::string();
            if (nb::isinstance<nb::bool_>(r)) return nb::cast<bool>(r) ? std::string() : std::string("the check said no");
            return nb::cast<std::string>(r);
          };
        }
        o.problem = problem;
        o.database = db;
        o.useCached = useCached;
        o.maxVariants = maxVariants;
        o.warmup = warmup;
        o.repeats = repeats;
        o.log = logFn(log, "rtcg tune_source log");
        std::vector<rtcg::detail::RawArg> refs = rawArgs(ctx, args);
        rtcg::RawTuneResult r;
        {
          nb::gil_scoped_release release;
          r = ctx.tuneModuleWith(source, mo, o, refs);
        }
        nb::dict d;
        nb::list cs;
        for (const auto& c : r.candidates) cs.append(rawCandidateDict(c));
        d["candidates"] = cs;
        d["best"] = r.best ? nb::object(rawCandidateDict(*r.best)) : nb::none();
        d["from_database"] = r.fromDatabase;
        d["kernel_hash"] = r.kernelHash;
        d["best_options"] = r.bestOptions;
        return d;
      },
      "context"_a, "source"_a, "options"_a, "file_name"_a, "function"_a, "space"_a, "restrict"_a.none(),
      "geometry"_a, "reference"_a.none(), "reference_grid"_a, "reference_block"_a, "reference_shared"_a, "outputs"_a,
      "tolerance"_a, "poison"_a, "check"_a.none(), "problem"_a, "db"_a, "use_cached"_a, "max_variants"_a, "warmup"_a,
      "repeats"_a, "log"_a.none(), "args"_a);

  nb::class_<rtcg::RawFunction>(m, "RawFunction")
      .def_prop_ro("name", &rtcg::RawFunction::name)
      .def_prop_ro("parameters",
                   [](const rtcg::RawFunction& f) {
                     nb::list out;
                     for (const rtcg::RawParameter& p : f.parameters()) {
                       nb::dict d;
                       d["name"] = p.name;
                       d["type"] = p.type;
                       d["size"] = p.size;
                       d["pointer"] = p.pointer;
                       out.append(d);
                     }
                     return out;
                   })
      .def_prop_ro("max_threads_per_block", &rtcg::RawFunction::maxThreadsPerBlock)
      .def_prop_ro("registers", &rtcg::RawFunction::registers)
      // Enqueued on `stream` (an address; 0: the legacy default stream) after the argument check.
      .def("launch", [](const rtcg::RawFunction& f, rtcg::Context& ctx, const Dims& grid, const Dims& block,
                        size_t shared, uintptr_t stream, const ArgTuples& args) {
        std::vector<rtcg::detail::RawArg> refs = rawArgs(ctx, args);
        nb::gil_scoped_release release;
        f.enqueue(launchConfig(grid, block, shared, stream), refs);
      });

  nb::class_<rtcg::RawModule>(m, "RawModule")
      .def("function", &rtcg::RawModule::function, "name"_a)
      .def_prop_ro("function_names", &rtcg::RawModule::functionNames)
      .def_prop_ro("loaded_from_disk_cache", &rtcg::RawModule::loadedFromDiskCache)
      .def_prop_ro("warnings", &rtcg::RawModule::warnings);

  nb::class_<rtcg::CompiledKernel>(m, "CompiledKernel")
      .def_prop_ro("name", &rtcg::CompiledKernel::name)
      .def_prop_ro("signature", &rtcg::CompiledKernel::signature)
      .def_prop_ro("cuda_source", &rtcg::CompiledKernel::cudaSource)
      .def_prop_ro("schedule", &rtcg::CompiledKernel::scheduleText)
      .def_prop_ro("schedule_origin", &rtcg::CompiledKernel::scheduleOrigin)
      .def_prop_ro("loaded_from_disk_cache", &rtcg::CompiledKernel::loadedFromDiskCache)
      // Synchronous: host arrays are copied in and out; returns when the kernel is done.
      .def("launch",
           [](const rtcg::CompiledKernel& k, rtcg::Context& ctx, const ArgTuples& args) {
             std::vector<rtcg::detail::ArgRef> refs = argRefs(ctx, args);
             nb::gil_scoped_release release;
             k.launch(refs);
           })
      // Enqueued on `stream` (an address; 0: the legacy default stream); device arrays only.
      .def("enqueue", [](const rtcg::CompiledKernel& k, rtcg::Context& ctx, uintptr_t stream, const ArgTuples& args) {
        std::vector<rtcg::detail::ArgRef> refs = argRefs(ctx, args);
        nb::gil_scoped_release release;
        k.enqueue(reinterpret_cast<CUstream_st*>(stream), refs);
      });
}
