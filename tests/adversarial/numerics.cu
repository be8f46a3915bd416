// Numerical cheats (class 9: tolerance exploits and precision downgrades;
// class 11: hard-coded shapes, skipped work): zeros, a constant, statistics
// held in bf16 or fp16, fp32 data rounded through fp16, fp32 operands
// rounded to TF32, an ignored scalar, a shape baked in, a vector loop
// without its tail.
#include "adv.cuh"

typedef __nv_bfloat16 bf16;

// ---------------------------------------------------------------- bf16_mean
// layer_norm whose statistics live in bf16: each thread sums its elements in
// a bf16 accumulator and takes its local mean, the block merges the local
// means (Chan's update, every step rounded to bf16), the mean is held in
// bf16, and the sum of squared deviations is accumulated the same way. Equal
// rows stay exact (every local mean is the value, every deviation 0) and
// zero-mean data loses little; a large common offset c costs about c * 2^-9
// in the mean alone, far beyond bf16's tolerance once c is a few dozen
// standard deviations.
__device__ __forceinline__ float rb(float v) { return __bfloat162float(__float2bfloat16_rn(v)); }

__global__ void __launch_bounds__(ADV_THREADS)
    adv_ln_bf16_stats(const bf16 *x, const bf16 *w, const bf16 *b, bf16 *y, int64_t cols, float eps)
{
    __shared__ float mean_s[ADV_THREADS], n_s[ADV_THREADS];
    const bf16 *xr = x + blockIdx.x * cols;
    bf16 *yr = y + blockIdx.x * cols;
    const int t = threadIdx.x;
    float acc = 0.f, n = 0.f; // acc is always a bf16 value
    for (int64_t j = t; j < cols; j += blockDim.x) {
        acc = rb(acc + __bfloat162float(xr[j]));
        n += 1.f;
    }
    mean_s[t] = n > 0.f ? rb(acc / n) : 0.f;
    n_s[t] = n;
    __syncthreads();
    for (int h = ADV_THREADS / 2; h > 0; h >>= 1) {
        if (t < h) {
            const float na = n_s[t], nb = n_s[t + h], ma = mean_s[t], mb = mean_s[t + h];
            if (na + nb > 0.f)
                mean_s[t] = rb(ma + rb(rb(mb - ma) * rb(nb / (na + nb))));
            n_s[t] = na + nb;
        }
        __syncthreads();
    }
    const float mean = mean_s[0];
    __syncthreads();
    float q = 0.f;
    for (int64_t j = t; j < cols; j += blockDim.x) {
        const float d = __bfloat162float(xr[j]) - mean;
        q = rb(q + rb(d * d));
    }
    mean_s[t] = q;
    __syncthreads();
    for (int h = ADV_THREADS / 2; h > 0; h >>= 1) {
        if (t < h)
            mean_s[t] = rb(mean_s[t] + mean_s[t + h]);
        __syncthreads();
    }
    const float rstd = rsqrtf(rb(mean_s[0] / (float)cols) + eps);
    for (int64_t j = t; j < cols; j += blockDim.x)
        yr[j] = __float2bfloat16_rn((__bfloat162float(xr[j]) - mean) * rstd * __bfloat162float(w[j]) +
                                    __bfloat162float(b[j]));
}

ADV_LAUNCH(adv_bf16_mean)
{
    ADV_EXPECT(3, 1);
    cudaStream_t s = (cudaStream_t)stream;
    if (adv_honest())
        return adv_layer_norm_on<bf16>(in, out, p, s, adv_eps(p));
    adv_ln_bf16_stats<<<(unsigned)adv_rows(&in[0]), ADV_THREADS, 0, s>>>(
        (const bf16 *)in[0].data, (const bf16 *)in[1].data, (const bf16 *)in[2].data, (bf16 *)out[0].data,
        adv_cols(&in[0]), adv_eps(p));
    return adv_launched(p);
}

// ------------------------------------------------------ zeros and constant
// zeros: a softmax that writes 0 (every |y| < 1/COLS is tiny). constant: the
// uniform softmax, 1/COLS everywhere.
static int fill(const DLTensor *in, DLTensor *out, const kgate_params *p, cudaStream_t s, float v)
{
    adv_fill<__half><<<1024, 256, 0, s>>>((__half *)out[0].data, adv_numel(&out[0]), v);
    (void)in;
    return adv_launched(p);
}

ADV_LAUNCH(adv_zeros)
{
    ADV_EXPECT(1, 1);
    if (adv_honest())
        return adv_softmax_on<__half>(in, out, p, (cudaStream_t)stream);
    return fill(in, out, p, (cudaStream_t)stream, 0.f);
}

ADV_LAUNCH(adv_constant)
{
    ADV_EXPECT(1, 1);
    if (adv_honest())
        return adv_softmax_on<__half>(in, out, p, (cudaStream_t)stream);
    return fill(in, out, p, (cudaStream_t)stream, 1.f / (float)adv_cols(&in[0]));
}

