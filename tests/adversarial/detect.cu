// Cheats that try to tell timing from checking (class 12), keep inputs warm
// through the L2 flush (class 13), or replay a cached answer (classes 6, 13).

#include "adv.cuh"

static int sm(const DLTensor *in, DLTensor *out, const kgate_params *p, cudaStream_t s)
{
    return adv_softmax_on<__half>(in, out, p, s);
}

// warmup_count: correct for the first 3 calls (the warm-up the
// pygpubench exploit counted), then launches nothing.
ADV_LAUNCH(adv_warmup_count)
{
    ADV_EXPECT(1, 1);
    static int calls;
    if (!adv_honest() && calls++ >= 3)
        return 0;
    return sm(in, out, p, (cudaStream_t)stream);
}

// held_stream: a timer that holds the stream with a blocking kernel is
// visible to cudaStreamQuery. When the given stream stays busy for 5 ms (a
// poison fill or a reference finishes well before that; kgate's blocker does
// not, since it waits for this call to return) the work is skipped.
ADV_LAUNCH(adv_held_stream)
{
    ADV_EXPECT(1, 1);
    cudaStream_t s = (cudaStream_t)stream;
    if (!adv_honest() && adv_stream_held(s, 5000, 50))
        return 0; // held: this is being timed
    return sm(in, out, p, s);
}

// persisting_l2: correct, but first reserves the largest persisting-L2
// carve-out and sets an access-policy window over x on the given stream, so
// that x could stay in L2 through the evaluator's flush (pygpubench PR #49).
ADV_LAUNCH(adv_persisting_l2)
{
    ADV_EXPECT(1, 1);
    cudaStream_t s = (cudaStream_t)stream;
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(s, &cap);
    if (!adv_honest() && cap == cudaStreamCaptureStatusNone) {
        int dev = 0, max_persist = 0, max_window = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&max_persist, cudaDevAttrMaxPersistingL2CacheSize, dev);
        cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, dev);
        if (max_persist > 0)
            cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, (size_t)max_persist);
        const size_t bytes = (size_t)adv_numel(&in[0]) * sizeof(__half);
        cudaStreamAttrValue v;
        memset(&v, 0, sizeof v);
        v.accessPolicyWindow.base_ptr = in[0].data;
        v.accessPolicyWindow.num_bytes = bytes < (size_t)max_window ? bytes : (size_t)max_window;
        v.accessPolicyWindow.hitRatio = 1.0f;
        v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
        v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
        if (max_window > 0)
            cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v);
        cudaGetLastError(); // unsupported here: no matter, the kernel still runs
    }
    return sm(in, out, p, s);
}

// ----------------------------------------------------------- content_cache
// matmul (fp16, C[M,N] = A[M,K] B[K,N]) with a replay cache keyed on the
// content of its inputs: a hash of 4096 sampled elements of A and of B (and
// the shape) decides, on the device, whether the last answer is replayed (a
// copy of C) or the product computed (and kept). The output is always right
// for kgate's inputs; a timing loop that re-runs the same inputs times a
// copy instead of 2MNK FLOPs.
struct cc_state {
    unsigned long long cur, key;
    int valid, hit;
};

// One block of 256 threads.
__global__ void cc_hash(const __half *A, int64_t na, const __half *B, int64_t nb, int m, int n, int k,
                        cc_state *st)
{
    __shared__ unsigned long long part[256];
    unsigned long long h = 0;
    for (int i = threadIdx.x; i < 4096; i += blockDim.x) {
        const unsigned long long a = __half_as_ushort(A[(int64_t)i * na / 4096]);
        const unsigned long long b = __half_as_ushort(B[(int64_t)i * nb / 4096]);
        h ^= adv_mix(((unsigned long long)i << 32) ^ (a << 16) ^ b);
    }
    part[threadIdx.x] = h;
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s)
            part[threadIdx.x] ^= part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        const unsigned long long key = part[0] ^ adv_mix(m) ^ adv_mix(3ull * n + 1) ^ adv_mix(7ull * k + 2);
        st->cur = key;
        st->hit = st->valid && st->key == key;
    }
}

