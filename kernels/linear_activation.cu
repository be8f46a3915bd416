// linear_activation: out[M,N] = silu(x . W1^T) * (x . W3^T), silu(a) =
// a / (1 + exp(-a)); x [M,K], W1 and W3 [N,K] row-major; fp16/bf16 in and
// out, fp32 accumulate.
//
// The fp64 reference is src/ops/linear_activation.cu.
//
// v1 naive (NOTC, RC4): the unfused path: two separate GEMM passes of 64x64
//            tiles in fp32 FMA (no tensor cores), each writing its product
//            to an fp32 scratch [M,N] in global memory, then a pointwise
//            pass reading both back for the gate: three launches and
//            16 M N bytes of intermediate traffic a fused kernel never moves.
// v2 fast:   one fused Hopper kernel: per 128x128 output tile, TMA loads of
//            the x tile (128x64) and of the W1 and W3 tiles (128x64 each,
//            K-major) into a 4-stage ring with the 128-byte swizzle,
//            completing on mbarriers; one producer warpgroup, two consumer
//            warpgroups, each running two wgmma m64n128k16 per k16 step on
//            the shared x tile (B K-major, no transpose) into 2 x 64 fp32
//            accumulators, then the gate silu(a) * b in the epilogue; the
//            grid walks all row-tiles of a column-tile together, so each W
//            tile comes from DRAM once while x stays in L2. Shapes off the
//            128x128x64 grid run a fused fp32 FMA kernel (64x64 tiles, both
//            products, the same epilogue).
#include <climits>
#include <type_traits>

#include "common.cuh"
#include "sm90_tma.cuh"
#include "wgmma_m64n128k16.cuh"

// The gate, as the reference: a / (1 + exp(-a)) * b (a = -Inf gives NaN).
__device__ __forceinline__ float silu_gate(float a, float b) { return a / (1.f + expf(-a)) * b; }

// ---------------------------------------------------------------- SIMT tiles
// One 64x64 tile of x . W^T per block and row step (x [M,K], W [N,K], both
// K-major), fp32 FMA, 4x4 outputs a thread. FUSED: both W1 and W3, gated
// output in T; otherwise the product of W1 alone into fp32 `scratch`.
template <typename T, bool FUSED>
__global__ __launch_bounds__(256) void simt_kernel(const T *X, const T *W1, const T *W3,
                                                   float *scratch, T *out, int64_t M, int64_t N,
                                                   int64_t K)
{
    __shared__ float Xs[16][64 + 1], W1s[16][64 + 1], W3s[16][64 + 1]; // [k][row]
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int64_t n0 = (int64_t)blockIdx.x * 64;
    for (int64_t m0 = (int64_t)blockIdx.y * 64; m0 < M; m0 += (int64_t)gridDim.y * 64) {
        float a[4][4] = {}, b[4][4] = {};
        for (int64_t k0 = 0; k0 < K; k0 += 16) {
            for (int i = threadIdx.x; i < 1024; i += 256) {
                int r = i / 16, c = i % 16;
                bool kin = k0 + c < K;
                Xs[c][r] = kin && m0 + r < M ? to_f(X[(m0 + r) * K + k0 + c]) : 0.f;
                W1s[c][r] = kin && n0 + r < N ? to_f(W1[(n0 + r) * K + k0 + c]) : 0.f;
                if constexpr (FUSED)
                    W3s[c][r] = kin && n0 + r < N ? to_f(W3[(n0 + r) * K + k0 + c]) : 0.f;
            }
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < 16; kk++) {
                float xv[4], w1v[4], w3v[4];
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    xv[i] = Xs[kk][ty * 4 + i];
                    w1v[i] = W1s[kk][tx * 4 + i];
                    w3v[i] = FUSED ? W3s[kk][tx * 4 + i] : 0.f;
                }
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++) {
                        a[i][j] = fmaf(xv[i], w1v[j], a[i][j]);
                        if constexpr (FUSED)
                            b[i][j] = fmaf(xv[i], w3v[j], b[i][j]);
                    }
            }
            __syncthreads();
        }
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                int64_t r = m0 + ty * 4 + i, c = n0 + tx * 4 + j;
                if (r >= M || c >= N)
                    continue;
                if constexpr (FUSED)
                    out[r * N + c] = from_f<T>(silu_gate(a[i][j], b[i][j]));
                else
                    scratch[r * N + c] = a[i][j];
            }
    }
}