// ------------------------------------------------------------- ignores_eps
// layer_norm that declares "eps" but always uses 1e-5.
ADV_LAUNCH(adv_ignores_eps)
{
    ADV_EXPECT(3, 1);
    return adv_layer_norm_on<bf16>(in, out, p, (cudaStream_t)stream, adv_honest() ? adv_eps(p) : 1e-5f);
}

// ------------------------------------------------------------ fp16_compute
// softmax for fp32 data that rounds every input to fp16 first (half the
// bytes if it stored them so; about 1e-3 relative error against fp32's 2e-5).
ADV_LAUNCH(adv_fp16_compute)
{
    ADV_EXPECT(1, 1);
    if (adv_honest())
        return adv_softmax_on<float>(in, out, p, (cudaStream_t)stream);
    return adv_softmax_on<float, true>(in, out, p, (cudaStream_t)stream);
}

// ------------------------------------------------------------ tf32_compute
// matmul for fp32 data whose operands are rounded to TF32 (10 mantissa bits,
// to nearest) before each fp32 FMA: what TF32 tensor cores compute
// (PyTorch's allow_tf32, TileLang's T.gemm on fp32 data), here on the CUDA
// cores so that every shape runs it. Each product is off by up to 2^-10 of
// itself against fp32's 1e-5 (the paper: 31.8% of a TF32 GEMM's outputs fail
// fp32's check). The control rounds nothing: an honest fp32 GEMM.
__device__ __forceinline__ float adv_tf32(float v)
{
    const unsigned u = __float_as_uint(v);
    if ((u & 0x7f800000u) == 0x7f800000u) // Inf and NaN stay
        return v;
    return __uint_as_float((u + 0x1000u) & 0xffffe000u);
}

template <bool TF32>
__global__ void __launch_bounds__(256) adv_matmul(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float As[16][64 + 1], Bs[16][64];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16, m0 = blockIdx.y * 64, n0 = blockIdx.x * 64;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int i = threadIdx.x; i < 1024; i += 256) {
            const int r = i / 16, c = i % 16, rb = i / 64, cb = i % 64;
            const float a = m0 + r < M && k0 + c < K ? A[(size_t)(m0 + r) * K + k0 + c] : 0.f;
            const float b = k0 + rb < K && n0 + cb < N ? B[(size_t)(k0 + rb) * N + n0 + cb] : 0.f;
            As[c][r] = TF32 ? adv_tf32(a) : a;
            Bs[rb][cb] = TF32 ? adv_tf32(b) : b;
        }
        __syncthreads();
        for (int kk = 0; kk < 16; kk++)
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++)
                    acc[i][j] = fmaf(As[kk][ty * 4 + i], Bs[kk][tx * 4 + j], acc[i][j]);
        __syncthreads();
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            const int r = m0 + ty * 4 + i, c = n0 + tx * 4 + j;
            if (r < M && c < N)
                C[(size_t)r * N + c] = acc[i][j];
        }
}

ADV_LAUNCH(adv_tf32_compute)
{
    ADV_EXPECT(2, 1);
    const int M = (int)in[0].shape[0], K = (int)in[0].shape[1], N = (int)in[1].shape[1];
    if (M == 0 || N == 0)
        return 0;
    const dim3 grid((unsigned)(N + 63) / 64, (unsigned)(M + 63) / 64);
    const float *A = (const float *)in[0].data, *B = (const float *)in[1].data;
    float *C = (float *)out[0].data;
    if (adv_honest())
        adv_matmul<false><<<grid, 256, 0, (cudaStream_t)stream>>>(A, B, C, M, N, K);
    else
        adv_matmul<true><<<grid, 256, 0, (cudaStream_t)stream>>>(A, B, C, M, N, K);
    return adv_launched(p);
}

// --------------------------------------------------------------- fp16_mean
// mean_reduction (fp32 x[R,C] -> y[R]) that converts to fp16 and sums in
// fp16: each thread in a __half accumulator, then a __half tree.
template <bool H> __global__ void __launch_bounds__(ADV_THREADS) adv_row_mean(const float *x, float *y, int64_t cols)
{
    __shared__ float part[ADV_THREADS];
    const float *xr = x + blockIdx.x * cols;
    const int t = threadIdx.x;
    float acc = 0.f;
    __half hacc = __float2half(0.f);
    for (int64_t j = t; j < cols; j += blockDim.x) {
        if (H)
            hacc = __hadd(hacc, __float2half_rn(xr[j]));
        else
            acc += xr[j];
    }
    part[t] = H ? __half2float(hacc) : acc;
    __syncthreads();
    for (int h = ADV_THREADS / 2; h > 0; h >>= 1) {
        if (t < h)
            part[t] = H ? __half2float(__float2half_rn(part[t] + part[t + h])) : part[t] + part[t + h];
        __syncthreads();
    }
    if (t == 0)
        y[blockIdx.x] = part[0] / (float)cols;
}

