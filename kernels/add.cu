// add: z = x + y elementwise over x[N] and y[N] (torch.add).
//
// The fp64 reference is src/ops/add.cu.
//
// v1 naive (RC0b): dtype round trips: x and y are each converted into an fp32
//            scratch buffer, a third kernel adds them into a third fp32
//            buffer, a fourth converts it back: four extra passes over
//            memory (30 bytes moved per fp16 element where 6 are essential),
//            every access a scalar one.
// v2 fast:   one pass: 16-byte streaming loads of x and y and 16-byte
//            streaming stores of z, four vectors per input in flight per
//            thread, 256-thread blocks in a grid-stride loop over one wave
//            (as many blocks as fit on the SMs at once); fp32 arithmetic,
//            rounded once. Elements past the last whole vector take a scalar
//            tail kernel; pointers that are not 16-byte aligned take a plain
//            scalar kernel.
#include "common.cuh"

template <typename T>
static bool add_args_ok(const DLTensor *in, int nin, const DLTensor *out, int nout)
{
    return nin == 2 && nout == 1 && dl_is<T>(&in[0], 1) && dl_is<T>(&in[1], 1) &&
           dl_is<T>(&out[0], 1) && in[1].shape[0] == in[0].shape[0] &&
           out[0].shape[0] == in[0].shape[0];
}

// ---------------------------------------------------------------- v1 naive
template <typename T> __global__ void add_v1_to_fp32(const T *x, float *xf, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        xf[i] = to_f(x[i]);
}

__global__ void add_v1_fp32(const float *xf, const float *yf, float *zf, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        zf[i] = xf[i] + yf[i];
}

template <typename T> __global__ void add_v1_from_fp32(const float *zf, T *z, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        z[i] = from_f<T>(zf[i]);
}

static void *add_v1_buf;
static size_t add_v1_have;

