// A raw CUDA module (CUDA C of one's own, compiled at run time by rtcg: docs/api.md, "Raw CUDA
// modules"), used by examples/embed/raw_module.cpp, examples/python/raw_module.py and
// `rtcgc cuda examples/cuda/axpy_tiled.cu`. y = a x + y, each thread TILE elements a block apart;
// tuned over TILE and the block size, verified against axpy_reference.
#ifndef TILE
#define TILE 1
#endif

extern "C" __global__ void axpy_tiled(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
  const int first = blockIdx.x * blockDim.x * TILE + threadIdx.x;
#pragma unroll
  for (int t = 0; t < TILE; ++t) {
    const int i = first + t * blockDim.x;
    if (i < n) y[i] = a * x[i] + y[i];
  }
}

extern "C" __global__ void axpy_reference(int n, float a, const float* x, float* y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
