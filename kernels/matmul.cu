// matmul: C[M,N] = A[M,K] . B[K,N], row-major, fp16/bf16/fp32 in and out,
// fp32 accumulate.
//
// The fp64 reference is src/ops/matmul.cu.
//
// v1 naive (NOTC, RC2a): the paper's default-grid GEMM: a fixed 64x64 tile, no tensor
//            cores (fp32 FMA on converted operands), no L2 swizzle. At fp32
//            it is the only variant: fp32 FMA is what fp32's tolerance
//            allows (TF32 tensor cores fail it), so only its tile (RC2a).
// v2:        Hopper path: TMA loads A (128x64) and B (64x256) tiles into a
//            4-stage shared-memory ring with 128-byte swizzle, completing on
//            mbarriers; one producer warpgroup issues the copies, two consumer
//            warpgroups each run wgmma m64n256k16 (B transposed in the
//            descriptor, since B is N-major) and keep 128 fp32 accumulators;
//            tiles are visited in groups of 8 row-tiles for L2 reuse.
//            Shapes off the 128x256x64 grid, empty products and bases
//            not 16-byte aligned (TMA) fall back to v1.
// v3 fast:   v2 made persistent: one block an SM walks the tiles with the
//            TMA ring running on across them (the next tile loads during
//            this one's epilogue), one wgmma group kept in flight per
//            consumer, and the epilogue staged through shared memory for
//            16-byte stores. conv2d v3's pipeline on v2's operands. On the
//            H200: 0.99-1.00 of cuBLASLt at 4096^3, 0.97-0.98 at
//            8192^3, 0.95-0.96 at 16384^3; at 1024^3 its 32 tiles leave most
//            SMs idle (0.42).
#include <cuda.h>
#include <limits.h>

#include "common.cuh"
#include "sm90_tma.cuh"
#include "wgmma_m64n256k16.cuh"

// ---------------------------------------------------------------- v1 naive
template <typename T>
__global__ __launch_bounds__(256) void mm_v1_kernel(const T *A, const T *B, T *C, int M, int N,
                                                    int K)
{
    __shared__ float As[16][64 + 1];
    __shared__ float Bs[16][64];
    int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    int m0 = blockIdx.y * 64, n0 = blockIdx.x * 64;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int i = threadIdx.x; i < 1024; i += 256) {
            int r = i / 16, c = i % 16;
            As[c][r] = m0 + r < M && k0 + c < K ? to_f(A[(size_t)(m0 + r) * K + k0 + c]) : 0.f;
            int rb = i / 64, cb = i % 64;
            Bs[rb][cb] = k0 + rb < K && n0 + cb < N ? to_f(B[(size_t)(k0 + rb) * N + n0 + cb]) : 0.f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < 16; kk++) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                a[i] = As[kk][ty * 4 + i];
                b[i] = Bs[kk][tx * 4 + i];
            }
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            int r = m0 + ty * 4 + i, c = n0 + tx * 4 + j;
            if (r < M && c < N)
                C[(size_t)r * N + c] = from_f<T>(acc[i][j]);
        }
}

// Whether the call is A[M,K], B[K,N] -> C[M,N], all of dtype T, with extents
// that fit an int.
template <typename T> static bool mm_args(const DLTensor *in, int nin, const DLTensor *out, int nout)
{
    if (!(nin == 2 && nout == 1 && dl_is<T>(&in[0], 2) && dl_is<T>(&in[1], 2) && dl_is<T>(&out[0], 2)))
        return false;
    const int64_t M = in[0].shape[0], K = in[0].shape[1], N = in[1].shape[1];
    return in[1].shape[0] == K && out[0].shape[0] == M && out[0].shape[1] == N && M <= INT_MAX && N <= INT_MAX &&
           K <= INT_MAX;
}

template <typename T> static void mm_v1_launch(const T *A, const T *B, T *C, int M, int N, int K,
                                               cudaStream_t s)
{
    if (M == 0 || N == 0)
        return; // an empty C: nothing to write (and no grid of zero blocks)
    dim3 grid((N + 63) / 64, (M + 63) / 64);
    mm_v1_kernel<T><<<grid, 256, 0, s>>>(A, B, C, M, N, K);
}

