#include "support/OutputFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <random>

#include "rtcg/Error.h"

namespace fs = std::filesystem;

namespace rtcg {

namespace {

[[noreturn]] void cannotWrite(const std::string& path, const std::string& why) {
  throw Error(fmt::format("cannot write '{}': {}", path, why));
}

// A new file in `dir` named after `base`, created exclusively with `mode` (less the umask).
int createTemporary(const fs::path& dir, const std::string& base, mode_t mode, std::string& name) {
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    name = (dir / fmt::format(".{}.{:08x}", base, rd())).string();
    int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

bool writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(size_t(n));
  }
  return true;
}

}  // namespace

std::string resolveOutputPath(const std::string& path) {
  fs::path p(path);
  for (int links = 0; links < 40; ++links) {
    std::error_code ec;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p.string();
    // The kernel's protected-symlink rule, which a resolve-then-rename sidesteps: a link planted by
    // another user (in a shared sticky /tmp) must not redirect this run's output onto any file.
    if (st.st_uid != ::geteuid())
      cannotWrite(path, fmt::format("'{}' is a symbolic link owned by another user (uid {}), which rtcg does not "
                                    "follow; remove it or name its target",
                                    p.string(), st.st_uid));
    fs::path target = fs::read_symlink(p, ec);
    if (ec) return p.string();
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  cannotWrite(path, "too many levels of symbolic links");
}

void writeOutputFile(const std::string& path, std::string_view data) {
  if (path.empty()) cannotWrite(path, "empty file name");
  fs::path target(resolveOutputPath(path));
  struct stat st {};
  mode_t mode = 0666;  // less the umask, by open()
  bool exists = ::stat(target.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode))
    cannotWrite(path, S_ISDIR(st.st_mode) ? "it is a directory" : "it is not a regular file (a device, FIFO or socket)");
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string temp;
  int fd = createTemporary(dir, target.filename().string(), mode, temp);
  if (fd < 0) cannotWrite(path, std::strerror(errno));
  bool ok = writeAll(fd, data) && ::fsync(fd) == 0;
  // A replaced file keeps its permissions (ownership is the writer's, as with any new file), less
  // the set-user-id and set-group-id bits: with the owner changed they would grant the writer's id.
  if (ok && exists) ok = ::fchmod(fd, st.st_mode & 01777 & ~mode_t(S_ISUID | S_ISGID)) == 0;
  int err = errno;
  if (::close(fd) != 0 && ok) ok = false, err = errno;
  if (ok && ::rename(temp.c_str(), target.c_str()) != 0) ok = false, err = errno;
  if (!ok) {
    ::unlink(temp.c_str());
    cannotWrite(path, std::strerror(err));
  }
}

}  // namespace rtcg
