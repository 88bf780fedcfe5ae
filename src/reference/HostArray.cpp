#include "reference/HostArray.h"

#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rtcg/Half.h"
#include "support/Error.h"

namespace rtcg {

int64_t truncateToInt(double v, ScalarType t) {
  if (std::isnan(v)) return 0;
  // The range [lo, hi]; 2^7, 2^8, 2^31 and 2^63 are exactly representable: anything at or above
  // hi + 1 saturates.
  int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  double hiExclusive = 9223372036854775808.0;
  switch (t) {
    case ScalarType::I32: lo = INT32_MIN, hi = INT32_MAX, hiExclusive = 2147483648.0; break;
    case ScalarType::I8: lo = -128, hi = 127, hiExclusive = 128.0; break;
    case ScalarType::U8: lo = 0, hi = 255, hiExclusive = 256.0; break;
    case ScalarType::U32: lo = 0, hi = UINT32_MAX, hiExclusive = 4294967296.0; break;
    default: break;
  }
  if (v <= double(lo)) return lo;
  if (v >= hiExclusive) return hi;
  return int64_t(v);  // truncates toward zero
}

int64_t wrapToInt(int64_t v, ScalarType t) {
  switch (t) {
    case ScalarType::I32: return int32_t(uint32_t(uint64_t(v)));  // modular since C++20
    case ScalarType::I8: return int8_t(uint8_t(uint64_t(v)));
    case ScalarType::U8: return uint8_t(uint64_t(v));
    case ScalarType::U32: return uint32_t(uint64_t(v));
    case ScalarType::Bool: return v != 0;
    default: return v;
  }
}

HostArray::HostArray(ScalarType type, std::vector<int64_t> shape) : type_(type), shape_(std::move(shape)) {
  if (type == ScalarType::Bool) throw Error("host arrays of bool elements are not supported");
  size_ = 1;
  for (int64_t e : shape_) {
    if (e < 0) throw Error(fmt::format("array extent {} is negative", e));
    if (e > 0 && size_ > std::numeric_limits<int64_t>::max() / e)
      throw Error("array size overflows 64 bits");
    size_ *= e;
  }
  storage_.assign((bytes() + 7) / 8, 0);
}

void HostArray::checkType(ScalarType expected, const char* cppType) const {
  if (type_ != expected)
    throw Error(fmt::format("host array holds {} elements, accessed as {}", typeName(type_), cppType));
}

template <> float* HostArray::as<float>() { checkType(ScalarType::F32, "float"); return reinterpret_cast<float*>(storage_.data()); }
template <> double* HostArray::as<double>() { checkType(ScalarType::F64, "double"); return reinterpret_cast<double*>(storage_.data()); }
template <> int32_t* HostArray::as<int32_t>() { checkType(ScalarType::I32, "int32_t"); return reinterpret_cast<int32_t*>(storage_.data()); }
template <> int64_t* HostArray::as<int64_t>() { checkType(ScalarType::I64, "int64_t"); return reinterpret_cast<int64_t*>(storage_.data()); }
template <> f16* HostArray::as<f16>() { checkType(ScalarType::F16, "rtcg::f16"); return reinterpret_cast<f16*>(storage_.data()); }
template <> bf16* HostArray::as<bf16>() { checkType(ScalarType::BF16, "rtcg::bf16"); return reinterpret_cast<bf16*>(storage_.data()); }
template <> int8_t* HostArray::as<int8_t>() { checkType(ScalarType::I8, "int8_t"); return reinterpret_cast<int8_t*>(storage_.data()); }
template <> uint8_t* HostArray::as<uint8_t>() { checkType(ScalarType::U8, "uint8_t"); return reinterpret_cast<uint8_t*>(storage_.data()); }
template <> uint32_t* HostArray::as<uint32_t>() { checkType(ScalarType::U32, "uint32_t"); return reinterpret_cast<uint32_t*>(storage_.data()); }
template <> const uint32_t* HostArray::as<uint32_t>() const { return const_cast<HostArray*>(this)->as<uint32_t>(); }
template <> const int8_t* HostArray::as<int8_t>() const { return const_cast<HostArray*>(this)->as<int8_t>(); }
template <> const uint8_t* HostArray::as<uint8_t>() const { return const_cast<HostArray*>(this)->as<uint8_t>(); }
template <> const f16* HostArray::as<f16>() const { return const_cast<HostArray*>(this)->as<f16>(); }
template <> const bf16* HostArray::as<bf16>() const { return const_cast<HostArray*>(this)->as<bf16>(); }
template <> const float* HostArray::as<float>() const { return const_cast<HostArray*>(this)->as<float>(); }
template <> const double* HostArray::as<double>() const { return const_cast<HostArray*>(this)->as<double>(); }
template <> const int32_t* HostArray::as<int32_t>() const { return const_cast<HostArray*>(this)->as<int32_t>(); }
template <> const int64_t* HostArray::as<int64_t>() const { return const_cast<HostArray*>(this)->as<int64_t>(); }

static void checkIndex(int64_t i, int64_t size) {
  if (i < 0 || i >= size) throw Error(fmt::format("host array element {} out of range (size {})", i, size));
}

double HostArray::get(int64_t i) const {
  checkIndex(i, size_);
  switch (type_) {
    case ScalarType::F32: return as<float>()[i];
    case ScalarType::F64: return as<double>()[i];
    case ScalarType::I32: return as<int32_t>()[i];
    case ScalarType::I64: return double(as<int64_t>()[i]);
    case ScalarType::F16: return double(as<f16>()[i]);  // exact
    case ScalarType::BF16: return double(as<bf16>()[i]);
    case ScalarType::I8: return as<int8_t>()[i];
    case ScalarType::U8: return as<uint8_t>()[i];
    case ScalarType::U32: return as<uint32_t>()[i];
    case ScalarType::Bool: break;
  }
  RTCG_ASSERT(false, "bad host array type");
}

void HostArray::set(int64_t i, double v) {
  checkIndex(i, size_);
  switch (type_) {
    case ScalarType::F32: as<float>()[i] = float(v); return;
    case ScalarType::F64: as<double>()[i] = v; return;
    case ScalarType::I32: as<int32_t>()[i] = int32_t(truncateToInt(v, ScalarType::I32)); return;
    case ScalarType::I64: as<int64_t>()[i] = truncateToInt(v, ScalarType::I64); return;
    case ScalarType::F16: as<f16>()[i] = f16(v); return;  // to nearest, ties to even
    case ScalarType::BF16: as<bf16>()[i] = bf16(v); return;
    case ScalarType::I8: as<int8_t>()[i] = int8_t(truncateToInt(v, ScalarType::I8)); return;
    case ScalarType::U8: as<uint8_t>()[i] = uint8_t(truncateToInt(v, ScalarType::U8)); return;
    case ScalarType::U32: as<uint32_t>()[i] = uint32_t(truncateToInt(v, ScalarType::U32)); return;
    case ScalarType::Bool: break;
  }
  RTCG_ASSERT(false, "bad host array type");
}

int64_t HostArray::getInt(int64_t i) const {
  checkIndex(i, size_);
  switch (type_) {
    case ScalarType::I32: return as<int32_t>()[i];
    case ScalarType::I64: return as<int64_t>()[i];
    case ScalarType::I8: return as<int8_t>()[i];
    case ScalarType::U8: return as<uint8_t>()[i];
    case ScalarType::U32: return as<uint32_t>()[i];
    case ScalarType::F32:
    case ScalarType::F64:
    case ScalarType::F16:
    case ScalarType::BF16: return truncateToInt(get(i), ScalarType::I64);
    case ScalarType::Bool: break;
  }
  RTCG_ASSERT(false, "bad host array type");
}

void HostArray::setInt(int64_t i, int64_t v) {
  checkIndex(i, size_);
  switch (type_) {
    case ScalarType::I32: as<int32_t>()[i] = int32_t(wrapToInt(v, ScalarType::I32)); return;
    case ScalarType::I64: as<int64_t>()[i] = v; return;
    case ScalarType::I8: as<int8_t>()[i] = int8_t(wrapToInt(v, ScalarType::I8)); return;
    case ScalarType::U8: as<uint8_t>()[i] = uint8_t(wrapToInt(v, ScalarType::U8)); return;
    case ScalarType::U32: as<uint32_t>()[i] = uint32_t(wrapToInt(v, ScalarType::U32)); return;
    case ScalarType::F32:
    case ScalarType::F64:
    case ScalarType::F16:
    case ScalarType::BF16: set(i, intToFloat(v, type_)); return;  // one rounding
    case ScalarType::Bool: break;
  }
  RTCG_ASSERT(false, "bad host array type");
}

std::vector<double> HostArray::toDoubles() const {
  std::vector<double> out(size_);
  switch (type_) {
    case ScalarType::F32: { const float* p = as<float>(); for (int64_t i = 0; i < size_; ++i) out[i] = p[i]; break; }
    case ScalarType::F64: if (size_) std::memcpy(out.data(), data(), bytes()); break;
    case ScalarType::I32: { const int32_t* p = as<int32_t>(); for (int64_t i = 0; i < size_; ++i) out[i] = p[i]; break; }
    case ScalarType::I64: { const int64_t* p = as<int64_t>(); for (int64_t i = 0; i < size_; ++i) out[i] = double(p[i]); break; }
    case ScalarType::F16:
    case ScalarType::BF16:
    case ScalarType::I8:
    case ScalarType::U8:
    case ScalarType::U32: for (int64_t i = 0; i < size_; ++i) out[i] = get(i); break;
    case ScalarType::Bool: RTCG_ASSERT(false, "bad host array type");
  }
  return out;
}

void HostArray::assignDoubles(const std::vector<double>& values) {
  if (int64_t(values.size()) != size_)
    throw Error(fmt::format("assigning {} values to a host array of {} elements", values.size(), size_));
  switch (type_) {
    case ScalarType::F32: { float* p = as<float>(); for (int64_t i = 0; i < size_; ++i) p[i] = float(values[i]); break; }
    case ScalarType::F64: if (size_) std::memcpy(data(), values.data(), bytes()); break;
    default: for (int64_t i = 0; i < size_; ++i) set(i, values[i]); break;
  }
}

HostArray HostArray::fromDoubles(ScalarType type, std::vector<int64_t> shape, const std::vector<double>& values) {
  HostArray a(type, std::move(shape));
  a.assignDoubles(values);
  return a;
}

void HostArray::fill(double v) {
  switch (type_) {
    case ScalarType::F32: { float* p = as<float>(); for (int64_t i = 0; i < size_; ++i) p[i] = float(v); break; }
    case ScalarType::F64: { double* p = as<double>(); for (int64_t i = 0; i < size_; ++i) p[i] = v; break; }
    default: for (int64_t i = 0; i < size_; ++i) set(i, v); break;
  }
}

std::string HostArray::describe() const { return fmt::format("{}[{}]", typeName(type_), fmt::join(shape_, ", ")); }

}  // namespace rtcg