template <typename T>
static int mm_v1(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                 kgate_stream st)
{
    if (!mm_args<T>(in, nin, out, nout))
        return kernel_fail(p, 1, "matmul v1: expected A[M,K], B[K,N] -> C[M,N]");
    int M = (int)in[0].shape[0], K = (int)in[0].shape[1], N = (int)in[1].shape[1];
    mm_v1_launch<T>((const T *)in[0].data, (const T *)in[1].data, (T *)out[0].data, M, N, K,
                    (cudaStream_t)st);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v2 fast
namespace v2 {
using namespace sm90; // mbarriers, TMA loads, descriptors, the tensor-map encoder
constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4, GROUP_M = 8;
constexpr int THREADS = 384; // warpgroup 0 produces, 1 and 2 consume
constexpr uint32_t STAGE_BYTES = (BM * BK + BK * BN) * 2;

template <typename T> struct Smem {
    T a[STAGES][BM * BK]; // 16 KB a stage, 1024-aligned
    T b[STAGES][BK * BN]; // 32 KB a stage: four 64x64 boxes
    uint64_t full[STAGES], empty[STAGES];
};

// One k16 step of a consumer warpgroup: 64x256 += A(64x16) . B(16x256).
__device__ __forceinline__ void wgmma_step(float *d, uint64_t da, uint64_t db, __half)
{
    KG_WGMMA_M64N256K16("f16", d, da, db);
}
__device__ __forceinline__ void wgmma_step(float *d, uint64_t da, uint64_t db, __nv_bfloat16)
{
    KG_WGMMA_M64N256K16("bf16", d, da, db);
}

template <typename T>
__global__ __launch_bounds__(THREADS, 1) void kernel(const __grid_constant__ CUtensorMap map_a,
                                                     const __grid_constant__ CUtensorMap map_b,
                                                     T *C, int M, int N, int K)
{
#if KG_SM90A
    extern __shared__ __align__(1024) unsigned char raw[];
    Smem<T> &sm = *reinterpret_cast<Smem<T> *>(
        (reinterpret_cast<uintptr_t>(raw) + 1023) & ~(uintptr_t)1023);
    const int tiles_m = M / BM, tiles_n = N / BN;
    const int per_group = GROUP_M * tiles_n;
    const int group = blockIdx.x / per_group, first_m = group * GROUP_M;
    const int gm = min(tiles_m - first_m, GROUP_M);
    const int tm = first_m + (blockIdx.x % per_group) % gm;
    const int tn = (blockIdx.x % per_group) / gm;
    const int wg = threadIdx.x / 128, KT = K / BK;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(&sm.full[s], 1);
            mbar_init(&sm.empty[s], 2);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0) {
            for (int kt = 0; kt < KT; kt++) {
                int s = kt % STAGES;
                if (kt >= STAGES)
                    mbar_wait(&sm.empty[s], ((kt / STAGES) - 1) & 1);
                mbar_expect_tx(&sm.full[s], STAGE_BYTES);
                tma_load_2d(sm.a[s], &map_a, &sm.full[s], kt * BK, tm * BM);
#pragma unroll
                for (int j = 0; j < BN / 64; j++)
                    tma_load_2d(sm.b[s] + j * 64 * BK, &map_b, &sm.full[s], tn * BN + j * 64,
                                kt * BK);
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int cw = wg - 1;
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; i++)
        d[i] = 0.f;
    for (int kt = 0; kt < KT; kt++) {
        int s = kt % STAGES;
        mbar_wait(&sm.full[s], (kt / STAGES) & 1);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            uint64_t da = desc(sm.a[s] + cw * 64 * BK + kk * 16, 16, 1024);
            uint64_t db = desc(sm.b[s] + kk * 16 * 64, 64 * BK * 2, 1024);
            wgmma_step(d, da, db, T());
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        if (threadIdx.x % 128 == 0)
            mbar_arrive(&sm.empty[s]);
    }
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    const int row = tm * BM + cw * 64 + warp * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < BN / 8; j++) {
        int col = tn * BN + j * 8 + (lane % 4) * 2;
        T *c0 = C + (size_t)row * N + col, *c8 = c0 + (size_t)8 * N;
        c0[0] = from_f<T>(d[j * 4 + 0]);
        c0[1] = from_f<T>(d[j * 4 + 1]);
        c8[0] = from_f<T>(d[j * 4 + 2]);
        c8[1] = from_f<T>(d[j * 4 + 3]);
    }
#else
    kg_not_sm90a();
#endif
}

// Whether the TMA path (v2, v3) covers the call: whole 128x256x64 tiles of a
// non-empty product and 16-byte aligned bases (TMA's tensor maps); v1 takes
// anything else.
template <typename T> static bool fits(const T *A, const T *B, const T *C, int M, int N, int K)
{
    return M > 0 && N > 0 && K > 0 && M % BM == 0 && N % BN == 0 && K % BK == 0 && (uintptr_t)A % 16 == 0 &&
           (uintptr_t)B % 16 == 0 && (uintptr_t)C % 16 == 0;
}
} // namespace v2

// A call of the TMA variants (v2, v3): its operands and tensor maps.
template <typename T> struct MmCall {
    const T *A, *B;
    T *C;
    int M, N, K;
    CUtensorMap ma, mb;
};

