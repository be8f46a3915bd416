// relu: y = max(x, 0) elementwise over x[ROWS,COLS] (torch.relu); NaN stays
// NaN (x < 0 ? 0 : x keeps it, where fmaxf(x, 0) would give 0).
//
// The fp64 reference is src/ops/relu.cu.
//
// v1 naive (RC2a): a poor launch configuration: a fixed grid of 64 blocks
//            of 256 threads (16384 threads: about 6% of the H200's 270336
//            thread slots, at most 64 of its 132 SMs busy) walks the tensor
//            in a grid-stride loop with scalar accesses, far under one wave:
//            one load in flight per thread cannot cover DRAM latency. (The
//            still smaller 8 x 64-thread grid would need about a third of a
//            second at the large shape, past the suite's time budget.)
// v2 fast:   one pass: 16-byte streaming loads and stores (8 fp16/bf16 or 4
//            fp32 elements a vector), four vectors in flight per thread,
//            256-thread blocks in a grid-stride loop over one wave (as many
//            blocks as fit on the SMs at once). Elements past the last whole
//            vector take a scalar tail kernel; pointers that are not 16-byte
//            aligned take a plain scalar kernel.
#include "common.cuh"

template <typename T>
static bool relu_args_ok(const DLTensor *in, int nin, const DLTensor *out, int nout)
{
    return nin == 1 && nout == 1 && dl_is<T>(&in[0], 2) && dl_is<T>(&out[0], 2) &&
           out[0].shape[0] == in[0].shape[0] && out[0].shape[1] == in[0].shape[1];
}

// NaN < 0 is false: a NaN (and +Inf, and -0) passes through bit for bit.
template <typename T> __device__ __forceinline__ T relu_one(T v)
{
    return to_f(v) < 0.f ? from_f<T>(0.f) : v;
}

// ---------------------------------------------------------------- v1 naive
#define RELU_V1_BLOCKS 64
#define RELU_V1_THREADS 256

template <typename T> __global__ void relu_v1_tiny_grid(const T *x, T *y, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = relu_one(x[i]);
}

template <typename T>
static int relu_v1(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                   kgate_stream st)
{
    if (!relu_args_ok<T>(in, nin, out, nout))
        return kernel_fail(p, 1, "relu v1: expected x[R,C] -> y[R,C] of the kernel's dtype");
    cudaStream_t s = (cudaStream_t)st;
    int64_t n = in[0].shape[0] * in[0].shape[1];
    if (n == 0)
        return 0;
    relu_v1_tiny_grid<T>
        <<<RELU_V1_BLOCKS, RELU_V1_THREADS, 0, s>>>((const T *)in[0].data, (T *)out[0].data, n);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v2 fast
#define RELU_BLOCK 256
#define RELU_UNROLL 4

template <typename T> __device__ __forceinline__ uint4 relu_vec(uint4 a)
{
    uint4 r;
    const T *ea = reinterpret_cast<const T *>(&a);
    T *er = reinterpret_cast<T *>(&r);
#pragma unroll
    for (int k = 0; k < (int)(16 / sizeof(T)); k++)
        er[k] = relu_one(ea[k]);
    return r;
}

template <typename T>
__global__ __launch_bounds__(RELU_BLOCK) void relu_v2_vec(const uint4 *__restrict__ x,
                                                          uint4 *__restrict__ y, int64_t nvec)
{
    const int64_t tile = RELU_BLOCK * RELU_UNROLL;
    for (int64_t base = blockIdx.x * tile + threadIdx.x; base < nvec;
         base += (int64_t)gridDim.x * tile) {
        uint4 a[RELU_UNROLL];
#pragma unroll
        for (int u = 0; u < RELU_UNROLL; u++) {
            int64_t i = base + u * RELU_BLOCK;
            a[u] = make_uint4(0, 0, 0, 0);
            if (i < nvec)
                a[u] = __ldcs(x + i);
        }
#pragma unroll
        for (int u = 0; u < RELU_UNROLL; u++) {
            int64_t i = base + u * RELU_BLOCK;
            if (i < nvec)
                __stcs(y + i, relu_vec<T>(a[u]));
        }
    }
}

// Elements [start, n) one at a time: the tail after the vectors, or all of
// them when a pointer is not 16-byte aligned.
template <typename T>
__global__ void relu_v2_scalar(const T *__restrict__ x, T *__restrict__ y, int64_t start, int64_t n)
{
    for (int64_t i = start + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = relu_one(x[i]);
}

template <typename T>
static int relu_v2(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                   kgate_stream st)
{
    if (!relu_args_ok<T>(in, nin, out, nout))
        return kernel_fail(p, 1, "relu v2: expected x[R,C] -> y[R,C] of the kernel's dtype");
    cudaStream_t s = (cudaStream_t)st;
    const int64_t n = in[0].shape[0] * in[0].shape[1];
    const T *x = (const T *)in[0].data;
    T *y = (T *)out[0].data;
    if (n == 0)
        return 0;
    constexpr int E = 16 / sizeof(T);
    const bool aligned = (((uintptr_t)x | (uintptr_t)y) & 15) == 0;
    const int64_t nvec = aligned ? n / E : 0;
    if (nvec > 0) {
        int64_t tiles = (nvec + RELU_BLOCK * RELU_UNROLL - 1) / (RELU_BLOCK * RELU_UNROLL);
        relu_v2_vec<T><<<wave_grid<relu_v2_vec<T>, RELU_BLOCK>(tiles), RELU_BLOCK, 0, s>>>(
            (const uint4 *)x, (uint4 *)y, nvec);
    }
    const int64_t start = nvec * E;
    if (start < n) {
        int64_t rest = n - start, blocks = (rest + 255) / 256;
        relu_v2_scalar<T><<<(unsigned)(blocks < 1024 ? blocks : 1024), 256, 0, s>>>(x, y, start, n);
    }
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

static const kgate_kernel variants[] = {
    {"relu_v1_fp16", "relu", "fp16", NULL, 1, 1, relu_v1<__half>,
     "a fixed 64 x 256-thread grid, scalar accesses: far under one wave (RC2a)", NULL, NULL},
    {"relu_v2_fp16", "relu", "fp16", NULL, 1, 1, relu_v2<__half>,
     "one pass, 16-byte streaming I/O, grid-stride over one wave", NULL, NULL},
    {"relu_v1_bf16", "relu", "bf16", NULL, 1, 1, relu_v1<__nv_bfloat16>,
     "a fixed 64 x 256-thread grid, scalar accesses: far under one wave (RC2a)", NULL, NULL},
    {"relu_v2_bf16", "relu", "bf16", NULL, 1, 1, relu_v2<__nv_bfloat16>,
     "one pass, 16-byte streaming I/O, grid-stride over one wave", NULL, NULL},
    {"relu_v1_fp32", "relu", "fp32", NULL, 1, 1, relu_v1<float>,
     "a fixed 64 x 256-thread grid, scalar accesses: far under one wave (RC2a)", NULL, NULL},
    {"relu_v2_fp32", "relu", "fp32", NULL, 1, 1, relu_v2<float>,
     "one pass, 16-byte streaming I/O, grid-stride over one wave", NULL, NULL},
};
KG_EXPORT_VARIANTS(relu, variants)
