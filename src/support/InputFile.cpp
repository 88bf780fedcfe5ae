#include "support/InputFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>


namespace rtcg {

namespace {

[[noreturn]] void cannotRead(const std::string& path, const std::string& why) {
  throw InputFileError(fmt::format("cannot read '{}': {}", path, why), why);
}

// Closes the descriptor it was given (not standard input's).
struct Fd {
  int fd;
  bool owned;
  ~Fd() {
    if (owned && fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string readInputFile(const std::string& path, size_t maxBytes) {
  Fd in{path == "-" ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC), path != "-"};
  if (in.fd < 0) cannotRead(path, std::strerror(errno));
  struct stat st {};
  if (::fstat(in.fd, &st) == 0 && S_ISDIR(st.st_mode)) cannotRead(path, "it is a directory");
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(in.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) cannotRead(path, std::strerror(errno));
    if (n == 0) return text;
    if (text.size() + size_t(n) > maxBytes)
      cannotRead(path, fmt::format("it is larger than {} MiB, the limit", maxBytes >> 20));
    text.append(buf, size_t(n));
  }
}

}  // namespace rtcg
