#include "support/InputFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
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

// What a file that is not a regular one is, in words.
std::string kindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string readInputFile(const std::string& path, size_t maxBytes) {
  // A named file is opened without blocking (opening a FIFO waits for a writer, forever) and must
  // be a regular file: a FIFO, a device such as /dev/zero or /dev/tty, a socket is refused; a pipe
  // is read from standard input, '-'.
  Fd in{path == "-" ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), path != "-"};
  if (in.fd < 0) cannotRead(path, std::strerror(errno));
  struct stat st {};
  if (::fstat(in.fd, &st) != 0) cannotRead(path, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) cannotRead(path, "it is a directory");
  if (path != "-" && !S_ISREG(st.st_mode))
    cannotRead(path, fmt::format("it is {}, not a regular file (read a pipe from standard input: '-')",
                                 kindOf(st.st_mode)));
  if (path != "-") {
    const int flags = ::fcntl(in.fd, F_GETFL);
    if (flags >= 0) ::fcntl(in.fd, F_SETFL, flags & ~O_NONBLOCK);
  }
  // Read straight into the text, sized by the file's size where it has one (a tuner's reference
  // file holds hundreds of MB), grown where it does not (a pipe) or grew meanwhile; one byte past
  // maxBytes is enough to refuse it.
  const size_t limit = maxBytes == SIZE_MAX ? maxBytes : maxBytes + 1;
  std::string text;
  size_t used = 0;
  text.resize(std::min(limit, S_ISREG(st.st_mode) && st.st_size > 0 ? size_t(st.st_size) + 1 : size_t(65536)));
  for (;;) {
    if (used == text.size()) text.resize(std::min(limit, std::max(text.size() * 2, size_t(65536))));
    if (used == text.size()) break;  // at the limit
    ssize_t n = ::read(in.fd, text.data() + used, text.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) cannotRead(path, std::strerror(errno));
    if (n == 0) break;
    used += size_t(n);
  }
  if (used > maxBytes) cannotRead(path, fmt::format("it is larger than {} MiB, the limit", maxBytes >> 20));
  text.resize(used);
  return text;
}

}  // namespace rtcg
