// GPU code for the runtime tests, as PTX text, so the tests need neither nvcc nor NVRTC.
// Produced with `nvcc -ptx -arch=compute_75` (CUDA 13.0) from:
//
//   extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
//     int i = blockIdx.x * blockDim.x + threadIdx.x;
//     if (i < n) c[i] = a[i] + b[i];
//   }
//   extern "C" __global__ void axpb(double* out, const double* x, float alpha, double beta, long long n) {
//     long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
//     if (i < n) out[i] = alpha * x[i] + beta;
//   }
//   extern "C" __global__ void reverse_smem(float* data, int n) {   // n floats of dynamic shared memory
//     extern __shared__ float s[];
//     for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = data[i];
//     __syncthreads();
//     for (int i = threadIdx.x; i < n; i += blockDim.x) data[i] = s[n - 1 - i];
//   }
//   extern "C" __global__ void store_at(int* p, int value) { *(volatile int*)p = value; }
//
// PTX ISA 9.0 needs a CUDA 13 driver; .target sm_75 runs on every GPU CUDA 13 supports.
#pragma once

namespace rtcg::cuda::test {

inline constexpr const char* kTestPtx = R"PTX(
.version 9.0
.target sm_75
.address_size 64

	// .globl	add
.extern .shared .align 16 .b8 s[];

.visible .entry add(
	.param .u64 add_param_0,
	.param .u64 add_param_1,
	.param .u64 add_param_2,
	.param .u32 add_param_3
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<4>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<11>;


	ld.param.u64 	%rd1, [add_param_0];
	ld.param.u64 	%rd2, [add_param_1];
	ld.param.u64 	%rd3, [add_param_2];
	ld.param.u32 	%r2, [add_param_3];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.s32 	%p1, %r1, %r2;
	@%p1 bra 	$L__BB0_2;

	cvta.to.global.u64 	%rd4, %rd1;
	mul.wide.s32 	%rd5, %r1, 4;
	add.s64 	%rd6, %rd4, %rd5;
	cvta.to.global.u64 	%rd7, %rd2;
	add.s64 	%rd8, %rd7, %rd5;
	ld.global.f32 	%f1, [%rd8];
	ld.global.f32 	%f2, [%rd6];
	add.f32 	%f3, %f2, %f1;
	cvta.to.global.u64 	%rd9, %rd3;
	add.s64 	%rd10, %rd9, %rd5;
	st.global.f32 	[%rd10], %f3;

$L__BB0_2:
	ret;

}
	// .globl	axpb
.visible .entry axpb(
	.param .u64 axpb_param_0,
	.param .u64 axpb_param_1,
	.param .f32 axpb_param_2,
	.param .f64 axpb_param_3,
	.param .u64 axpb_param_4
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<2>;
	.reg .b32 	%r<4>;
	.reg .f64 	%fd<5>;
	.reg .b64 	%rd<12>;


	ld.param.u64 	%rd2, [axpb_param_0];
	ld.param.u64 	%rd3, [axpb_param_1];
	ld.param.f32 	%f1, [axpb_param_2];
	ld.param.f64 	%fd1, [axpb_param_3];
	ld.param.u64 	%rd4, [axpb_param_4];
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %ntid.x;
	mul.wide.u32 	%rd5, %r1, %r2;
	mov.u32 	%r3, %tid.x;
	cvt.u64.u32 	%rd6, %r3;
	add.s64 	%rd1, %rd5, %rd6;
	setp.ge.s64 	%p1, %rd1, %rd4;
	@%p1 bra 	$L__BB1_2;

	cvta.to.global.u64 	%rd7, %rd3;
	shl.b64 	%rd8, %rd1, 3;
	add.s64 	%rd9, %rd7, %rd8;
	ld.global.f64 	%fd2, [%rd9];
	cvt.f64.f32 	%fd3, %f1;
	fma.rn.f64 	%fd4, %fd2, %fd3, %fd1;
	cvta.to.global.u64 	%rd10, %rd2;
	add.s64 	%rd11, %rd10, %rd8;
	st.global.f64 	[%rd11], %fd4;

$L__BB1_2:
	ret;

}
	// .globl	reverse_smem
.visible .entry reverse_smem(
	.param .u64 reverse_smem_param_0,
	.param .u32 reverse_smem_param_1
)
{
	.reg .pred 	%p<5>;
	.reg .f32 	%f<3>;
	.reg .b32 	%r<19>;
	.reg .b64 	%rd<7>;


	ld.param.u64 	%rd2, [reverse_smem_param_0];
	ld.param.u32 	%r8, [reverse_smem_param_1];
	cvta.to.global.u64 	%rd1, %rd2;
	mov.u32 	%r18, %tid.x;
	setp.ge.s32 	%p1, %r18, %r8;
	@%p1 bra 	$L__BB2_3;

	mov.u32 	%r2, %ntid.x;
	mov.u32 	%r10, s;
	mov.u32 	%r17, %r18;

$L__BB2_2:
	mul.wide.s32 	%rd3, %r17, 4;
	add.s64 	%rd4, %rd1, %rd3;
	ld.global.f32 	%f1, [%rd4];
	shl.b32 	%r9, %r17, 2;
	add.s32 	%r11, %r10, %r9;
	st.shared.f32 	[%r11], %f1;
	add.s32 	%r17, %r17, %r2;
	setp.lt.s32 	%p2, %r17, %r8;
	@%p2 bra 	$L__BB2_2;

$L__BB2_3:
	bar.sync 	0;
	@%p1 bra 	$L__BB2_6;

	mov.u32 	%r5, %ntid.x;
	mov.u32 	%r15, s;

$L__BB2_5:
	not.b32 	%r12, %r18;
	add.s32 	%r13, %r12, %r8;
	shl.b32 	%r14, %r13, 2;
	add.s32 	%r16, %r15, %r14;
	ld.shared.f32 	%f2, [%r16];
	mul.wide.s32 	%rd5, %r18, 4;
	add.s64 	%rd6, %rd1, %rd5;
	st.global.f32 	[%rd6], %f2;
	add.s32 	%r18, %r18, %r5;
	setp.lt.s32 	%p4, %r18, %r8;
	@%p4 bra 	$L__BB2_5;

$L__BB2_6:
	ret;

}
	// .globl	store_at
.visible .entry store_at(
	.param .u64 store_at_param_0,
	.param .u32 store_at_param_1
)
{
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<3>;


	ld.param.u64 	%rd1, [store_at_param_0];
	ld.param.u32 	%r1, [store_at_param_1];
	cvta.to.global.u64 	%rd2, %rd1;
	st.volatile.global.u32 	[%rd2], %r1;
	ret;

}

)PTX";

}  // namespace rtcg::cuda::test
