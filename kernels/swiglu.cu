// swiglu: y = silu(a) * b = a / (1 + exp(-a)) * b elementwise over
// a[ROWS,COLS] and b[ROWS,COLS] (the Liger / TritonBench SwiGLU forward),
// fp32 arithmetic, rounded once. The division form is PyTorch's CUDA silu:
// a = -Inf gives -Inf / Inf = NaN, and every variant keeps that (an IEEE
// division, never a product with a reciprocal that could turn it into -0).
//
// The fp64 reference is src/ops/swiglu.cu.
//
// v1 naive (RC0b): dtype round trips: a and b are each converted into an
//            fp32 scratch buffer, a third kernel computes y in fp32 into a
//            third buffer, a fourth converts it back: four extra passes over
//            memory (30 bytes moved per fp16 element where 6 are essential),
//            every access a scalar one.
// v2 fast:   one pass: 16-byte streaming loads of a and b and 16-byte
//            streaming stores of y (8 elements a vector), four vectors per
//            input in flight per thread, 256-thread blocks in a grid-stride
//            loop over one wave (as many blocks as fit on the SMs at once);
//            __expf and an IEEE division. Elements past the last whole
//            vector take a scalar tail kernel; pointers that are not 16-byte
//            aligned take a plain scalar kernel.
#include "common.cuh"

template <typename T>
static bool swiglu_args_ok(const DLTensor *in, int nin, const DLTensor *out, int nout)
{
    return nin == 2 && nout == 1 && dl_is<T>(&in[0], 2) && dl_is<T>(&in[1], 2) &&
           dl_is<T>(&out[0], 2) && in[1].shape[0] == in[0].shape[0] &&
           in[1].shape[1] == in[0].shape[1] && out[0].shape[0] == in[0].shape[0] &&
           out[0].shape[1] == in[0].shape[1];
}

// ---------------------------------------------------------------- v1 naive
template <typename T> __global__ void swiglu_v1_to_fp32(const T *x, float *xf, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        xf[i] = to_f(x[i]);
}

__global__ void swiglu_v1_fp32(const float *af, const float *bf, float *yf, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        yf[i] = af[i] / (1.f + expf(-af[i])) * bf[i];
}

template <typename T> __global__ void swiglu_v1_from_fp32(const float *yf, T *y, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = from_f<T>(yf[i]);
}

static void *swiglu_v1_buf;
static size_t swiglu_v1_have;

