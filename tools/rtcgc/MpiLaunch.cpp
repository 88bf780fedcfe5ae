// launcherRanks and builtWithMpi, built with or without MPI (MpiTune.h).
#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include "MpiTune.h"

int launcherRanks() {
  auto count = [](const char* name) -> int {
    const char* v = std::getenv(name);
    if (!v || !*v) return 0;
    char* end = nullptr;
    long n = std::strtol(v, &end, 10);
    return *end == '\0' && n > 0 && n < 1000000 ? int(n) : 0;
  };
  if (int n = count("OMPI_COMM_WORLD_SIZE")) return n;
  if (int n = count("PMI_SIZE")) return n;
  if (std::getenv("PMI_RANK") || std::getenv("PMIX_RANK"))
    if (int n = count("SLURM_NTASKS")) return n;
  return 1;
}

bool builtWithMpi() {
#ifdef RTCG_HAVE_MPI
  return true;
#else
  return false;
#endif
}

#ifndef RTCG_HAVE_MPI
int runMpiTune(const TuneArgs&) {
  fmt::print(stderr, "rtcgc: error: started as {} MPI ranks, but this rtcgc was built without MPI: every rank would "
                     "run the whole search. Build it with MPI (the README says how) or run one rtcgc\n",
             launcherRanks());
  return 2;
}
#endif
