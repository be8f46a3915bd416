// leaky_relu: y = x if x >= 0 else negative_slope * x, elementwise over
// x[ROWS,COLS] (torch.nn.functional.leaky_relu); NaN fails the compare and
// stays NaN through the product. Reads the scalar negative_slope.
//
// The fp64 reference is src/ops/leaky_relu.cu.
//
// v1 naive (RC1): strided access: one thread per element, but the matrix is
//            walked column-major (thread t takes row t % ROWS, column
//            t / ROWS), so consecutive lanes of a warp read and write
//            elements COLS apart: 32 sectors per warp access where 2 (fp16)
//            or 4 (fp32) would do, every line fetched again for each of its
//            columns.
// v2 fast:   one pass: 16-byte streaming loads and stores (8 fp16/bf16 or 4
//            fp32 elements a vector), four vectors in flight per thread,
//            256-thread blocks in a grid-stride loop over one wave (as many
//            blocks as fit on the SMs at once); the slope multiply in fp32,
//            rounded once. Elements past the last whole vector take a scalar
//            tail kernel; pointers that are not 16-byte aligned take a plain
//            scalar kernel.
#include "common.cuh"

template <typename T>
static bool lrelu_args_ok(const DLTensor *in, int nin, const DLTensor *out, int nout)
{
    return nin == 1 && nout == 1 && dl_is<T>(&in[0], 2) && dl_is<T>(&out[0], 2) &&
           out[0].shape[0] == in[0].shape[0] && out[0].shape[1] == in[0].shape[1];
}

// x >= 0 passes bit for bit; NaN >= 0 is false and slope * NaN is NaN.
template <typename T> __device__ __forceinline__ T lrelu_one(T v, float slope)
{
    const float f = to_f(v);
    return f >= 0.f ? v : from_f<T>(slope * f);
}

// ---------------------------------------------------------------- v1 naive
// Thread t handles element (t % rows, t / rows): lanes walk down a column.
template <typename T>
__global__ void lrelu_v1_colmajor(const T *x, T *y, int64_t rows, int64_t cols, float slope)
{
    int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (t >= rows * cols)
        return;
    int64_t i = (t % rows) * cols + t / rows;
    y[i] = lrelu_one(x[i], slope);
}