template <typename T, bool FUSED>
static void simt_launch(const T *X, const T *W1, const T *W3, float *scratch, T *out, int64_t M,
                        int64_t N, int64_t K, cudaStream_t s)
{
    int64_t gy = (M + 63) / 64;
    dim3 grid((unsigned)((N + 63) / 64), (unsigned)(gy < 65535 ? gy : 65535));
    simt_kernel<T, FUSED><<<grid, 256, 0, s>>>(X, W1, W3, scratch, out, M, N, K);
}

// The extents of x[M,K], W1[N,K], W3[N,K] -> out[M,N], or false.
template <typename T>
static bool linact_args(const DLTensor *in, int nin, const DLTensor *out, int nout, int64_t *M,
                        int64_t *N, int64_t *K)
{
    if (nin != 3 || nout != 1 || !dl_is<T>(&in[0], 2) || !dl_is<T>(&in[1], 2) ||
        !dl_is<T>(&in[2], 2) || !dl_is<T>(&out[0], 2))
        return false;
    *M = in[0].shape[0];
    *K = in[0].shape[1];
    *N = in[1].shape[0];
    return in[1].shape[1] == *K && in[2].shape[0] == *N && in[2].shape[1] == *K &&
           out[0].shape[0] == *M && out[0].shape[1] == *N;
}

// ---------------------------------------------------------------- v1 naive
template <typename T>
__global__ void gate_kernel(const float *a, const float *b, T *out, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        out[i] = from_f<T>(silu_gate(a[i], b[i]));
}

static void *v1_scratch;
static size_t v1_scratch_size;

