// softmax over the last dimension: y = exp(x - max) / sum(exp(x - max)).
//
// The fp64 reference is src/ops/softmax.cu.
//
// v1 naive (RC0a): the paper's in-tree TileLang defects: an fp32 round trip of the
//            input and output buffers, one thread per row reducing max and sum
//            serially (RC0a), and the whole row cached in shared memory (128 KB
//            at 32768 columns: one block per SM).
// v2 fast:   one 512-thread block per row; the row is loaded once with 16-byte
//            streaming loads and stays packed in registers (32 registers at
//            32768 fp16 or bf16 columns, 64 at 32768 fp32 ones), max and sum by
//            warp-shuffle reductions, one 16-byte store per 16 bytes of output.
//            Unaligned or longer rows (over 32768 columns of any of the three
//            dtypes) take a plain three-pass kernel.
#include "common.cuh"

// ---------------------------------------------------------------- v1 naive
template <typename T> __global__ void sm_to_fp32(const T *x, float *y, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = to_f(x[i]);
}

template <typename T> __global__ void sm_from_fp32(const float *x, T *y, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = from_f<T>(x[i]);
}

__global__ void sm_v1_row(const float *xf, float *yf, int cols)
{
    extern __shared__ float row[];
    __shared__ float stats[2];
    const float *xr = xf + (size_t)blockIdx.x * cols;
    if (threadIdx.x == 0) { // one thread walks the row: the serial reduction
        float mx = -INFINITY;
        for (int j = 0; j < cols; j++) {
            row[j] = xr[j];
            mx = fmaxf(mx, row[j]);
        }
        float sum = 0;
        for (int j = 0; j < cols; j++)
            sum += expf(row[j] - mx);
        stats[0] = mx;
        stats[1] = 1.f / sum;
    }
    __syncthreads();
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        yf[(size_t)blockIdx.x * cols + j] = expf(row[j] - stats[0]) * stats[1];
}

static void *v1_buf;
static size_t v1_have;

