// layer_norm: y = (x - mean) * rsqrt(var + eps) * weight + bias, per row.
//
// The fp64 reference is src/ops/layer_norm.cu.
//
// v1 naive (RC0a): the paper's authoring defects on purpose: the input round-trips
//            through an fp32 buffer (dtype conversion passes, RC0b-like), one
//            thread per row reduces serially (RC0a: T.serial), and the whole
//            row is cached in shared memory. Correct, and hundreds of times
//            slower than the hardware allows.
// v2 fast:   one 256-thread block per row; the row is loaded once with 16-byte
//            streaming loads and kept in registers, mean and variance come
//            from warp-shuffle reductions over the registers, the output leaves
//            in 16-byte stores: one read and one write of the tensor.
//            Rows that are not a multiple of 8 elements (or longer than 16384)
//            take a plain three-pass kernel.
#include "common.cuh"

// ---------------------------------------------------------------- v1 naive
template <typename T> __global__ void to_fp32(const T *x, float *y, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = to_f(x[i]);
}

template <typename T> __global__ void from_fp32(const float *x, T *y, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = from_f<T>(x[i]);
}

template <typename T>
__global__ void ln_v1_row(const float *xf, const T *w, const T *b, float *yf, int cols, float eps)
{
    extern __shared__ float row[];
    __shared__ float stats[2];
    const float *xr = xf + (size_t)blockIdx.x * cols;
    if (threadIdx.x == 0) { // one thread walks the row: the serial reduction
        float sum = 0;
        for (int j = 0; j < cols; j++) {
            row[j] = xr[j];
            sum += row[j];
        }
        float mean = sum / cols, var = 0;
        for (int j = 0; j < cols; j++)
            var += (row[j] - mean) * (row[j] - mean);
        stats[0] = mean;
        stats[1] = rsqrtf(var / cols + eps);
    }
    __syncthreads();
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        yf[(size_t)blockIdx.x * cols + j] =
            (row[j] - stats[0]) * stats[1] * to_f(w[j]) + to_f(b[j]);
}

static void *v1_buf;
static size_t v1_have;

template <typename T>
static int ln_v1(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                 kgate_stream st)
{
    if (nin != 3 || nout != 1 || !dl_is<T>(&in[0], 2) || !dl_is<T>(&out[0], 2))
        return kernel_fail(p, 1, "layer_norm v1: expected x[R,C], weight[C], bias[C] -> y[R,C]");
    cudaStream_t s = (cudaStream_t)st;
    int rows = (int)in[0].shape[0], cols = (int)in[0].shape[1];
    size_t n = (size_t)rows * cols, smem = (size_t)cols * sizeof(float);
    float *xf = (float *)scratch_get(&v1_buf, &v1_have, 2 * n * sizeof(float));
    if (!xf)
        return kernel_fail(p, 2, "layer_norm v1: out of device memory for fp32 buffers");
    float *yf = xf + n;
    if (smem > 48 * 1024 &&
        cudaFuncSetAttribute(ln_v1_row<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)smem) != cudaSuccess)
        return kernel_fail(p, 3, "layer_norm v1: row does not fit in shared memory");
    to_fp32<T><<<1024, 256, 0, s>>>((const T *)in[0].data, xf, n);
    ln_v1_row<T><<<rows, 128, smem, s>>>(xf, (const T *)in[1].data, (const T *)in[2].data, yf,
                                         cols, (float)kgate_scalar_get(p, "eps", 1e-5));
    from_fp32<T><<<1024, 256, 0, s>>>(yf, (T *)out[0].data, n);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v2 fast
template <typename T> __device__ __forceinline__ float sum8(const uint4 &v)
{
    const T *e = reinterpret_cast<const T *>(&v);
    float s = 0;
#pragma unroll
    for (int k = 0; k < 8; k++)
        s += to_f(e[k]);
    return s;
}