// What v2 and v3 do first: the call checked into c, then v1 run instead where
// their TMA path does not fit it (v2::fits), else the tensor maps made.
// Returns -1 when the variant is to launch, else what it returns (0: v1 ran).
template <typename T>
static int mm_tma_begin(const char *name, const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                        kgate_stream st, MmCall<T> *c)
{
    char msg[96];
    if (!mm_args<T>(in, nin, out, nout)) {
        snprintf(msg, sizeof msg, "%s: expected A[M,K], B[K,N] -> C[M,N]", name);
        return kernel_fail(p, 1, msg);
    }
    c->M = (int)in[0].shape[0], c->K = (int)in[0].shape[1], c->N = (int)in[1].shape[1];
    c->A = (const T *)in[0].data, c->B = (const T *)in[1].data, c->C = (T *)out[0].data;
    if (!v2::fits(c->A, c->B, c->C, c->M, c->N, c->K)) {
        mm_v1_launch<T>(c->A, c->B, c->C, c->M, c->N, c->K, (cudaStream_t)st);
        KG_KERNEL_LAUNCHED(p);
        return 0;
    }
    if (v2::make_map<T>(&c->ma, c->A, c->M, c->K, v2::BM) || v2::make_map<T>(&c->mb, c->B, c->K, c->N, v2::BK)) {
        snprintf(msg, sizeof msg, "%s: cuTensorMapEncodeTiled failed", name);
        return kernel_fail(p, 4, msg);
    }
    return -1;
}

template <typename T>
static int mm_v2(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                 kgate_stream st)
{
    MmCall<T> c;
    if (int rc = need_sm90a(p, "matmul v2"))
        return rc;
    int rc = mm_tma_begin<T>("matmul v2", in, nin, out, nout, p, st, &c);
    if (rc >= 0)
        return rc;
    const size_t smem = sizeof(v2::Smem<T>) + 1024;
    if (!v2::allow_smem<v2::kernel<T>>(smem))
        return kernel_fail(p, 3, "matmul v2: cannot get 193 KB of shared memory");
    int blocks = (c.M / v2::BM) * (c.N / v2::BN);
    v2::kernel<T><<<blocks, v2::THREADS, smem, (cudaStream_t)st>>>(c.ma, c.mb, c.C, c.M, c.N, c.K);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v3 (Hopper, persistent)
// v2's tiles, operands and wgmma, with conv2d v3's pipeline (GPU-verified
// there): one block per SM walks the tiles t = blockIdx.x + i gridDim.x in
// v2's grouped order; the producer's ring of STAGES runs on across tiles,
// so a tile's first stages load while the consumers store the one before;
// each consumer keeps one wgmma group in flight (a stage is released once
// the group after it was issued and its own has completed). The epilogue
// goes through a per-warpgroup 64x64 shared chunk for 16-byte stores along N.
namespace v3 {
using namespace sm90;
constexpr int BM = v2::BM, BN = v2::BN, BK = v2::BK, STAGES = 4, GROUP_M = v2::GROUP_M;
constexpr int THREADS = 384;
constexpr int EP_LD = 64 + 8; // 144-byte chunk rows: conflict-free fragment writes

template <typename T> struct Smem {
    T a[STAGES][BM * BK]; // 16 KB a stage, 1024-aligned
    T b[STAGES][BK * BN]; // 32 KB a stage: four 64x64 boxes
    T ep[2][64 * EP_LD];  // the consumers' epilogue chunks
    uint64_t full[STAGES], empty[STAGES];
};

template <typename T> constexpr size_t smem_bytes() { return sizeof(Smem<T>) + 1024; }

template <typename T>
__global__ __launch_bounds__(THREADS, 1) void kernel(const __grid_constant__ CUtensorMap map_a,
                                                     const __grid_constant__ CUtensorMap map_b,
                                                     T *C, int M, int N, int K)
{
#if KG_SM90A
    extern __shared__ __align__(1024) unsigned char raw[];
    Smem<T> &sm = smem_aligned<Smem<T>>(raw);
    const int tiles_m = M / BM, tiles_n = N / BN, tiles = tiles_m * tiles_n, KT = K / BK;
    const int wg = threadIdx.x / 128;
    if (threadIdx.x == 0)
        ring_init<STAGES>(sm.full, sm.empty);
    __syncthreads();

    if (wg == 0) {
        regs_producer();
        if (threadIdx.x == 0) {
            uint32_t it = 0; // ring steps so far (sm90_tma.cuh: the ring)
            for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
                int tm, tn;
                grouped_tile(t, tiles_m, tiles_n, GROUP_M, &tm, &tn);
                for (int kt = 0; kt < KT; kt++, it++) {
                    const int s = ring_acquire<STAGES>(sm.empty, it);
                    mbar_expect_tx(&sm.full[s], v2::STAGE_BYTES);
                    tma_load_2d(sm.a[s], &map_a, &sm.full[s], kt * BK, tm * BM);
#pragma unroll
                    for (int j = 0; j < BN / 64; j++)
                        tma_load_2d(sm.b[s] + j * 64 * BK, &map_b, &sm.full[s], tn * BN + j * 64, kt * BK);
                }
            }
        }
        return;
    }

    regs_consumer();
    const int cw = wg - 1, t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    T *ep = sm.ep[cw];
    float d[BN / 2];
    uint32_t it = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
#pragma unroll
        for (int i = 0; i < BN / 2; i++)
            d[i] = 0.f;
        for (int kt = 0; kt < KT; kt++, it++) {
            const int s = ring_wait_full<STAGES>(sm.full, it);
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; kk++)
                v2::wgmma_step(d, desc(sm.a[s] + cw * 64 * BK + kk * 16, 16, 1024),
                               desc(sm.b[s] + kk * 16 * 64, 64 * BK * 2, 1024), T());
            ring_step_issued<STAGES>(sm.empty, it, kt > 0 && t == 0);
        }
        ring_tile_done<STAGES, BN / 2>(sm.empty, it, t == 0, d);

        int tm, tn;
        grouped_tile(tile, tiles_m, tiles_n, GROUP_M, &tm, &tn);
        T *c = C + (size_t)(tm * BM + cw * 64) * N + tn * BN; // this warpgroup's 64 rows of the tile
        const int fr = warp * 16 + lane / 4, fc = lane % 4 * 2;
#pragma unroll
        for (int cc = 0; cc < BN / 64; cc++) {
            bar_sync(1 + cw, 128); // the chunk's previous reads are done
            chunk_rows<T, EP_LD>(ep, d + cc * 32, fr, fc);
            bar_sync(1 + cw, 128);
            chunk_store<EP_LD>(ep, t, [&](int row, int v8) { return c + (size_t)row * N + cc * 64 + v8; });
        }
    }