template <typename T>
static int sm_v1(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                 kgate_stream st)
{
    if (nin != 1 || nout != 1 || !dl_is<T>(&in[0], 2) || !dl_is<T>(&out[0], 2))
        return kernel_fail(p, 1, "softmax v1: expected x[R,C] -> y[R,C]");
    cudaStream_t s = (cudaStream_t)st;
    int rows = (int)in[0].shape[0], cols = (int)in[0].shape[1];
    size_t n = (size_t)rows * cols, smem = (size_t)cols * sizeof(float);
    float *xf = (float *)scratch_get(&v1_buf, &v1_have, 2 * n * sizeof(float));
    if (!xf)
        return kernel_fail(p, 2, "softmax v1: out of device memory for fp32 buffers");
    if (smem > 48 * 1024 &&
        cudaFuncSetAttribute(sm_v1_row, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) !=
            cudaSuccess)
        return kernel_fail(p, 3, "softmax v1: row does not fit in shared memory");
    sm_to_fp32<T><<<1024, 256, 0, s>>>((const T *)in[0].data, xf, n);
    sm_v1_row<<<rows, 128, smem, s>>>(xf, xf + n, cols);
    sm_from_fp32<T><<<1024, 256, 0, s>>>(xf + n, (T *)out[0].data, n);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v2 fast
template <typename T, int V>
__global__ __launch_bounds__(512) void sm_v2_kernel(const T *x, T *y, int cols)
{
    __shared__ float red[32];
    constexpr int E = 16 / sizeof(T); // elements per 16-byte vector
    const int nvec = cols / E;
    const uint4 *xv = reinterpret_cast<const uint4 *>(x + (size_t)blockIdx.x * cols);
    uint4 *yv = reinterpret_cast<uint4 *>(y + (size_t)blockIdx.x * cols);
    uint4 d[V];
    float mx = -INFINITY;
#pragma unroll
    for (int i = 0; i < V; i++) {
        int c = threadIdx.x + i * 512;
        if (c < nvec) {
            d[i] = __ldcs(xv + c);
            const T *e = reinterpret_cast<const T *>(&d[i]);
#pragma unroll
            for (int k = 0; k < E; k++)
                mx = fmaxf(mx, to_f(e[k]));
        }
    }
    mx = block_max(mx, red);
    float sum = 0;
#pragma unroll
    for (int i = 0; i < V; i++) {
        int c = threadIdx.x + i * 512;
        if (c < nvec) {
            const T *e = reinterpret_cast<const T *>(&d[i]);
#pragma unroll
            for (int k = 0; k < E; k++)
                sum += __expf(to_f(e[k]) - mx);
        }
    }
    const float inv = 1.f / block_sum(sum, red);
#pragma unroll
    for (int i = 0; i < V; i++) {
        int c = threadIdx.x + i * 512;
        if (c < nvec) {
            const T *e = reinterpret_cast<const T *>(&d[i]);
            uint4 o;
            T *oe = reinterpret_cast<T *>(&o);
#pragma unroll
            for (int k = 0; k < E; k++)
                oe[k] = from_f<T>(__expf(to_f(e[k]) - mx) * inv);
            __stcs(yv + c, o);
        }
    }
}

template <typename T>
__global__ __launch_bounds__(512) void sm_v2_generic(const T *x, T *y, int cols)
{
    __shared__ float red[32];
    const T *xr = x + (size_t)blockIdx.x * cols;
    T *yr = y + (size_t)blockIdx.x * cols;
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        mx = fmaxf(mx, to_f(xr[j]));
    mx = block_max(mx, red);
    float s = 0;
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        s += __expf(to_f(xr[j]) - mx);
    const float inv = 1.f / block_sum(s, red);
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        yr[j] = from_f<T>(__expf(to_f(xr[j]) - mx) * inv);
}

template <typename T>
static int sm_v2(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                 kgate_stream st)
{
    if (nin != 1 || nout != 1 || !dl_is<T>(&in[0], 2) || !dl_is<T>(&out[0], 2))
        return kernel_fail(p, 1, "softmax v2: expected x[R,C] -> y[R,C]");
    cudaStream_t s = (cudaStream_t)st;
    int rows = (int)in[0].shape[0], cols = (int)in[0].shape[1];
    const T *x = (const T *)in[0].data;
    T *y = (T *)out[0].data;
    constexpr int E = 16 / sizeof(T);
    int nvec = cols / E;
    bool aligned = cols % E == 0 && (((uintptr_t)x | (uintptr_t)y) & 15) == 0;
    constexpr int VMAX = sizeof(T) == 4 ? 16 : 8; // 16 spills for the 2-byte types
    if (!aligned || nvec > VMAX * 512)
        sm_v2_generic<T><<<rows, 512, 0, s>>>(x, y, cols);
    else if (nvec <= 512)
        sm_v2_kernel<T, 1><<<rows, 512, 0, s>>>(x, y, cols);
    else if (nvec <= 1024)
        sm_v2_kernel<T, 2><<<rows, 512, 0, s>>>(x, y, cols);
    else if (nvec <= 2048)
        sm_v2_kernel<T, 4><<<rows, 512, 0, s>>>(x, y, cols);
    else if (nvec <= 4096)
        sm_v2_kernel<T, 8><<<rows, 512, 0, s>>>(x, y, cols);
    else
        sm_v2_kernel<T, VMAX><<<rows, 512, 0, s>>>(x, y, cols);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

static const kgate_kernel variants[] = {
    {"softmax_v1_fp16", "softmax", "fp16", NULL, 1, 1, sm_v1<__half>,
     "serial row reduction, full row in shared memory (RC0a)", NULL, NULL},
    {"softmax_v2_fp16", "softmax", "fp16", NULL, 1, 1, sm_v2<__half>,
     "row in registers, 16-byte I/O, shuffle reductions", NULL, NULL},
    {"softmax_v1_bf16", "softmax", "bf16", NULL, 1, 1, sm_v1<__nv_bfloat16>,
     "serial row reduction, full row in shared memory (RC0a)", NULL, NULL},
    {"softmax_v2_bf16", "softmax", "bf16", NULL, 1, 1, sm_v2<__nv_bfloat16>,
     "row in registers, 16-byte I/O, shuffle reductions", NULL, NULL},
    {"softmax_v1_fp32", "softmax", "fp32", NULL, 1, 1, sm_v1<float>,
     "serial row reduction, full row in shared memory (RC0a)", NULL, NULL},
    {"softmax_v2_fp32", "softmax", "fp32", NULL, 1, 1, sm_v2<float>,
     "row in registers, 16-byte I/O, shuffle reductions", NULL, NULL},
};
KG_EXPORT_VARIANTS(softmax, variants)