template <typename T, int V>
__global__ __launch_bounds__(256) void ln_v2_kernel(const T *x, const T *w, const T *b, T *y,
                                                    int cols, float eps)
{
    __shared__ float red[32];
    const int nvec = cols / 8;
    const uint4 *xv = reinterpret_cast<const uint4 *>(x + (size_t)blockIdx.x * cols);
    uint4 *yv = reinterpret_cast<uint4 *>(y + (size_t)blockIdx.x * cols);
    uint4 d[V];
    float sum = 0;
#pragma unroll
    for (int i = 0; i < V; i++) {
        int c = threadIdx.x + i * 256;
        if (c < nvec) {
            d[i] = __ldcs(xv + c);
            sum += sum8<T>(d[i]);
        }
    }
    const float mean = block_sum(sum, red) / cols;
    float sq = 0;
#pragma unroll
    for (int i = 0; i < V; i++) {
        int c = threadIdx.x + i * 256;
        if (c < nvec) {
            const T *e = reinterpret_cast<const T *>(&d[i]);
#pragma unroll
            for (int k = 0; k < 8; k++) {
                float t = to_f(e[k]) - mean;
                sq += t * t;
            }
        }
    }
    const float rstd = rsqrtf(block_sum(sq, red) / cols + eps);
#pragma unroll
    for (int i = 0; i < V; i++) {
        int c = threadIdx.x + i * 256;
        if (c < nvec) {
            uint4 wv = __ldg(reinterpret_cast<const uint4 *>(w) + c);
            uint4 bv = __ldg(reinterpret_cast<const uint4 *>(b) + c);
            const T *e = reinterpret_cast<const T *>(&d[i]);
            const T *we = reinterpret_cast<const T *>(&wv);
            const T *be = reinterpret_cast<const T *>(&bv);
            uint4 o;
            T *oe = reinterpret_cast<T *>(&o);
#pragma unroll
            for (int k = 0; k < 8; k++)
                oe[k] = from_f<T>((to_f(e[k]) - mean) * rstd * to_f(we[k]) + to_f(be[k]));
            __stcs(yv + c, o);
        }
    }
}

template <typename T>
__global__ __launch_bounds__(256) void ln_v2_generic(const T *x, const T *w, const T *b, T *y,
                                                     int cols, float eps)
{
    __shared__ float red[32];
    const T *xr = x + (size_t)blockIdx.x * cols;
    T *yr = y + (size_t)blockIdx.x * cols;
    float s = 0;
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        s += to_f(xr[j]);
    const float mean = block_sum(s, red) / cols;
    float q = 0;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float t = to_f(xr[j]) - mean;
        q += t * t;
    }
    const float rstd = rsqrtf(block_sum(q, red) / cols + eps);
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        yr[j] = from_f<T>((to_f(xr[j]) - mean) * rstd * to_f(w[j]) + to_f(b[j]));
}

template <typename T>
static int ln_v2(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                 kgate_stream st)
{
    if (nin != 3 || nout != 1 || !dl_is<T>(&in[0], 2) || !dl_is<T>(&out[0], 2))
        return kernel_fail(p, 1, "layer_norm v2: expected x[R,C], weight[C], bias[C] -> y[R,C]");
    cudaStream_t s = (cudaStream_t)st;
    int rows = (int)in[0].shape[0], cols = (int)in[0].shape[1];
    const T *x = (const T *)in[0].data, *w = (const T *)in[1].data, *b = (const T *)in[2].data;
    T *y = (T *)out[0].data;
    float eps = (float)kgate_scalar_get(p, "eps", 1e-5);
    int nvec = cols / 8;
    bool aligned = cols % 8 == 0 &&
                   (((uintptr_t)x | (uintptr_t)w | (uintptr_t)b | (uintptr_t)y) & 15) == 0;
    if (!aligned || nvec > 8 * 256)
        ln_v2_generic<T><<<rows, 256, 0, s>>>(x, w, b, y, cols, eps);
    else if (nvec <= 256)
        ln_v2_kernel<T, 1><<<rows, 256, 0, s>>>(x, w, b, y, cols, eps);
    else if (nvec <= 512)
        ln_v2_kernel<T, 2><<<rows, 256, 0, s>>>(x, w, b, y, cols, eps);
    else if (nvec <= 1024)
        ln_v2_kernel<T, 4><<<rows, 256, 0, s>>>(x, w, b, y, cols, eps);
    else
        ln_v2_kernel<T, 8><<<rows, 256, 0, s>>>(x, w, b, y, cols, eps);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

static const kgate_kernel variants[] = {
    {"layer_norm_v1_bf16", "layer_norm", "bf16", NULL, 3, 1, ln_v1<__nv_bfloat16>,
     "serial row reduction, fp32 round trip (RC0a)", "eps", NULL},
    {"layer_norm_v2_bf16", "layer_norm", "bf16", NULL, 3, 1, ln_v2<__nv_bfloat16>,
     "row in registers, 16-byte I/O, shuffle reductions", "eps", NULL},
    {"layer_norm_v1_fp16", "layer_norm", "fp16", NULL, 3, 1, ln_v1<__half>,
     "serial row reduction, fp32 round trip (RC0a)", "eps", NULL},
    {"layer_norm_v2_fp16", "layer_norm", "fp16", NULL, 3, 1, ln_v2<__half>,
     "row in registers, 16-byte I/O, shuffle reductions", "eps", NULL},
};
KG_EXPORT_VARIANTS(layer_norm, variants)