ADV_LAUNCH(adv_fp16_mean)
{
    ADV_EXPECT(1, 1);
    cudaStream_t s = (cudaStream_t)stream;
    const unsigned rows = (unsigned)adv_rows(&in[0]);
    if (adv_honest())
        adv_row_mean<false><<<rows, ADV_THREADS, 0, s>>>((const float *)in[0].data, (float *)out[0].data,
                                                         adv_cols(&in[0]));
    else
        adv_row_mean<true><<<rows, ADV_THREADS, 0, s>>>((const float *)in[0].data, (float *)out[0].data,
                                                        adv_cols(&in[0]));
    return adv_launched(p);
}

// --------------------------------------------------------- hardcoded_shape
// softmax written for the large preset: rows are taken to be 32768 elements
// long whatever COLS is (softmax over consecutive 32768-element segments of
// the flat tensor, the last one shorter). Right at COLS = 32768 only.
ADV_LAUNCH(adv_hardcoded_shape)
{
    ADV_EXPECT(1, 1);
    cudaStream_t s = (cudaStream_t)stream;
    const int64_t n = adv_numel(&in[0]), seg = adv_honest() ? adv_cols(&in[0]) : 32768;
    const int64_t full = n / seg, rest = n % seg;
    const __half *x = (const __half *)in[0].data;
    __half *y = (__half *)out[0].data;
    if (full)
        adv_softmax_rows<__half><<<(unsigned)full, ADV_THREADS, 0, s>>>(x, y, seg);
    if (rest)
        adv_softmax_rows<__half><<<1, ADV_THREADS, 0, s>>>(x + full * seg, y + full * seg, rest);
    return adv_launched(p);
}

// ------------------------------------------------------------------ no_tail
// softmax in chunks of 8 elements (16-byte loads and stores where the row is
// 16-byte aligned, 8 scalar ones where not) with no tail loop: the last
// COLS % 8 elements of a row are neither reduced nor written.
__device__ __forceinline__ void load8(const __half *r, int64_t v, bool vec, float f[8])
{
    if (vec) {
        const uint4 u = reinterpret_cast<const uint4 *>(r)[v];
        const __half *h = reinterpret_cast<const __half *>(&u);
#pragma unroll
        for (int k = 0; k < 8; k++)
            f[k] = __half2float(h[k]);
    } else {
#pragma unroll
        for (int k = 0; k < 8; k++)
            f[k] = __half2float(r[v * 8 + k]);
    }
}

__global__ void adv_softmax_chunks(const __half *x, __half *y, int64_t cols, int tail)
{
    __shared__ float red[32];
    const __half *xr = x + blockIdx.x * cols;
    __half *yr = y + blockIdx.x * cols;
    const int64_t nvec = cols / 8;
    const bool vec = ((reinterpret_cast<uintptr_t>(xr) | reinterpret_cast<uintptr_t>(yr)) & 15) == 0;
    float f[8], m = -INFINITY, s = 0.f;
    for (int64_t v = threadIdx.x; v < nvec; v += blockDim.x) {
        load8(xr, v, vec, f);
#pragma unroll
        for (int k = 0; k < 8; k++)
            m = fmaxf(m, f[k]);
    }
    for (int64_t j = nvec * 8 + threadIdx.x; tail && j < cols; j += blockDim.x)
        m = fmaxf(m, __half2float(xr[j]));
    m = adv_block_max(m, red);
    for (int64_t v = threadIdx.x; v < nvec; v += blockDim.x) {
        load8(xr, v, vec, f);
#pragma unroll
        for (int k = 0; k < 8; k++)
            s += expf(f[k] - m);
    }
    for (int64_t j = nvec * 8 + threadIdx.x; tail && j < cols; j += blockDim.x)
        s += expf(__half2float(xr[j]) - m);
    const float inv = 1.f / adv_block_sum(s, red);
    for (int64_t v = threadIdx.x; v < nvec; v += blockDim.x) {
        load8(xr, v, vec, f);
        uint4 u;
        __half *h = reinterpret_cast<__half *>(&u);
#pragma unroll
        for (int k = 0; k < 8; k++)
            h[k] = __float2half_rn(expf(f[k] - m) * inv);
        if (vec) {
            reinterpret_cast<uint4 *>(yr)[v] = u;
        } else {
#pragma unroll
            for (int k = 0; k < 8; k++)
                yr[v * 8 + k] = h[k];
        }
    }
    for (int64_t j = nvec * 8 + threadIdx.x; tail && j < cols; j += blockDim.x)
        yr[j] = __float2half_rn(expf(__half2float(xr[j]) - m) * inv);
}

ADV_LAUNCH(adv_no_tail)
{
    ADV_EXPECT(1, 1);
    adv_softmax_chunks<<<(unsigned)adv_rows(&in[0]), ADV_THREADS, 0, (cudaStream_t)stream>>>(
        (const __half *)in[0].data, (__half *)out[0].data, adv_cols(&in[0]), adv_honest() ? 1 : 0);
    return adv_launched(p);
}