template <typename T>
static int linact_v1(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                     kgate_stream st)
{
    int64_t M, N, K;
    if (!linact_args<T>(in, nin, out, nout, &M, &N, &K))
        return kernel_fail(p, 1, "linear_activation v1: expected x[M,K], W1[N,K], W3[N,K] -> out[M,N]");
    cudaStream_t s = (cudaStream_t)st;
    const T *X = (const T *)in[0].data, *W1 = (const T *)in[1].data, *W3 = (const T *)in[2].data;
    float *a = (float *)scratch_get(&v1_scratch, &v1_scratch_size, (size_t)(2 * M * N) * sizeof(float));
    if (!a) {
        cudaGetLastError();
        return kernel_fail(p, 2, "linear_activation v1: no device memory for the fp32 scratch");
    }
    float *b = a + M * N;
    simt_launch<T, false>(X, W1, NULL, a, NULL, M, N, K, s);
    simt_launch<T, false>(X, W3, NULL, b, NULL, M, N, K, s);
    gate_kernel<T><<<wave_grid<gate_kernel<T>, 256>((M * N + 255) / 256), 256, 0, s>>>(
        a, b, (T *)out[0].data, M * N);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v2 fast
namespace lv2 {
constexpr int BM = 128, BN = 128, BK = 64, STAGES = 4, GROUP_M = 16;
constexpr int THREADS = 384; // warpgroup 0 produces, 1 and 2 consume
constexpr uint32_t STAGE_BYTES = (BM * BK + 2 * BN * BK) * 2;

template <typename T> struct Smem {
    T x[STAGES][BM * BK];  // 16 KB a stage, 1024-aligned
    T w1[STAGES][BN * BK]; // 16 KB
    T w3[STAGES][BN * BK]; // 16 KB
    uint64_t full[STAGES], empty[STAGES];
};

// One k16 step: 64x128 += x(64x16) . W^T(16x128), W K-major.
template <typename T> __device__ __forceinline__ void wgmma_step(float *d, uint64_t dx, uint64_t dw)
{
    if constexpr (std::is_same<T, __nv_bfloat16>::value)
        KG_WGMMA_M64N128K16("bf16", "0", d, dx, dw);
    else
        KG_WGMMA_M64N128K16("f16", "0", d, dx, dw);
}

template <typename T>
__global__ __launch_bounds__(THREADS, 1) void kernel(const __grid_constant__ CUtensorMap map_x,
                                                     const __grid_constant__ CUtensorMap map_w1,
                                                     const __grid_constant__ CUtensorMap map_w3,
                                                     T *out, int M, int N, int K)
{
#if KG_SM90A
    extern __shared__ __align__(1024) unsigned char raw[];
    Smem<T> &sm = *reinterpret_cast<Smem<T> *>(
        (reinterpret_cast<uintptr_t>(raw) + 1023) & ~(uintptr_t)1023);
    int tm, tn;
    sm90::grouped_tile((int)blockIdx.x, M / BM, N / BN, GROUP_M, &tm, &tn);
    const int wg = threadIdx.x / 128, KT = K / BK;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            sm90::mbar_init(&sm.full[s], 1);
            sm90::mbar_init(&sm.empty[s], 2);
        }
        sm90::mbar_fence_init();
    }
    __syncthreads();

    if (wg == 0) {
        sm90::regs_producer();
        if (threadIdx.x == 0) {
            for (int kt = 0; kt < KT; kt++) {
                int s = kt % STAGES;
                if (kt >= STAGES)
                    sm90::mbar_wait(&sm.empty[s], ((kt / STAGES) - 1) & 1);
                sm90::mbar_expect_tx(&sm.full[s], STAGE_BYTES);
                sm90::tma_load_2d(sm.x[s], &map_x, &sm.full[s], kt * BK, tm * BM);
                sm90::tma_load_2d(sm.w1[s], &map_w1, &sm.full[s], kt * BK, tn * BN);
                sm90::tma_load_2d(sm.w3[s], &map_w3, &sm.full[s], kt * BK, tn * BN);
            }
        }
        return;
    }
    sm90::regs_consumer();
    const int cw = wg - 1;
    float a[64], b[64];
#pragma unroll
    for (int i = 0; i < 64; i++) {
        a[i] = 0.f;
        b[i] = 0.f;
    }
    for (int kt = 0; kt < KT; kt++) {
        int s = kt % STAGES;
        sm90::mbar_wait(&sm.full[s], (kt / STAGES) & 1);
        sm90::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            uint64_t dx = sm90::desc(sm.x[s] + cw * 64 * BK + kk * 16, 16, 1024);
            uint64_t d1 = sm90::desc(sm.w1[s] + kk * 16, 16, 1024);
            uint64_t d3 = sm90::desc(sm.w3[s] + kk * 16, 16, 1024);
            wgmma_step<T>(a, dx, d1);
            wgmma_step<T>(b, dx, d3);
        }
        sm90::wgmma_commit();
        sm90::wgmma_wait_all();
        if (threadIdx.x % 128 == 0)
            sm90::mbar_arrive(&sm.empty[s]);
    }
    // accumulator fragment: row lane/4 (+8) of the warp's 16, columns
    // j*8 + (lane%4)*2 and +1
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    const int64_t row = (int64_t)tm * BM + cw * 64 + warp * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < BN / 8; j++) {
        int col = tn * BN + j * 8 + (lane % 4) * 2;
        T *o0 = out + row * N + col, *o8 = o0 + (int64_t)8 * N;
        *reinterpret_cast<uint32_t *>(o0) = sm90::pack2<T>(silu_gate(a[j * 4 + 0], b[j * 4 + 0]),
                                                           silu_gate(a[j * 4 + 1], b[j * 4 + 1]));
        *reinterpret_cast<uint32_t *>(o8) = sm90::pack2<T>(silu_gate(a[j * 4 + 2], b[j * 4 + 2]),
                                                           silu_gate(a[j * 4 + 3], b[j * 4 + 3]));
    }
#else
    kg_not_sm90a();
#endif
}

