// batched_matmul: C[b] = A[b] . B[b], row-major, A [BATCH,M,K], B [BATCH,K,N],
// C [BATCH,M,N], fp16/bf16 in and out, fp32 accumulate.
//
// The fp64 reference is src/ops/batched_matmul.cu.
//
// v1 naive (NOTC, RC2a): one 64x64 tile of one batch per block, fp32 FMA on
//            converted operands (no tensor cores), the same tile whatever
//            the shape: at M = 1 (the gemv preset) 63 of its 64 rows are
//            padding, and B is read through scalar 2-byte loads.
// v2 fast:   M = 1: a streaming GEMV, one block per (batch, 256 columns):
//            each lane owns 8 columns, the block's 8 warps split K, every B
//            row segment is one 16-byte load (8 in flight a lane), partial
//            sums meet in shared memory. Otherwise the Hopper path: A and B
//            viewed as [BATCH*M, K] and [BATCH*K, N] (no tile crosses a
//            batch, since M % 128 == 0 and K % 64 == 0), TMA loads of A
//            (128x64) and B (64 x BN) tiles into a multi-stage ring with the
//            128-byte swizzle, completing on mbarriers; one producer
//            warpgroup, two consumer warpgroups each running wgmma
//            m64nBNk16 (B MN-major); BN = 256 (4 stages) when N % 256 == 0,
//            else 128 (6 stages); batch-major grid, row-tiles grouped by 8
//            within a batch for L2 reuse. Other shapes fall back to v1.
#include <climits>
#include <type_traits>

#include "common.cuh"
#include "sm90_tma.cuh"
#include "wgmma_m64n128k16.cuh"
#include "wgmma_m64n256k16.cuh"

// ---------------------------------------------------------------- v1 naive
template <typename T>
__global__ __launch_bounds__(256) void bmm_v1_kernel(const T *A, const T *B, T *C, int64_t batch,
                                                     int64_t M, int64_t N, int64_t K)
{
    __shared__ float As[16][64 + 1]; // As[k][m]
    __shared__ float Bs[16][64];     // Bs[k][n]
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int64_t n0 = (int64_t)blockIdx.x * 64;
    for (int64_t b = blockIdx.z; b < batch; b += gridDim.z)
        for (int64_t m0 = (int64_t)blockIdx.y * 64; m0 < M; m0 += (int64_t)gridDim.y * 64) {
            const T *a = A + b * M * K, *bm = B + b * K * N;
            float acc[4][4] = {};
            for (int64_t k0 = 0; k0 < K; k0 += 16) {
                for (int i = threadIdx.x; i < 1024; i += 256) {
                    int r = i / 16, c = i % 16;
                    As[c][r] = m0 + r < M && k0 + c < K ? to_f(a[(m0 + r) * K + k0 + c]) : 0.f;
                    int rb = i / 64, cb = i % 64;
                    Bs[rb][cb] = k0 + rb < K && n0 + cb < N ? to_f(bm[(k0 + rb) * N + n0 + cb]) : 0.f;
                }
                __syncthreads();
#pragma unroll
                for (int kk = 0; kk < 16; kk++) {
                    float av[4], bv[4];
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        av[i] = As[kk][ty * 4 + i];
                        bv[i] = Bs[kk][tx * 4 + i];
                    }
#pragma unroll
                    for (int i = 0; i < 4; i++)
#pragma unroll
                        for (int j = 0; j < 4; j++)
                            acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
                }
                __syncthreads();
            }
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) {
                    int64_t r = m0 + ty * 4 + i, c = n0 + tx * 4 + j;
                    if (r < M && c < N)
                        C[(b * M + r) * N + c] = from_f<T>(acc[i][j]);
                }
        }
}

template <typename T>
static void bmm_v1_launch(const T *A, const T *B, T *C, int64_t batch, int64_t M, int64_t N,
                          int64_t K, cudaStream_t s)
{
    int64_t gy = (M + 63) / 64;
    dim3 grid((unsigned)((N + 63) / 64), (unsigned)(gy < 65535 ? gy : 65535),
              (unsigned)(batch < 65535 ? batch : 65535));
    bmm_v1_kernel<T><<<grid, 256, 0, s>>>(A, B, C, batch, M, N, K);
}

