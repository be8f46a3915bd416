// mul: z = x * y elementwise over x[N] and y[N] (torch.mul).
//
// The fp64 reference is src/ops/mul.cu.
//
// v1 naive (RC1): uncoalesced access: each thread owns one contiguous chunk
//            of 256 elements and walks it alone, so the 32 lanes of a warp
//            touch 32 different cache lines (512 bytes apart in fp16, 1 KB in
//            fp32) on every load and store: a sector request per element
//            instead of one per 16 elements, and the lines thrash L1 before
//            the next iteration comes back to them.
// v2 fast:   one pass: 16-byte streaming loads of x and y and 16-byte
//            streaming stores of z, four vectors per input in flight per
//            thread, 256-thread blocks in a grid-stride loop over one wave
//            (as many blocks as fit on the SMs at once); fp32 arithmetic,
//            rounded once. Elements past the last whole vector take a scalar
//            tail kernel; pointers that are not 16-byte aligned take a plain
//            scalar kernel.
#include "common.cuh"

template <typename T>
static bool mul_args_ok(const DLTensor *in, int nin, const DLTensor *out, int nout)
{
    return nin == 2 && nout == 1 && dl_is<T>(&in[0], 1) && dl_is<T>(&in[1], 1) &&
           dl_is<T>(&out[0], 1) && in[1].shape[0] == in[0].shape[0] &&
           out[0].shape[0] == in[0].shape[0];
}

// ---------------------------------------------------------------- v1 naive
#define MUL_V1_CHUNK 256

// Thread t multiplies elements [t * 256, t * 256 + 256): contiguous for the
// thread, 256 elements apart across the warp.
template <typename T> __global__ void mul_v1_chunk(const T *x, const T *y, T *z, int64_t n)
{
    int64_t begin = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) * MUL_V1_CHUNK;
    int64_t end = begin + MUL_V1_CHUNK < n ? begin + MUL_V1_CHUNK : n;
    for (int64_t i = begin; i < end; i++)
        z[i] = from_f<T>(to_f(x[i]) * to_f(y[i]));
}

template <typename T>
static int mul_v1(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                  kgate_stream st)
{
    if (!mul_args_ok<T>(in, nin, out, nout))
        return kernel_fail(p, 1, "mul v1: expected x[N], y[N] -> z[N] of the kernel's dtype");
    cudaStream_t s = (cudaStream_t)st;
    int64_t n = in[0].shape[0];
    if (n == 0)
        return 0;
    int64_t threads = (n + MUL_V1_CHUNK - 1) / MUL_V1_CHUNK;
    mul_v1_chunk<T><<<(unsigned)((threads + 255) / 256), 256, 0, s>>>(
        (const T *)in[0].data, (const T *)in[1].data, (T *)out[0].data, n);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v2 fast
#define MUL_BLOCK 256
#define MUL_UNROLL 4

template <typename T> __device__ __forceinline__ uint4 mul_vec(uint4 a, uint4 b)
{
    uint4 r;
    const T *ea = reinterpret_cast<const T *>(&a);
    const T *eb = reinterpret_cast<const T *>(&b);
    T *er = reinterpret_cast<T *>(&r);
#pragma unroll
    for (int k = 0; k < (int)(16 / sizeof(T)); k++)
        er[k] = from_f<T>(to_f(ea[k]) * to_f(eb[k]));
    return r;
}

template <typename T>
__global__ __launch_bounds__(MUL_BLOCK) void mul_v2_vec(const uint4 *__restrict__ x,
                                                        const uint4 *__restrict__ y,
                                                        uint4 *__restrict__ z, int64_t nvec)
{
    const int64_t tile = MUL_BLOCK * MUL_UNROLL;
    for (int64_t base = blockIdx.x * tile + threadIdx.x; base < nvec;
         base += (int64_t)gridDim.x * tile) {
        uint4 a[MUL_UNROLL], b[MUL_UNROLL];
#pragma unroll
        for (int u = 0; u < MUL_UNROLL; u++) {
            int64_t i = base + u * MUL_BLOCK;
            a[u] = b[u] = make_uint4(0, 0, 0, 0);
            if (i < nvec) {
                a[u] = __ldcs(x + i);
                b[u] = __ldcs(y + i);
            }
        }
#pragma unroll
        for (int u = 0; u < MUL_UNROLL; u++) {
            int64_t i = base + u * MUL_BLOCK;
            if (i < nvec)
                __stcs(z + i, mul_vec<T>(a[u], b[u]));
        }
    }
}

// Elements [start, n) one at a time: the tail after the vectors, or all of
// them when a pointer is not 16-byte aligned.
template <typename T>
__global__ void mul_v2_scalar(const T *__restrict__ x, const T *__restrict__ y, T *__restrict__ z,
                              int64_t start, int64_t n)
{
    for (int64_t i = start + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        z[i] = from_f<T>(to_f(x[i]) * to_f(y[i]));
}

template <typename T>
static int mul_v2(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                  kgate_stream st)
{
    if (!mul_args_ok<T>(in, nin, out, nout))
        return kernel_fail(p, 1, "mul v2: expected x[N], y[N] -> z[N] of the kernel's dtype");
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
        int64_t tiles = (nvec + MUL_BLOCK * MUL_UNROLL - 1) / (MUL_BLOCK * MUL_UNROLL);
        mul_v2_vec<T><<<wave_grid<mul_v2_vec<T>, MUL_BLOCK>(tiles), MUL_BLOCK, 0, s>>>(
            (const uint4 *)x, (const uint4 *)y, (uint4 *)z, nvec);
    }
    const int64_t start = nvec * E;
    if (start < n) {
        int64_t rest = n - start, blocks = (rest + 255) / 256;
        mul_v2_scalar<T>
            <<<(unsigned)(blocks < 1024 ? blocks : 1024), 256, 0, s>>>(x, y, z, start, n);
    }
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

static const kgate_kernel variants[] = {
    {"mul_v1_fp16", "mul", "fp16", NULL, 2, 1, mul_v1<__half>,
     "a 256-element chunk per thread: uncoalesced warp accesses (RC1)", NULL, NULL},
    {"mul_v2_fp16", "mul", "fp16", NULL, 2, 1, mul_v2<__half>,
     "one pass, 16-byte streaming I/O, grid-stride over one wave", NULL, NULL},
    {"mul_v1_bf16", "mul", "bf16", NULL, 2, 1, mul_v1<__nv_bfloat16>,
     "a 256-element chunk per thread: uncoalesced warp accesses (RC1)", NULL, NULL},
    {"mul_v2_bf16", "mul", "bf16", NULL, 2, 1, mul_v2<__nv_bfloat16>,
     "one pass, 16-byte streaming I/O, grid-stride over one wave", NULL, NULL},
    {"mul_v1_fp32", "mul", "fp32", NULL, 2, 1, mul_v1<float>,
     "a 256-element chunk per thread: uncoalesced warp accesses (RC1)", NULL, NULL},
    {"mul_v2_fp32", "mul", "fp32", NULL, 2, 1, mul_v2<float>,
     "one pass, 16-byte streaming I/O, grid-stride over one wave", NULL, NULL},
};
KG_EXPORT_VARIANTS(mul, variants)
