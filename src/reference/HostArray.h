// A dense row-major array in host memory, stored at its element type: f32 arrays hold float
// (exactly the bytes the GPU gets), f64 double, i32 int32_t, i64 int64_t, u32 uint32_t, i8 int8_t, u8 uint8_t,
// f16 and bf16 the 16-bit rtcg::f16 and rtcg::bf16 (rtcg/Half.h). Used by the reference
// executor, the tests, the GPU runtime tests and `rtcgc run --cpu`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace rtcg {

class HostArray {
 public:
  HostArray() = default;
  // Zero-filled. Throws rtcg::Error for a negative extent or a bool element type.
  HostArray(ScalarType type, std::vector<int64_t> shape);

  ScalarType type() const { return type_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t size() const { return size_; }  // elements
  size_t bytes() const { return size_t(size_) * size_t(typeBytes(type_)); }
  bool empty() const { return size_ == 0; }

  void* data() { return storage_.data(); }
  const void* data() const { return storage_.data(); }
  // Typed views; throw rtcg::Error when T does not match the element type.
  template <class T> T* as();
  template <class T> const T* as() const;

  // Element access through double / int64 (rounded / truncated to the element type on set:
  // f32, f16 and bf16 round to nearest even, setInt wraps to 32 or 8 bits for i32, u32, i8 and u8, set
  // truncates toward zero and saturates for integer elements).
  double get(int64_t i) const;
  void set(int64_t i, double v);
  int64_t getInt(int64_t i) const;
  void setInt(int64_t i, int64_t v);

  // All elements as double (exact for f32, f64 and integers up to 2^53).
  std::vector<double> toDoubles() const;
  // Overwrites every element from `values` (size must match), rounding to the element type.
  void assignDoubles(const std::vector<double>& values);
  static HostArray fromDoubles(ScalarType type, std::vector<int64_t> shape, const std::vector<double>& values);

  void fill(double v);

  // "f32[3, 4]"
  std::string describe() const;

 private:
  void checkType(ScalarType expected, const char* cppType) const;

  ScalarType type_ = ScalarType::F32;
  std::vector<int64_t> shape_;
  int64_t size_ = 0;
  std::vector<uint64_t> storage_;  // 8-byte words, so every element type is aligned
};

template <> float* HostArray::as<float>();
template <> double* HostArray::as<double>();
template <> int32_t* HostArray::as<int32_t>();
template <> int64_t* HostArray::as<int64_t>();
template <> const float* HostArray::as<float>() const;
template <> const double* HostArray::as<double>() const;
template <> const int32_t* HostArray::as<int32_t>() const;
template <> const int64_t* HostArray::as<int64_t>() const;
template <> int8_t* HostArray::as<int8_t>();
template <> uint8_t* HostArray::as<uint8_t>();
template <> const int8_t* HostArray::as<int8_t>() const;
template <> const uint8_t* HostArray::as<uint8_t>() const;
template <> uint32_t* HostArray::as<uint32_t>();
template <> const uint32_t* HostArray::as<uint32_t>() const;

// Conversion of a double to an integer type the way the GPU's conversions do it: truncation toward
// zero, saturating at the range of `t` (I32, I64, U32, I8 or U8), NaN gives 0.
int64_t truncateToInt(double v, ScalarType t);
// Wraps an integer to the range of `t` (two's complement), as a store or cast to i32 does.
int64_t wrapToInt(int64_t v, ScalarType t);

}  // namespace rtcg
