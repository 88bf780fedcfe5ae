#include "codegen/CubinInfo.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>

namespace rtcg {
namespace {

// Bounds-checked little-endian reads from the image.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  template <class T>
  std::optional<T> at(uint64_t offset) const {
    if (offset > data_.size() || data_.size() - offset < sizeof(T)) return std::nullopt;
    T v;
    std::memcpy(&v, data_.data() + offset, sizeof(T));
    return v;
  }
  std::optional<std::string_view> bytes(uint64_t offset, uint64_t size) const {
    if (offset > data_.size() || data_.size() - offset < size) return std::nullopt;
    return data_.substr(offset, size);
  }
  std::string cstring(uint64_t offset) const {
    if (offset >= data_.size()) return {};
    size_t end = data_.find('\0', offset);
    return std::string(data_.substr(offset, end == std::string_view::npos ? std::string_view::npos : end - offset));
  }

 private:
  std::string_view data_;
};

struct Section {
  std::string name;
  uint32_t type = 0;
  uint64_t offset = 0, size = 0;
};

// Attribute ids and formats of NVIDIA's .nv.info records (format byte, attribute byte, payload).
constexpr uint8_t kFormatNoValue = 0x01, kFormatByte = 0x02, kFormatHalf = 0x03, kFormatSized = 0x04;
constexpr uint8_t kAttrFrameSize = 0x11, kAttrRegCount = 0x2f;

}  // namespace

std::vector<KernelResources> resourcesFromCubin(std::string_view cubin) {
  Reader r(cubin);
  if (cubin.size() < 64 || cubin.substr(0, 4) != std::string_view("\x7f" "ELF", 4) || cubin[4] != 2) return {};
  auto shoff = r.at<uint64_t>(0x28);
  auto shentsize = r.at<uint16_t>(0x3a), shnum = r.at<uint16_t>(0x3c), shstrndx = r.at<uint16_t>(0x3e);
  if (!shoff || !shentsize || !shnum || !shstrndx || *shentsize < 64 || *shstrndx >= *shnum) return {};

  std::vector<Section> sections(*shnum);
  std::vector<uint32_t> nameOffsets(*shnum);
  for (uint16_t i = 0; i < *shnum; ++i) {
    uint64_t h = *shoff + uint64_t(i) * *shentsize;
    auto name = r.at<uint32_t>(h), type = r.at<uint32_t>(h + 4);
    auto offset = r.at<uint64_t>(h + 24), size = r.at<uint64_t>(h + 32);
    if (!name || !type || !offset || !size) return {};
    nameOffsets[i] = *name;
    sections[i] = {"", *type, *offset, *size};
  }
  const Section& names = sections[*shstrndx];
  for (uint16_t i = 0; i < *shnum; ++i)
    if (nameOffsets[i] < names.size) sections[i].name = r.cstring(names.offset + nameOffsets[i]);

  const Section *symtab = nullptr, *strtab = nullptr, *info = nullptr;
  std::map<std::string, uint64_t> sharedBytes;  // by kernel name
  for (const Section& s : sections) {
    if (s.name == ".symtab") symtab = &s;
    if (s.name == ".strtab") strtab = &s;
    if (s.name == ".nv.info") info = &s;
    if (s.name.rfind(".nv.shared.", 0) == 0) sharedBytes[s.name.substr(11)] = s.size;
  }
  if (!symtab || !strtab || !info) return {};
  auto symbolName = [&](uint32_t index) -> std::string {
    auto nameOffset = r.at<uint32_t>(symtab->offset + uint64_t(index) * 24);
    if (uint64_t(index) * 24 >= symtab->size || !nameOffset || *nameOffset >= strtab->size) return {};
    return r.cstring(strtab->offset + *nameOffset);
  };

  std::map<uint32_t, KernelResources> bySymbol;
  auto records = r.bytes(info->offset, info->size);
  if (!records) return {};
  for (size_t p = 0; p + 2 <= records->size();) {
    uint8_t format = uint8_t((*records)[p]), attr = uint8_t((*records)[p + 1]);
    if (format == kFormatNoValue) {
      p += 2;
    } else if (format == kFormatByte || format == kFormatHalf) {
      p += 4;
    } else if (format == kFormatSized) {
      if (p + 4 > records->size()) break;
      uint16_t size;
      std::memcpy(&size, records->data() + p + 2, 2);
      if (p + 4 + size > records->size()) break;
      if ((attr == kAttrRegCount || attr == kAttrFrameSize) && size == 8) {
        uint32_t symbol, value;
        std::memcpy(&symbol, records->data() + p + 4, 4);
        std::memcpy(&value, records->data() + p + 8, 4);
        KernelResources& k = bySymbol[symbol];
        (attr == kAttrRegCount ? k.registers : k.localBytes) = int(value);
      }
      p += 4 + size;
    } else {
      break;  // unknown format: stop rather than misread
    }
  }

  std::vector<KernelResources> out;
  for (auto& [symbol, k] : bySymbol) {
    k.name = symbolName(symbol);
    k.spillsKnown = false;
    if (k.name.empty() || k.registers == 0) continue;
    auto shared = sharedBytes.find(k.name);
    // The section also holds the 1 KiB per block that sm_80 and later reserve for the system,
    // which ptxas does not count as the kernel's static shared memory.
    if (shared != sharedBytes.end()) k.sharedBytes = int(shared->second >= 1024 ? shared->second - 1024 : shared->second);
    out.push_back(k);
  }
  return out;
}

}  // namespace rtcg
