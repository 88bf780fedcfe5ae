// Runs a shell command in a test and collects its standard output and exit status: the one copy of
// the popen loop the command-line tests (test_cli, test_golden) share.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace rtcg::tests {

struct ShellResult {
  int code = -1;    // exit status; -1 when the command could not start or was killed by a signal
  std::string out;  // what it wrote to standard output (redirect stderr into it with 2>&1)
};

inline ShellResult shell(const std::string& cmd) {
  ShellResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace rtcg::tests