// The extents of A[BATCH,M,K] . B[BATCH,K,N] -> C[BATCH,M,N], or false.
template <typename T>
static bool bmm_args(const DLTensor *in, int nin, const DLTensor *out, int nout, int64_t *batch,
                     int64_t *M, int64_t *N, int64_t *K)
{
    if (nin != 2 || nout != 1 || !dl_is<T>(&in[0], 3) || !dl_is<T>(&in[1], 3) ||
        !dl_is<T>(&out[0], 3))
        return false;
    *batch = in[0].shape[0];
    *M = in[0].shape[1];
    *K = in[0].shape[2];
    *N = in[1].shape[2];
    return in[1].shape[0] == *batch && in[1].shape[1] == *K && out[0].shape[0] == *batch &&
           out[0].shape[1] == *M && out[0].shape[2] == *N;
}

template <typename T>
static int bmm_v1(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                  kgate_stream st)
{
    int64_t batch, M, N, K;
    if (!bmm_args<T>(in, nin, out, nout, &batch, &M, &N, &K))
        return kernel_fail(p, 1, "batched_matmul v1: expected A[B,M,K], B[B,K,N] -> C[B,M,N]");
    bmm_v1_launch<T>((const T *)in[0].data, (const T *)in[1].data, (T *)out[0].data, batch, M, N,
                     K, (cudaStream_t)st);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v2: GEMV (M = 1)
namespace bgemv {
constexpr int WARPS = 8, THREADS = 32 * WARPS, COLS = 32 * 8; // 8 columns a lane

// Eight values of T (one 16-byte vector) as floats.
template <typename T> __device__ __forceinline__ void unpack8(const uint4 &v, float *f)
{
    const T *h = reinterpret_cast<const T *>(&v);
#pragma unroll
    for (int i = 0; i < 8; i++)
        f[i] = to_f(h[i]);
}

// C[b, 0, n] = sum_k A[b, 0, k] B[b, k, n]. Needs N % 8 == 0, K % 8 == 0 and
// 16-byte aligned bases: every vector below is whole and aligned.
template <typename T>
__global__ __launch_bounds__(THREADS, 4) void kernel(const T *A, const T *B, T *C, int64_t N,
                                                     int64_t K, int64_t chunks)
{
    __shared__ float part[WARPS][COLS];
    const int64_t b = blockIdx.x / chunks, chunk = blockIdx.x % chunks;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t n0 = chunk * COLS + lane * 8;
    // this warp's rows of K: [kb, ke), both multiples of 8
    const int64_t per = (K + 8 * WARPS - 1) / (8 * WARPS) * 8;
    const int64_t kb = warp * per, ke = min(K, kb + per);
    const T *a = A + b * K, *bm = B + b * K * N + n0;
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    if (n0 < N)
        for (int64_t k = kb; k < ke; k += 8) {
            uint4 bv[8];
#pragma unroll
            for (int j = 0; j < 8; j++)
                bv[j] = __ldg(reinterpret_cast<const uint4 *>(bm + (k + j) * N));
            float af[8];
            unpack8<T>(__ldg(reinterpret_cast<const uint4 *>(a + k)), af);
#pragma unroll
            for (int j = 0; j < 8; j++) {
                float bf[8];
                unpack8<T>(bv[j], bf);
#pragma unroll
                for (int i = 0; i < 8; i++)
                    acc[i] = fmaf(af[j], bf[i], acc[i]);
            }
        }
#pragma unroll
    for (int i = 0; i < 8; i++)
        part[warp][lane * 8 + i] = acc[i];
    __syncthreads();
    const int64_t n = chunk * COLS + threadIdx.x;
    if (n < N) {
        float sum = 0.f;
#pragma unroll
        for (int w = 0; w < WARPS; w++)
            sum += part[w][threadIdx.x];
        C[b * N + n] = from_f<T>(sum);
    }
}

template <typename T> static bool fits(const T *A, const T *B, const T *C, int64_t M, int64_t N,
                                       int64_t K)
{
    return M == 1 && N % 8 == 0 && K % 8 == 0 && K > 0 && (uintptr_t)A % 16 == 0 &&
           (uintptr_t)B % 16 == 0 && (uintptr_t)C % 2 == 0;
}

template <typename T>
static void launch(const T *A, const T *B, T *C, int64_t batch, int64_t N, int64_t K,
                   cudaStream_t s)
{
    int64_t chunks = (N + COLS - 1) / COLS;
    kernel<T><<<(unsigned)(batch * chunks), THREADS, 0, s>>>(A, B, C, N, K, chunks);
}
} // namespace bgemv

// ---------------------------------------------------------------- v2: TMA + wgmma
namespace bv2 {
constexpr int BM = 128, BK = 64, GROUP_M = 8;
constexpr int THREADS = 384; // warpgroup 0 produces, 1 and 2 consume

template <int BN> struct Cfg {
    static constexpr int STAGES = BN == 256 ? 4 : 6;
    static constexpr uint32_t STAGE_BYTES = (BM * BK + BK * BN) * 2;
};

template <typename T, int BN> struct Smem {
    T a[Cfg<BN>::STAGES][BM * BK]; // 16 KB a stage, 1024-aligned
    T b[Cfg<BN>::STAGES][BK * BN]; // BN/64 boxes of 64x64, 8 KB each
    uint64_t full[Cfg<BN>::STAGES], empty[Cfg<BN>::STAGES];
};

// One k16 step of a consumer warpgroup: 64xBN += A(64x16) . B(16xBN), B MN-major.
template <typename T, int BN>
__device__ __forceinline__ void wgmma_step(float *d, uint64_t da, uint64_t db)
{
    constexpr bool bf = std::is_same<T, __nv_bfloat16>::value;
    if constexpr (BN == 256) {
        if constexpr (bf)
            KG_WGMMA_M64N256K16("bf16", d, da, db);
        else
            KG_WGMMA_M64N256K16("f16", d, da, db);
    } else {
        if constexpr (bf)
            KG_WGMMA_M64N128K16("bf16", "1", d, da, db);
        else
            KG_WGMMA_M64N128K16("f16", "1", d, da, db);
    }
}

template <typename T, int BN>
__global__ __launch_bounds__(THREADS, 1) void kernel(const __grid_constant__ CUtensorMap map_a,
                                                     const __grid_constant__ CUtensorMap map_b,
                                                     T *C, int M, int N, int K)
{
#if KG_SM90A
    constexpr int STAGES = Cfg<BN>::STAGES;
    extern __shared__ __align__(1024) unsigned char raw[];
    Smem<T, BN> &sm = *reinterpret_cast<Smem<T, BN> *>(
        (reinterpret_cast<uintptr_t>(raw) + 1023) & ~(uintptr_t)1023);
    const int tiles_m = M / BM, tiles_n = N / BN, per_batch = tiles_m * tiles_n;
    const int batch = (int)blockIdx.x / per_batch;
    int tm, tn;
    sm90::grouped_tile((int)blockIdx.x % per_batch, tiles_m, tiles_n, GROUP_M, &tm, &tn);
    const int a_row = batch * M + tm * BM; // in A viewed [BATCH*M, K] (and C [BATCH*M, N])
    const int b_row = batch * K;           // B[batch] starts here in [BATCH*K, N]
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
                sm90::mbar_expect_tx(&sm.full[s], Cfg<BN>::STAGE_BYTES);
                sm90::tma_load_2d(sm.a[s], &map_a, &sm.full[s], kt * BK, a_row);
#pragma unroll
                for (int j = 0; j < BN / 64; j++)
                    sm90::tma_load_2d(sm.b[s] + j * 64 * BK, &map_b, &sm.full[s], tn * BN + j * 64,
                                      b_row + kt * BK);
            }
        }
        return;
    }
    sm90::regs_consumer();
    const int cw = wg - 1;
    float d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; i++)
        d[i] = 0.f;
    for (int kt = 0; kt < KT; kt++) {
        int s = kt % STAGES;
        sm90::mbar_wait(&sm.full[s], (kt / STAGES) & 1);
        sm90::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            uint64_t da = sm90::desc(sm.a[s] + cw * 64 * BK + kk * 16, 16, 1024);
            uint64_t db = sm90::desc(sm.b[s] + kk * 16 * 64, 64 * BK * 2, 1024);
            wgmma_step<T, BN>(d, da, db);
        }
        sm90::wgmma_commit();
        sm90::wgmma_wait_all();
        if (threadIdx.x % 128 == 0)
            sm90::mbar_arrive(&sm.empty[s]);
    }
    // accumulator fragment: row lane/4 (+8) of the warp's 16, columns
    // j*8 + (lane%4)*2 and +1
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    const int64_t row = a_row + cw * 64 + warp * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < BN / 8; j++) {
        int col = tn * BN + j * 8 + (lane % 4) * 2;
        T *c0 = C + row * N + col, *c8 = c0 + (int64_t)8 * N;
        *reinterpret_cast<uint32_t *>(c0) = sm90::pack2<T>(d[j * 4 + 0], d[j * 4 + 1]);
        *reinterpret_cast<uint32_t *>(c8) = sm90::pack2<T>(d[j * 4 + 2], d[j * 4 + 3]);
    }
