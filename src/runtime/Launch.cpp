#include "runtime/Launch.h"

#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "runtime/DriverApi.h"
#include "support/Error.h"

namespace rtcg::cuda {

std::string Dim3::str() const { return fmt::format("({}, {}, {})", x, y, z); }

KernelArg::KernelArg(Kind k, const void* value, size_t size) : kind_(k) { std::memcpy(bytes_, value, size); }

KernelArg KernelArg::pointer(uint64_t devicePtr) { return KernelArg(Kind::Pointer, &devicePtr, 8); }
KernelArg KernelArg::i32(int32_t v) { return KernelArg(Kind::I32, &v, 4); }
KernelArg KernelArg::i64(int64_t v) { return KernelArg(Kind::I64, &v, 8); }
KernelArg KernelArg::f32(float v) { return KernelArg(Kind::F32, &v, 4); }
KernelArg KernelArg::f64(double v) { return KernelArg(Kind::F64, &v, 8); }
KernelArg KernelArg::tensorMap(const unsigned char (&bytes)[128]) { return KernelArg(Kind::TensorMap, bytes, 128); }

KernelArg encodeTensorMap2d(const TensorMap2d& m, const std::string& what) {
  const detail::DriverTable& d = detail::driver();
  const std::string box = fmt::format("a box of {} x {} elements of a {} x {} array (rows {} bytes apart) at {:#x}",
                                      m.boxInner, m.boxOuter, m.inner, m.outer, m.pitchBytes, m.address);
  if (!d.tensorMapEncodeTiled)
    throw Error(fmt::format("{}: TMA needs cuTensorMapEncodeTiled (CUDA 12 driver), which {} lacks; for {}", what,
                            d.libraryName, box));
  // The copy moves bits: the type only fixes the element size (and the out-of-bounds fill, zero here).
  CUtensorMapDataType type;
  switch (m.elementBytes) {
    case 1: type = CU_TENSOR_MAP_DATA_TYPE_UINT8; break;  // i8 / u8
    case 2: type = m.bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16; break;
    case 4: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32; break;
    case 8: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT64; break;
    default: throw Error(fmt::format("{}: no TMA element type of {} bytes; for {}", what, m.elementBytes, box));
  }
  const cuuint64_t dims[2] = {m.inner, m.outer}, strides[1] = {m.pitchBytes};
  const cuuint32_t boxDims[2] = {m.boxInner, m.boxOuter}, elementStrides[2] = {1, 1};
  CUtensorMap map;
  const CUresult r = d.tensorMapEncodeTiled(&map, type, 2, reinterpret_cast<void*>(m.address), dims, strides, boxDims,
                                            elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                            CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  detail::check(r, "cuTensorMapEncodeTiled", fmt::format("the tensor map of {}: {}", what, box));
  static_assert(sizeof(CUtensorMap) == 128);
  unsigned char bytes[128];
  std::memcpy(bytes, &map, 128);
  return KernelArg::tensorMap(bytes);
}

std::string KernelArg::describe() const {
  auto as = [&](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, bytes_, sizeof v);
    return v;
  };
  switch (kind_) {
    case Kind::Pointer: return fmt::format("pointer {:#x}", as(uint64_t{}));
    case Kind::I32: return fmt::format("i32 {}", as(int32_t{}));
    case Kind::I64: return fmt::format("i64 {}", as(int64_t{}));
    case Kind::F32: return fmt::format("f32 {}", as(float{}));
    case Kind::F64: return fmt::format("f64 {}", as(double{}));
    case Kind::TensorMap: return "tensor map (128 bytes)";
  }
  return "?";
}

void launch(const Function& fn, Dim3 grid, Dim3 block, size_t dynamicSharedBytes, const Stream* stream,
            std::span<const KernelArg> args) {
  RTCG_ASSERT(fn.valid(), "launch of an empty Function");
  if (const auto& sizes = fn.parameterSizes()) {
    if (sizes->size() != args.size())
      throw Error(fmt::format("kernel '{}' takes {} parameter{}, but {} argument{} given", fn.name(), sizes->size(),
                              sizes->size() == 1 ? "" : "s", args.size(), args.size() == 1 ? " was" : "s were"));
    for (size_t i = 0; i < args.size(); ++i)
      if ((*sizes)[i] != args[i].size())
        throw Error(fmt::format("argument {} of kernel '{}' is {} ({} bytes), but the parameter takes {} bytes", i,
                                fn.name(), args[i].describe(), args[i].size(), (*sizes)[i]));
  }
  // cuLaunchKernel reads each parameter through a pointer to its value.
  std::vector<void*> params;
  params.reserve(args.size());
  for (const KernelArg& a : args) params.push_back(const_cast<void*>(a.data()));
  launchPacked(fn, grid, block, dynamicSharedBytes, stream, params);
}

void launchPacked(const Function& fn, Dim3 grid, Dim3 block, size_t dynamicSharedBytes, const Stream* stream,
                  std::span<void* const> params) {
  RTCG_ASSERT(fn.valid(), "launch of an empty Function");
  if (dynamicSharedBytes > UINT32_MAX)
    throw Error(fmt::format("{} bytes of dynamic shared memory for kernel '{}' is beyond any device", dynamicSharedBytes,
                            fn.name()));
  if (stream && stream->context() != fn.context())
    throw Error(fmt::format("kernel '{}' and the stream it is launched on belong to different CUDA contexts",
                            fn.name()));
  fn.context()->makeCurrent();
  detail::check(detail::driver().launchKernel(fn.handle(), grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                              static_cast<unsigned>(dynamicSharedBytes), streamHandle(stream),
                                              params.empty() ? nullptr : const_cast<void**>(params.data()), nullptr),
                "cuLaunchKernel",
                fmt::format("launching kernel '{}' with grid {}, block {} and {} bytes of dynamic shared memory",
                            fn.name(), grid.str(), block.str(), dynamicSharedBytes));
}

}  // namespace rtcg::cuda