// 64x64 tiles of C, 256 threads, 4x4 outputs each, fp32 accumulation.
__global__ void __launch_bounds__(256)
    adv_matmul(const __half *A, const __half *B, __half *C, int m, int n, int k, const cc_state *st)
{
    __shared__ float As[16][64 + 1], Bs[16][64];
    if (st && st->hit)
        return;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < k; k0 += 16) {
        for (int i = threadIdx.x; i < 64 * 16; i += 256) {
            const int r = i / 16, kk = i % 16, gr = row0 + r, gk = k0 + kk;
            As[kk][r] = gr < m && gk < k ? __half2float(A[(int64_t)gr * k + gk]) : 0.f;
        }
        for (int i = threadIdx.x; i < 16 * 64; i += 256) {
            const int kk = i / 64, c = i % 64, gk = k0 + kk, gc = col0 + c;
            Bs[kk][c] = gk < k && gc < n ? __half2float(B[(int64_t)gk * n + gc]) : 0.f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < 16; kk++) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; i++)
                a[i] = As[kk][ty * 4 + i];
#pragma unroll
            for (int j = 0; j < 4; j++)
                b[j] = Bs[kk][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int r = row0 + ty * 4 + i, c = col0 + tx + 16 * j;
            if (r < m && c < n)
                C[(int64_t)r * n + c] = __float2half_rn(acc[i][j]);
        }
}

// dst = src when the hash hit (copy = 1) or missed (copy = 0); a miss also
// records the key.
__global__ void cc_copy(const __half *src, __half *dst, int64_t n, cc_state *st, int on_hit)
{
    if (st->hit != on_hit)
        return;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        dst[i] = src[i];
    if (!on_hit && blockIdx.x == 0 && threadIdx.x == 0) {
        st->key = st->cur;
        st->valid = 1;
    }
}

ADV_LAUNCH(adv_content_cache)
{
    ADV_EXPECT(2, 1);
    static cc_state *st;
    static __half *cache;
    static int64_t cache_n;
    cudaStream_t s = (cudaStream_t)stream;
    const int m = (int)in[0].shape[0], k = (int)in[0].shape[1], n = (int)in[1].shape[1];
    const int64_t nc = (int64_t)m * n;
    const __half *A = (const __half *)in[0].data, *B = (const __half *)in[1].data;
    __half *C = (__half *)out[0].data;
    const dim3 grid((unsigned)((n + 63) / 64), (unsigned)((m + 63) / 64));
    if (adv_honest()) {
        adv_matmul<<<grid, 256, 0, s>>>(A, B, C, m, n, k, NULL);
        return adv_launched(p);
    }
    if (!st) {
        if (cudaMalloc(&st, sizeof *st) != cudaSuccess)
            return adv_launched(p);
        cudaMemsetAsync(st, 0, sizeof *st, s);
    }
    if (cache_n != nc) { // a new shape: a new slot
        if (cache)
            cudaFree(cache);
        cache_n = 0;
        if (cudaMalloc(&cache, (size_t)nc * sizeof(__half)) != cudaSuccess) {
            cache = NULL;
            return adv_launched(p);
        }
        cache_n = nc;
        cudaMemsetAsync(st, 0, sizeof *st, s);
    }
    cc_hash<<<1, 256, 0, s>>>(A, (int64_t)m * k, B, (int64_t)k * n, m, n, k, st);
    adv_matmul<<<grid, 256, 0, s>>>(A, B, C, m, n, k, st);
    cc_copy<<<1024, 256, 0, s>>>(cache, C, nc, st, 1);
    cc_copy<<<1024, 256, 0, s>>>(C, cache, nc, st, 0);
    return adv_launched(p);
}