template <typename T>
static int add_v1(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                  kgate_stream st)
{
    if (!add_args_ok<T>(in, nin, out, nout))
        return kernel_fail(p, 1, "add v1: expected x[N], y[N] -> z[N] of the kernel's dtype");
    cudaStream_t s = (cudaStream_t)st;
    int64_t n = in[0].shape[0];
    if (n == 0)
        return 0;
    float *xf = (float *)scratch_get(&add_v1_buf, &add_v1_have, 3 * (size_t)n * sizeof(float));
    if (!xf)
        return kernel_fail(p, 2, "add v1: out of device memory for fp32 buffers");
    float *yf = xf + n, *zf = yf + n;
    add_v1_to_fp32<T><<<1024, 256, 0, s>>>((const T *)in[0].data, xf, n);
    add_v1_to_fp32<T><<<1024, 256, 0, s>>>((const T *)in[1].data, yf, n);
    add_v1_fp32<<<1024, 256, 0, s>>>(xf, yf, zf, n);
    add_v1_from_fp32<T><<<1024, 256, 0, s>>>(zf, (T *)out[0].data, n);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v2 fast
#define ADD_BLOCK 256
#define ADD_UNROLL 4

template <typename T> __device__ __forceinline__ uint4 add_vec(uint4 a, uint4 b)
{
    uint4 r;
    const T *ea = reinterpret_cast<const T *>(&a);
    const T *eb = reinterpret_cast<const T *>(&b);
    T *er = reinterpret_cast<T *>(&r);
#pragma unroll
    for (int k = 0; k < (int)(16 / sizeof(T)); k++)
        er[k] = from_f<T>(to_f(ea[k]) + to_f(eb[k]));
    return r;
}

template <typename T>
__global__ __launch_bounds__(ADD_BLOCK) void add_v2_vec(const uint4 *__restrict__ x,
                                                        const uint4 *__restrict__ y,
                                                        uint4 *__restrict__ z, int64_t nvec)
{
    const int64_t tile = ADD_BLOCK * ADD_UNROLL;
    for (int64_t base = blockIdx.x * tile + threadIdx.x; base < nvec;
         base += (int64_t)gridDim.x * tile) {
        uint4 a[ADD_UNROLL], b[ADD_UNROLL];
#pragma unroll
        for (int u = 0; u < ADD_UNROLL; u++) {
            int64_t i = base + u * ADD_BLOCK;
            a[u] = b[u] = make_uint4(0, 0, 0, 0);
            if (i < nvec) {
                a[u] = __ldcs(x + i);
                b[u] = __ldcs(y + i);
            }
        }
#pragma unroll
        for (int u = 0; u < ADD_UNROLL; u++) {
            int64_t i = base + u * ADD_BLOCK;
            if (i < nvec)
                __stcs(z + i, add_vec<T>(a[u], b[u]));
        }
    }
}

// Elements [start, n) one at a time: the tail after the vectors, or all of
// them when a pointer is not 16-byte aligned.
template <typename T>
__global__ void add_v2_scalar(const T *__restrict__ x, const T *__restrict__ y, T *__restrict__ z,
                              int64_t start, int64_t n)
{
    for (int64_t i = start + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        z[i] = from_f<T>(to_f(x[i]) + to_f(y[i]));
}

template <typename T>
static int add_v2(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                  kgate_stream st)
{
    if (!add_args_ok<T>(in, nin, out, nout))
        return kernel_fail(p, 1, "add v2: expected x[N], y[N] -> z[N] of the kernel's dtype");
    cudaStream_t s = (cudaStream_t)st;
    const int64_t n = in[0].shape[0];
    const T *x = (const T *)in[0].data, *y = (const T *)in[1].data;
    T *z = (T *)out[0].data;
    if (n == 0)
        return 0;
    constexpr int E = 16 / sizeof(T);
    const bool aligned = (((uintptr_t)x | (uintptr_t)y | (uintptr_t)z) & 15) == 0;
    const int64_t nvec = aligned ? n / E : 0;
    if (nvec > 0) {
        int64_t tiles = (nvec + ADD_BLOCK * ADD_UNROLL - 1) / (ADD_BLOCK * ADD_UNROLL);
        add_v2_vec<T><<<wave_grid<add_v2_vec<T>, ADD_BLOCK>(tiles), ADD_BLOCK, 0, s>>>(
            (const uint4 *)x, (const uint4 *)y, (uint4 *)z, nvec);
    }
    const int64_t start = nvec * E;
    if (start < n) {
        int64_t rest = n - start, blocks = (rest + 255) / 256;
        add_v2_scalar<T>
            <<<(unsigned)(blocks < 1024 ? blocks : 1024), 256, 0, s>>>(x, y, z, start, n);
    }
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

static const kgate_kernel variants[] = {
    {"add_v1_fp16", "add", "fp16", NULL, 2, 1, add_v1<__half>,
     "fp32 round trips through scratch buffers, scalar accesses (RC0b)", NULL, NULL},
    {"add_v2_fp16", "add", "fp16", NULL, 2, 1, add_v2<__half>,
     "one pass, 16-byte streaming I/O, grid-stride over one wave", NULL, NULL},
    {"add_v1_bf16", "add", "bf16", NULL, 2, 1, add_v1<__nv_bfloat16>,
     "fp32 round trips through scratch buffers, scalar accesses (RC0b)", NULL, NULL},
    {"add_v2_bf16", "add", "bf16", NULL, 2, 1, add_v2<__nv_bfloat16>,
     "one pass, 16-byte streaming I/O, grid-stride over one wave", NULL, NULL},
    {"add_v1_fp32", "add", "fp32", NULL, 2, 1, add_v1<float>,
     "fp32 round trips through scratch buffers, scalar accesses (RC0b)", NULL, NULL},
    {"add_v2_fp32", "add", "fp32", NULL, 2, 1, add_v2<float>,
     "one pass, 16-byte streaming I/O, grid-stride over one wave", NULL, NULL},
};
KG_EXPORT_VARIANTS(add, variants)
