// A second process for the kernel cache tests: reads and writes the same cache directory as the
// test, to show entries survive across processes and concurrent writers never expose partial files.
//
//   kernel_cache_helper DIR put KEY VALUE         store VALUE under KEY
//   kernel_cache_helper DIR get KEY               print the value; exit 3 when absent
//   kernel_cache_helper DIR hammer KEY N BYTES    store N entries of BYTES bytes (all one letter
//                                                 per write, varying) under KEY, as fast as possible
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "runtime/KernelCache.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: kernel_cache_helper DIR put|get|hammer KEY [...]\n";
    return 2;
  }
  rtcg::KernelCache cache{std::filesystem::path(argv[1])};
  std::string op = argv[2], key = argv[3];
  if (op == "put" && argc == 5) {
    cache.put(key, argv[4]);
    return cache.stats().diskWrites == 1 ? 0 : 1;
  }
  if (op == "get" && argc == 4) {
    auto v = cache.get(key);
    if (!v) return 3;
    std::cout << *v;
    return 0;
  }
  if (op == "hammer" && argc == 6) {
    int n = std::atoi(argv[4]);
    size_t bytes = std::strtoul(argv[5], nullptr, 10);
    for (int i = 0; i < n; ++i) cache.put(key, std::string(bytes, static_cast<char>('a' + i % 26)));
    return cache.stats().diskErrors == 0 ? 0 : 1;
  }
  std::cerr << "kernel_cache_helper: bad arguments\n";
  return 2;
}
