// The names of the staged tiles' plan parts (schedule/StageRing.h).
#include "schedule/StageRing.h"

#include <fmt/format.h>

namespace rtcg {

const char* tileFormName(TileForm f) {
  switch (f) {
    case TileForm::Padded: return "padded";
    case TileForm::AsLoaded: return "as loaded";
    case TileForm::Canonical: return "canonical";
    case TileForm::Swizzle128: return "128-byte swizzle";
  }
  return "?";
}

const char* copyEngineName(CopyEngine e) {
  switch (e) {
    case CopyEngine::Registers: return "registers";
    case CopyEngine::CpAsync: return "cp.async";
    case CopyEngine::Tma: return "TMA";
  }
  return "?";
}

const char* handOverName(HandOver h) {
  switch (h) {
    case HandOver::Barrier: return "barrier";
    case HandOver::Mbarrier: return "mbarrier";
    case HandOver::ProducerConsumer: return "producer-consumer";
  }
  return "?";
}

std::string printStageRing(const StageRing& r) {
  return fmt::format("{} stage{}, {} step{} ahead, {}, {}{}", r.stages, r.stages == 1 ? "" : "s", r.ahead(),
                     r.ahead() == 1 ? "" : "s", copyEngineName(r.engine), handOverName(r.handOver),
                     r.fenceAsyncProxy ? ", fenced for the async proxy" : "");
}

}  // namespace rtcg