#else
    kg_not_sm90a();
#endif
}

// Whether the tiled path covers the shape: whole tiles, every row and tile
// coordinate within int, 16-byte aligned bases (TMA).
template <typename T> static bool fits(const T *A, const T *B, const T *C, int64_t batch,
                                       int64_t M, int64_t N, int64_t K)
{
    return M % BM == 0 && N % 128 == 0 && K % BK == 0 && M > 0 && N > 0 && K > 0 &&
           batch * M <= INT_MAX && batch * K <= INT_MAX && N <= INT_MAX &&
           batch * (M / BM) * (N / 128) <= INT_MAX && (uintptr_t)A % 16 == 0 &&
           (uintptr_t)B % 16 == 0 && (uintptr_t)C % 16 == 0;
}

// 0, or a kernel_fail code with the reason in *why.
template <typename T, int BN>
static int launch(const T *A, const T *B, T *C, int64_t batch, int64_t M, int64_t N, int64_t K,
                  cudaStream_t s, const char **why)
{
    CUtensorMap ma, mb;
    if (sm90::make_map<T>(&ma, A, batch * M, K, BM) || sm90::make_map<T>(&mb, B, batch * K, N, BK)) {
        *why = "batched_matmul v2: cuTensorMapEncodeTiled failed";
        return 4;
    }
    size_t smem = sizeof(Smem<T, BN>) + 1024;
    if (!sm90::allow_smem<kernel<T, BN>>(smem)) {
        *why = "batched_matmul v2: cannot get the shared memory of the tile ring";
        return 3;
    }
    int64_t blocks = batch * (M / BM) * (N / BN);
    kernel<T, BN><<<(unsigned)blocks, THREADS, smem, s>>>(ma, mb, C, (int)M, (int)N, (int)K);
    return 0;
}
} // namespace bv2

