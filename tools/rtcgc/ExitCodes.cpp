#include "ExitCodes.h"

#include <fmt/format.h>

#include <filesystem>
#include <new>

#include "support/Error.h"

namespace rtcgc {

int exitCodeOf(const std::exception_ptr& e, std::FILE* err) {
  try {
    std::rethrow_exception(e);
  } catch (const Fail& f) {
    return f.code;
  } catch (const rtcg::NoDeviceError& x) {
    fmt::print(err, "rtcgc: error: {}\n", x.what());
    return kNoDevice;
  } catch (const rtcg::InternalError& x) {
    fmt::print(err, "rtcgc: {}\n", x.what());  // "internal error in rtcg at FILE:LINE: ..."
    return kInternal;
  } catch (const rtcg::Error& x) {
    fmt::print(err, "rtcgc: error: {}\n", x.what());
    return kInputError;
  } catch (const std::filesystem::filesystem_error& x) {
    fmt::print(err, "rtcgc: error: {}\n", x.what());
    return kInputError;
  } catch (const std::bad_alloc&) {
    fmt::print(err, "rtcgc: error: out of memory\n");  // the environment, not a bug
    return kInputError;
  } catch (const std::exception& x) {
    if (std::ferror(stdout)) return kInputError;  // a failed print to standard output: main says so
    fmt::print(err, "rtcgc: internal error: {}\n", x.what());
    return kInternal;
  } catch (...) {
    fmt::print(err, "rtcgc: internal error: an exception of an unknown type\n");
    return kInternal;
  }
}

}  // namespace rtcgc