#else
    kg_not_sm90a();
#endif
}
} // namespace v3

// v3 where v2's TMA path fits the call (v2::fits), v1 otherwise.
template <typename T>
static int mm_v3(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                 kgate_stream st)
{
    MmCall<T> c;
    if (int rc = need_sm90a(p, "matmul v3"))
        return rc;
    int rc = mm_tma_begin<T>("matmul v3", in, nin, out, nout, p, st, &c);
    if (rc >= 0)
        return rc;
    constexpr size_t smem = v3::smem_bytes<T>();
    if (!v3::allow_smem<v3::kernel<T>>(smem))
        return kernel_fail(p, 3, "matmul v3: cannot get the shared memory (211 KB)");
    const int tiles = (c.M / v3::BM) * (c.N / v3::BN);
    const int grid = tiles < sm_count() ? tiles : sm_count();
    v3::kernel<T><<<grid, v3::THREADS, smem, (cudaStream_t)st>>>(c.ma, c.mb, c.C, c.M, c.N, c.K);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

#define MM_V3_WHY "TMA + wgmma, persistent 128x256 tiles, one wgmma group in flight, ring across tiles"
static const kgate_kernel variants[] = {
    {"matmul_v1_fp16", "matmul", "fp16", NULL, 2, 1, mm_v1<__half>,
     "64x64 tile, fp32 FMA: no tensor cores, the default-grid tile (NOTC, RC2a)", NULL, NULL},
    {"matmul_v2_fp16", "matmul", "fp16", NULL, 2, 1, mm_v2<__half>,
     "TMA + wgmma, warp-specialized, 4 stages", NULL, NULL},
    {"matmul_v3_fp16", "matmul", "fp16", NULL, 2, 1, mm_v3<__half>, MM_V3_WHY, NULL, NULL},
    {"matmul_v1_bf16", "matmul", "bf16", NULL, 2, 1, mm_v1<__nv_bfloat16>,
     "64x64 tile, fp32 FMA: no tensor cores, the default-grid tile (NOTC, RC2a)", NULL, NULL},
    {"matmul_v2_bf16", "matmul", "bf16", NULL, 2, 1, mm_v2<__nv_bfloat16>,
     "TMA + wgmma, warp-specialized, 4 stages", NULL, NULL},
    {"matmul_v3_bf16", "matmul", "bf16", NULL, 2, 1, mm_v3<__nv_bfloat16>, MM_V3_WHY, NULL, NULL},
    {"matmul_v1_fp32", "matmul", "fp32", NULL, 2, 1, mm_v1<float>,
     "64x64 tile, fp32 FMA on the CUDA cores (no TF32: fp32's tolerance), the default-grid tile (RC2a)", NULL,
     NULL},
};
KG_EXPORT_VARIANTS(matmul, variants)