template <typename T>
static int bmm_v2(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                  kgate_stream st)
{
    int64_t batch, M, N, K;
    if (!bmm_args<T>(in, nin, out, nout, &batch, &M, &N, &K))
        return kernel_fail(p, 1, "batched_matmul v2: expected A[B,M,K], B[B,K,N] -> C[B,M,N]");
    if (int rc = need_sm90a(p, "batched_matmul v2"))
        return rc;
    cudaStream_t s = (cudaStream_t)st;
    const T *A = (const T *)in[0].data, *B = (const T *)in[1].data;
    T *C = (T *)out[0].data;
    const char *why = "";
    int rc = 0;
    if (bgemv::fits<T>(A, B, C, M, N, K))
        bgemv::launch<T>(A, B, C, batch, N, K, s);
    else if (bv2::fits<T>(A, B, C, batch, M, N, K))
        rc = N % 256 == 0 ? bv2::launch<T, 256>(A, B, C, batch, M, N, K, s, &why)
                          : bv2::launch<T, 128>(A, B, C, batch, M, N, K, s, &why);
    else
        bmm_v1_launch<T>(A, B, C, batch, M, N, K, s);
    if (rc)
        return kernel_fail(p, rc, why);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

static const kgate_kernel variants[] = {
    {"batched_matmul_v1_fp16", "batched_matmul", "fp16", NULL, 2, 1, bmm_v1<__half>,
     "64x64 tile per block and batch, fp32 FMA: no tensor cores, one tile for every shape "
     "(NOTC, RC2a)",
     NULL, NULL},
    {"batched_matmul_v2_fp16", "batched_matmul", "fp16", NULL, 2, 1, bmm_v2<__half>,
     "TMA + wgmma 128x256 or 128x128 tiles, warp-specialized, batch-major grid; M = 1: 16-byte "
     "streaming GEMV",
     NULL, NULL},
    {"batched_matmul_v1_bf16", "batched_matmul", "bf16", NULL, 2, 1, bmm_v1<__nv_bfloat16>,
     "64x64 tile per block and batch, fp32 FMA: no tensor cores, one tile for every shape "
     "(NOTC, RC2a)",
     NULL, NULL},
    {"batched_matmul_v2_bf16", "batched_matmul", "bf16", NULL, 2, 1, bmm_v2<__nv_bfloat16>,
     "TMA + wgmma 128x256 or 128x128 tiles, warp-specialized, batch-major grid; M = 1: 16-byte "
     "streaming GEMV",
     NULL, NULL},
};
KG_EXPORT_VARIANTS(batched_matmul, variants)