template <typename T>
static int leaky_relu_v1(const DLTensor *in, int nin, DLTensor *out, int nout,
                         const kgate_params *p, kgate_stream st)
{
    if (!lrelu_args_ok<T>(in, nin, out, nout))
        return kernel_fail(p, 1, "leaky_relu v1: expected x[R,C] -> y[R,C] of the kernel's dtype");
    const float slope = (float)kgate_scalar_get(p, "negative_slope", 0.01);
    cudaStream_t s = (cudaStream_t)st;
    int64_t rows = in[0].shape[0], cols = in[0].shape[1], n = rows * cols;
    if (n == 0)
        return 0;
    lrelu_v1_colmajor<T><<<(unsigned)((n + 255) / 256), 256, 0, s>>>(
        (const T *)in[0].data, (T *)out[0].data, rows, cols, slope);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v2 fast
#define LRELU_BLOCK 256
#define LRELU_UNROLL 4

template <typename T> __device__ __forceinline__ uint4 lrelu_vec(uint4 a, float slope)
{
    uint4 r;
    const T *ea = reinterpret_cast<const T *>(&a);
    T *er = reinterpret_cast<T *>(&r);
#pragma unroll
    for (int k = 0; k < (int)(16 / sizeof(T)); k++)
        er[k] = lrelu_one(ea[k], slope);
    return r;
}

template <typename T>
__global__ __launch_bounds__(LRELU_BLOCK) void lrelu_v2_vec(const uint4 *__restrict__ x,
                                                            uint4 *__restrict__ y, int64_t nvec,
                                                            float slope)
{
    const int64_t tile = LRELU_BLOCK * LRELU_UNROLL;
    for (int64_t base = blockIdx.x * tile + threadIdx.x; base < nvec;
         base += (int64_t)gridDim.x * tile) {
        uint4 a[LRELU_UNROLL];
#pragma unroll
        for (int u = 0; u < LRELU_UNROLL; u++) {
            int64_t i = base + u * LRELU_BLOCK;
            a[u] = make_uint4(0, 0, 0, 0);
            if (i < nvec)
                a[u] = __ldcs(x + i);
        }
#pragma unroll
        for (int u = 0; u < LRELU_UNROLL; u++) {
            int64_t i = base + u * LRELU_BLOCK;
            if (i < nvec)
                __stcs(y + i, lrelu_vec<T>(a[u], slope));
        }
    }
}

// Elements [start, n) one at a time: the tail after the vectors, or all of
// them when a pointer is not 16-byte aligned.
template <typename T>
__global__ void lrelu_v2_scalar(const T *__restrict__ x, T *__restrict__ y, int64_t start,
                                int64_t n, float slope)
{
    for (int64_t i = start + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = lrelu_one(x[i], slope);
}

template <typename T>
static int leaky_relu_v2(const DLTensor *in, int nin, DLTensor *out, int nout,
                         const kgate_params *p, kgate_stream st)
{
    if (!lrelu_args_ok<T>(in, nin, out, nout))
        return kernel_fail(p, 1, "leaky_relu v2: expected x[R,C] -> y[R,C] of the kernel's dtype");
    const float slope = (float)kgate_scalar_get(p, "negative_slope", 0.01);
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
        int64_t tiles = (nvec + LRELU_BLOCK * LRELU_UNROLL - 1) / (LRELU_BLOCK * LRELU_UNROLL);
        lrelu_v2_vec<T><<<wave_grid<lrelu_v2_vec<T>, LRELU_BLOCK>(tiles), LRELU_BLOCK, 0, s>>>(
            (const uint4 *)x, (uint4 *)y, nvec, slope);
    }
    const int64_t start = nvec * E;
    if (start < n) {
        int64_t rest = n - start, blocks = (rest + 255) / 256;
        lrelu_v2_scalar<T>
            <<<(unsigned)(blocks < 1024 ? blocks : 1024), 256, 0, s>>>(x, y, start, n, slope);
    }
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

static const kgate_kernel variants[] = {
    {"leaky_relu_v1_fp16", "leaky_relu", "fp16", NULL, 1, 1, leaky_relu_v1<__half>,
     "column-major walk of the row-major matrix: stride-COLS warp accesses (RC1)",
     "negative_slope", NULL},
    {"leaky_relu_v2_fp16", "leaky_relu", "fp16", NULL, 1, 1, leaky_relu_v2<__half>,
     "one pass, 16-byte streaming I/O, grid-stride over one wave", "negative_slope", NULL},
    {"leaky_relu_v1_bf16", "leaky_relu", "bf16", NULL, 1, 1, leaky_relu_v1<__nv_bfloat16>,
     "column-major walk of the row-major matrix: stride-COLS warp accesses (RC1)",
     "negative_slope", NULL},
    {"leaky_relu_v2_bf16", "leaky_relu", "bf16", NULL, 1, 1, leaky_relu_v2<__nv_bfloat16>,
     "one pass, 16-byte streaming I/O, grid-stride over one wave", "negative_slope", NULL},
    {"leaky_relu_v1_fp32", "leaky_relu", "fp32", NULL, 1, 1, leaky_relu_v1<float>,
     "column-major walk of the row-major matrix: stride-COLS warp accesses (RC1)",
     "negative_slope", NULL},
    {"leaky_relu_v2_fp32", "leaky_relu", "fp32", NULL, 1, 1, leaky_relu_v2<float>,
     "one pass, 16-byte streaming I/O, grid-stride over one wave", "negative_slope", NULL},
};
KG_EXPORT_VARIANTS(leaky_relu, variants)