template <typename T>
static int swiglu_v1(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                     kgate_stream st)
{
    if (!swiglu_args_ok<T>(in, nin, out, nout))
        return kernel_fail(p, 1,
                           "swiglu v1: expected a[R,C], b[R,C] -> y[R,C] of the kernel's dtype");
    cudaStream_t s = (cudaStream_t)st;
    int64_t n = in[0].shape[0] * in[0].shape[1];
    if (n == 0)
        return 0;
    float *af =
        (float *)scratch_get(&swiglu_v1_buf, &swiglu_v1_have, 3 * (size_t)n * sizeof(float));
    if (!af)
        return kernel_fail(p, 2, "swiglu v1: out of device memory for fp32 buffers");
    float *bf = af + n, *yf = bf + n;
    swiglu_v1_to_fp32<T><<<1024, 256, 0, s>>>((const T *)in[0].data, af, n);
    swiglu_v1_to_fp32<T><<<1024, 256, 0, s>>>((const T *)in[1].data, bf, n);
    swiglu_v1_fp32<<<1024, 256, 0, s>>>(af, bf, yf, n);
    swiglu_v1_from_fp32<T><<<1024, 256, 0, s>>>(yf, (T *)out[0].data, n);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v2 fast
#define SWIGLU_BLOCK 256
#define SWIGLU_UNROLL 4

// silu(a) * b with the fast exponential (ex2.approx: +Inf at +Inf, 0 at
// -Inf) and an IEEE division, so a = -Inf gives -Inf / Inf = NaN as the
// reference does.
__device__ __forceinline__ float swiglu_v2_one(float a, float b)
{
    return a / (1.f + __expf(-a)) * b;
}

template <typename T> __device__ __forceinline__ uint4 swiglu_vec(uint4 a, uint4 b)
{
    uint4 r;
    const T *ea = reinterpret_cast<const T *>(&a);
    const T *eb = reinterpret_cast<const T *>(&b);
    T *er = reinterpret_cast<T *>(&r);
#pragma unroll
    for (int k = 0; k < (int)(16 / sizeof(T)); k++)
        er[k] = from_f<T>(swiglu_v2_one(to_f(ea[k]), to_f(eb[k])));
    return r;
}

template <typename T>
__global__ __launch_bounds__(SWIGLU_BLOCK) void swiglu_v2_vec(const uint4 *__restrict__ a,
                                                              const uint4 *__restrict__ b,
                                                              uint4 *__restrict__ y, int64_t nvec)
{
    const int64_t tile = SWIGLU_BLOCK * SWIGLU_UNROLL;
    for (int64_t base = blockIdx.x * tile + threadIdx.x; base < nvec;
         base += (int64_t)gridDim.x * tile) {
        uint4 va[SWIGLU_UNROLL], vb[SWIGLU_UNROLL];
#pragma unroll
        for (int u = 0; u < SWIGLU_UNROLL; u++) {
            int64_t i = base + u * SWIGLU_BLOCK;
            va[u] = vb[u] = make_uint4(0, 0, 0, 0);
            if (i < nvec) {
                va[u] = __ldcs(a + i);
                vb[u] = __ldcs(b + i);
            }
        }
#pragma unroll
        for (int u = 0; u < SWIGLU_UNROLL; u++) {
            int64_t i = base + u * SWIGLU_BLOCK;
            if (i < nvec)
                __stcs(y + i, swiglu_vec<T>(va[u], vb[u]));
        }
    }
}

// Elements [start, n) one at a time: the tail after the vectors, or all of
// them when a pointer is not 16-byte aligned.
template <typename T>
__global__ void swiglu_v2_scalar(const T *__restrict__ a, const T *__restrict__ b,
                                 T *__restrict__ y, int64_t start, int64_t n)
{
    for (int64_t i = start + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = from_f<T>(swiglu_v2_one(to_f(a[i]), to_f(b[i])));
}

template <typename T>
static int swiglu_v2(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                     kgate_stream st)
{
    if (!swiglu_args_ok<T>(in, nin, out, nout))
        return kernel_fail(p, 1,
                           "swiglu v2: expected a[R,C], b[R,C] -> y[R,C] of the kernel's dtype");
    cudaStream_t s = (cudaStream_t)st;
    const int64_t n = in[0].shape[0] * in[0].shape[1];
    const T *a = (const T *)in[0].data, *b = (const T *)in[1].data;
    T *y = (T *)out[0].data;
    if (n == 0)
        return 0;
    constexpr int E = 16 / sizeof(T);
    const bool aligned = (((uintptr_t)a | (uintptr_t)b | (uintptr_t)y) & 15) == 0;
    const int64_t nvec = aligned ? n / E : 0;
    if (nvec > 0) {
        int64_t tiles = (nvec + SWIGLU_BLOCK * SWIGLU_UNROLL - 1) / (SWIGLU_BLOCK * SWIGLU_UNROLL);
        swiglu_v2_vec<T>
            <<<wave_grid<swiglu_v2_vec<T>, SWIGLU_BLOCK>(tiles), SWIGLU_BLOCK, 0, s>>>(
                (const uint4 *)a, (const uint4 *)b, (uint4 *)y, nvec);
    }
    const int64_t start = nvec * E;
    if (start < n) {
        int64_t rest = n - start, blocks = (rest + 255) / 256;
        swiglu_v2_scalar<T>
            <<<(unsigned)(blocks < 1024 ? blocks : 1024), 256, 0, s>>>(a, b, y, start, n);
    }
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

static const kgate_kernel variants[] = {
    {"swiglu_v1_fp16", "swiglu", "fp16", NULL, 2, 1, swiglu_v1<__half>,
     "fp32 round trips of a, b and y through scratch buffers, scalar accesses (RC0b)", NULL, NULL},
    {"swiglu_v2_fp16", "swiglu", "fp16", NULL, 2, 1, swiglu_v2<__half>,
     "one pass, 16-byte streaming I/O, grid-stride over one wave", NULL, NULL},
    {"swiglu_v1_bf16", "swiglu", "bf16", NULL, 2, 1, swiglu_v1<__nv_bfloat16>,
     "fp32 round trips of a, b and y through scratch buffers, scalar accesses (RC0b)", NULL, NULL},
    {"swiglu_v2_bf16", "swiglu", "bf16", NULL, 2, 1, swiglu_v2<__nv_bfloat16>,
     "one pass, 16-byte streaming I/O, grid-stride over one wave", NULL, NULL},
};
KG_EXPORT_VARIANTS(swiglu, variants)