// Whether the fused tensor-core path covers the shape: whole tiles, tile
// counts and coordinates within int, 16-byte aligned bases (TMA).
template <typename T> static bool fits(const T *X, const T *W1, const T *W3, const T *out,
                                       int64_t M, int64_t N, int64_t K)
{
    return M % BM == 0 && N % BN == 0 && K % BK == 0 && M > 0 && N > 0 && K > 0 &&
           M <= INT_MAX && N <= INT_MAX && K <= INT_MAX && (M / BM) * (N / BN) <= INT_MAX &&
           (uintptr_t)X % 16 == 0 && (uintptr_t)W1 % 16 == 0 && (uintptr_t)W3 % 16 == 0 &&
           (uintptr_t)out % 16 == 0;
}

// 0, or a kernel_fail code with the reason in *why.
template <typename T>
static int launch(const T *X, const T *W1, const T *W3, T *out, int64_t M, int64_t N, int64_t K,
                  cudaStream_t s, const char **why)
{
    CUtensorMap mx, m1, m3;
    if (sm90::make_map<T>(&mx, X, M, K, BM) || sm90::make_map<T>(&m1, W1, N, K, BN) ||
        sm90::make_map<T>(&m3, W3, N, K, BN)) {
        *why = "linear_activation v2: cuTensorMapEncodeTiled failed";
        return 4;
    }
    size_t smem = sizeof(Smem<T>) + 1024;
    if (!sm90::allow_smem<kernel<T>>(smem)) {
        *why = "linear_activation v2: cannot get 193 KB of shared memory";
        return 3;
    }
    int64_t blocks = (M / BM) * (N / BN);
    kernel<T><<<(unsigned)blocks, THREADS, smem, s>>>(mx, m1, m3, out, (int)M, (int)N, (int)K);
    return 0;
}
} // namespace lv2

template <typename T>
static int linact_v2(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                     kgate_stream st)
{
    int64_t M, N, K;
    if (!linact_args<T>(in, nin, out, nout, &M, &N, &K))
        return kernel_fail(p, 1, "linear_activation v2: expected x[M,K], W1[N,K], W3[N,K] -> out[M,N]");
    if (int rc = need_sm90a(p, "linear_activation v2"))
        return rc;
    cudaStream_t s = (cudaStream_t)st;
    const T *X = (const T *)in[0].data, *W1 = (const T *)in[1].data, *W3 = (const T *)in[2].data;
    T *O = (T *)out[0].data;
    if (lv2::fits<T>(X, W1, W3, O, M, N, K)) {
        const char *why = "";
        int rc = lv2::launch<T>(X, W1, W3, O, M, N, K, s, &why);
        if (rc)
            return kernel_fail(p, rc, why);
    } else {
        simt_launch<T, true>(X, W1, W3, NULL, O, M, N, K, s);
    }
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

static const kgate_kernel variants[] = {
    {"linear_activation_v1_fp16", "linear_activation", "fp16", NULL, 3, 1, linact_v1<__half>,
     "unfused: two 64x64-tile fp32 FMA GEMMs into fp32 scratch, then a pointwise gate: no "
     "tensor cores, intermediates round-trip through DRAM (NOTC, RC4)",
     NULL, NULL},
    {"linear_activation_v2_fp16", "linear_activation", "fp16", NULL, 3, 1, linact_v2<__half>,
     "fused: TMA + two wgmma m64n128k16 on a shared x tile, 4 stages, silu(a) * b in the "
     "epilogue",
     NULL, NULL},
    {"linear_activation_v1_bf16", "linear_activation", "bf16", NULL, 3, 1,
     linact_v1<__nv_bfloat16>,
     "unfused: two 64x64-tile fp32 FMA GEMMs into fp32 scratch, then a pointwise gate: no "
     "tensor cores, intermediates round-trip through DRAM (NOTC, RC4)",
     NULL, NULL},
    {"linear_activation_v2_bf16", "linear_activation", "bf16", NULL, 3, 1,
     linact_v2<__nv_bfloat16>,
     "fused: TMA + two wgmma m64n128k16 on a shared x tile, 4 stages, silu(a) * b in the "
     "epilogue",
     NULL, NULL},
};
KG_EXPORT_VARIANTS(linear_activation, variants)
