// attention's GPU fp64 reference: the definition's two passes, as the CPU
// reference (attention.c) computes them, so that NaN and Inf rows give the
// same NaNs: pass 1 takes the NaN-propagating max of a row's visible scores,
// pass 2 sums exp(score - max) and applies it to V. A block owns T query rows
// of one (batch, head) and walks the visible keys in tiles of T; Q, the K or
// V tile, the scores and the output accumulators live in shared memory as
// doubles. Written apart from the variants (kernels/attention.cu, which use
// an online softmax in fp32): a bug shared by the two would pass the check.
#include "ref.cuh"

namespace {

constexpr int ATT_REF_THREADS = 256;
constexpr size_t ATT_REF_SMEM_MAX = 200 * 1024;

// Doubles of shared memory for a tile of T rows at head size D: Q and the
// K/V tile (rows padded to D + 1 against bank conflicts), the T x (T + 1)
// scores, the T x D accumulators, and a max and a sum a row.
__host__ __device__ inline size_t att_ref_doubles(int T, int D)
{
    return 2 * (size_t)T * (D + 1) + (size_t)T * (T + 1) + (size_t)T * D + 2 * (size_t)T;
}

template <typename T>
__global__ __launch_bounds__(ATT_REF_THREADS) void att_reference(const T *Q, const T *K, const T *V,
                                                                  double *O, int64_t S, int D, int tile,
                                                                  int causal, double scale,
                                                                  int64_t tiles_per_bh)
{
    extern __shared__ double sm[];
    const int ld = D + 1, lds = tile + 1;
    double *qs = sm;                  // tile x ld
    double *kv = qs + tile * ld;      // tile x ld: a K tile, then a V tile
    double *sc = kv + tile * ld;      // tile x lds: scores, then weights
    double *acc = sc + tile * lds;    // tile x D
    double *mx = acc + tile * D;      // tile
    double *sum = mx + tile;          // tile
    const int64_t bh = blockIdx.x / tiles_per_bh;
    const int64_t i0 = (blockIdx.x % tiles_per_bh) * tile;
    const size_t base = (size_t)bh * (size_t)S * (size_t)D;
    const int rows = (int)(S - i0 < tile ? S - i0 : tile);
    // a causal tile sees keys up to its last row
    const int64_t n_keys = causal ? i0 + rows : S;
    Q += base;
    K += base;
    V += base;
    O += base;
    for (int e = threadIdx.x; e < tile * D; e += blockDim.x) {
        int r = e / D, c = e % D;
        qs[r * ld + c] = r < rows ? ref_d(Q[(size_t)(i0 + r) * D + c]) : 0.0;
        acc[e] = 0.0;
    }
    if (threadIdx.x < tile) {
        mx[threadIdx.x] = -INFINITY;
        sum[threadIdx.x] = 0.0;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t j0 = 0; j0 < n_keys; j0 += tile) {
            const int cols = (int)(n_keys - j0 < tile ? n_keys - j0 : tile);
            __syncthreads(); // the previous tile's readers are done with kv and sc
            for (int e = threadIdx.x; e < tile * D; e += blockDim.x) {
                int r = e / D, c = e % D;
                kv[r * ld + c] = r < cols ? ref_d(K[(size_t)(j0 + r) * D + c]) : 0.0;
            }
            __syncthreads();
            for (int e = threadIdx.x; e < tile * tile; e += blockDim.x) {
                const int r = e / tile, c = e % tile;
                const bool visible = r < rows && c < cols && (!causal || j0 + c <= i0 + r);
                double s = 0.0;
                if (visible) {
                    for (int d = 0; d < D; d++)
                        s += qs[r * ld + d] * kv[c * ld + d];
                    s *= scale;
                }
                // pass 1: hidden keys cannot raise the max; pass 2: they weigh 0
                sc[r * lds + c] = pass == 0 ? (visible ? s : -INFINITY) : (visible ? exp(s - mx[r]) : 0.0);
            }
            __syncthreads();
            if (pass == 0) {
                if (threadIdx.x < tile) {
                    double m = mx[threadIdx.x];
                    for (int c = 0; c < cols; c++)
                        m = ref_max(m, sc[threadIdx.x * lds + c]);
                    mx[threadIdx.x] = m;
                }
                continue;
            }
            if (threadIdx.x < tile)
                for (int c = 0; c < cols; c++)
                    sum[threadIdx.x] += sc[threadIdx.x * lds + c];
            // the scores are in sc: kv may take the V tile
            for (int e = threadIdx.x; e < tile * D; e += blockDim.x) {
                int r = e / D, c = e % D;
                kv[r * ld + c] = r < cols ? ref_d(V[(size_t)(j0 + r) * D + c]) : 0.0;
            }
            __syncthreads();
            for (int e = threadIdx.x; e < tile * D; e += blockDim.x) {
                const int r = e / D, c = e % D;
                // the keys this row sees (a hidden key is skipped, as in the CPU
                // reference, even where 0 * V would not be 0)
                int64_t last = causal ? i0 + r - j0 + 1 : cols;
                const int n = (int)(last < cols ? (last > 0 ? last : 0) : cols);
                double a = acc[e];
                for (int j = 0; j < n; j++)
                    a += sc[r * lds + j] * kv[j * ld + c];
                acc[e] = a;
            }
        }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < rows * D; e += blockDim.x) {
        const int r = e / D, c = e % D;
        O[(size_t)(i0 + r) * D + c] = acc[e] / sum[r];
    }
}

// The largest tile (32 down to 1 rows) whose shared memory fits; 0 when even
// one row does not (D above about 8500).
int att_ref_tile(int D)
{
    for (int t = 32; t >= 1; t /= 2)
        if (att_ref_doubles(t, D) * sizeof(double) <= ATT_REF_SMEM_MAX)
            return t;
    return 0;
}

template <typename T>
int att_ref_launch(const DLTensor *in, double *ref, int causal, cudaStream_t s)
{
    const int64_t bh = in[0].shape[0] * in[0].shape[1], S = in[0].shape[2];
    const int D = (int)in[0].shape[3];
    const int tile = att_ref_tile(D);
    if (tile == 0)
        return (int)cudaErrorInvalidValue;
    const int64_t tiles = (S + tile - 1) / tile, blocks = bh * tiles;
    if (blocks > 0x7fffffff)
        return (int)cudaErrorInvalidConfiguration;
    const size_t smem = att_ref_doubles(tile, D) * sizeof(double);
    cudaError_t e = cudaFuncSetAttribute(att_reference<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)smem);
    if (e != cudaSuccess)
        return (int)e;
    att_reference<T><<<(unsigned)blocks, ATT_REF_THREADS, smem, s>>>(
        (const T *)in[0].data, (const T *)in[1].data, (const T *)in[2].data, ref, S, D, tile, causal,
        1.0 / sqrt((double)D), tiles);
    return REF_LAUNCHED();
}

} // namespace

extern "C" int kg_attention_reference(const DLTensor *in, int n_in, double *const *refs,
                                      const kgate_params *p, kgate_stream st)
{
    if (n_in != 3 || in[0].ndim != 4)
        return 1;
    const int causal = kgate_scalar_get(p, "causal", 0) != 0;
    int rc = 0;
    REF_DISPATCH(&in[0], rc = att_ref_launch<T>(in, refs[0], causal, (cudaStream_t)st));
    return rc;
}
