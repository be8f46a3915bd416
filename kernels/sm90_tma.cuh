// Hopper (sm_90a) building blocks of the TMA + wgmma GEMMs in kernels/
// (matmul, batched_matmul, linear_activation, conv2d): mbarriers, 2-D and
// 4-D TMA tile loads that complete on an mbarrier, shared-memory matrix
// descriptors with the 128-byte swizzle, the wgmma fences and waits, named
// barriers, the tensor-map encoder (reached through the runtime, so
// candidates link cudart only) and a packed pair store.
// The rule: every tile is [rows, 64] elements of 2 bytes (128-byte rows), so
// the 128-byte swizzle of the TMA copy and of the descriptors agree, and
// every tile in shared memory starts 1024-byte aligned.
#pragma once

#include <cuda.h>

#include "common.cuh"

// KG_SM90A: device code compiled for sm_90a, where wgmma, TMA and setmaxnreg
// are (H100/H200; sm_100a has no wgmma). The Hopper kernels have a body only
// there; built for the fat binary's other archs it is kg_not_sm90a().
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KG_SM90A 1
#else
#define KG_SM90A 0
// Constants that only the Hopper bodies use are unreferenced in the other
// passes (host, sm_80, sm_100); the sm_90a pass sees every use and warns.
#pragma nv_diag_suppress 177
#endif

// A Hopper kernel's body on another arch: never reached (the launch refuses
// first, need_sm90a), and loud if it were.
__device__ __forceinline__ void kg_not_sm90a(void) { __trap(); }

// 1 in the sm_90a code of the file that includes this header: read back
// from the module the runtime loaded for this GPU, it says whether the code
// that would run here is the Hopper one (an H100/H200 and a build with 90a),
// not a guess from the device's name.
static __device__ int kg_sm90a_module = KG_SM90A;

// 0 where this GPU runs the sm_90a code, else the launch's refusal naming
// what the variant needs. kgate lists such a variant as unavailable on the
// GPU and never launches it; this guards every other caller. Asked once.
static inline int need_sm90a(const kgate_params *p, const char *variant)
{
    static int here = -1;
    if (here < 0) {
        int v = 0;
        here = cudaMemcpyFromSymbol(&v, kg_sm90a_module, sizeof v) == cudaSuccess && v == 1;
        cudaGetLastError(); // no code for this GPU at all: the answer, not an error to keep
    }
    if (here)
        return 0;
    char msg[160];
    snprintf(msg, sizeof msg, "%s needs sm_90a (wgmma, TMA): an H100/H200 and a build with 90a", variant);
    return kernel_fail(p, 9, msg);
}

namespace sm90 {

__device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void mbar_init(uint64_t *bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}

// Makes the initialized barriers visible to the async proxy (TMA).
__device__ __forceinline__ void mbar_fence_init(void)
{
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbar_expect_tx(uint64_t *bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
                 "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}

// Waits until the barrier's phase with parity `phase` has completed.
__device__ __forceinline__ void mbar_wait(uint64_t *bar, int phase)
{
    uint32_t done = 0;
    while (!done)
        asm volatile("{\n.reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(smem_addr(bar)), "r"(phase)
                     : "memory");
}

// The box of `map` at (c0 = column, c1 = row) into dst; completes on bar.
__device__ __forceinline__ void tma_load_2d(void *dst, const CUtensorMap *map, uint64_t *bar,
                                            int c0, int c1)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_addr(dst)),
                 "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(smem_addr(bar))
                 : "memory");
}

// The 4-D box of `map` at (c0 innermost .. c3) into dst; completes on bar.
// Coordinates are signed: elements outside the tensor arrive as zeros.
__device__ __forceinline__ void tma_load_4d(void *dst, const CUtensorMap *map, uint64_t *bar,
                                            int c0, int c1, int c2, int c3)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6];" ::"r"(smem_addr(dst)),
                 "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(smem_addr(bar))
                 : "memory");
}

// Shared-memory matrix descriptor, 128-byte swizzle: lbo and sbo in bytes.
// K-major tiles [rows, 64]: lbo 16 (unused), sbo 1024 (8 rows); the start
// moves 32 bytes per k16 step. MN-major tiles (64-column boxes of [64 K
// rows, 64]): lbo = the distance between boxes, sbo 1024 (8 K rows).
__device__ __forceinline__ uint64_t desc(const void *p, uint32_t lbo, uint32_t sbo)
{
    uint64_t d = (smem_addr(p) & 0x3FFFF) >> 4;
    d |= (uint64_t)((lbo & 0x3FFFF) >> 4) << 16;
    d |= (uint64_t)((sbo & 0x3FFFF) >> 4) << 32;
    d |= 1ull << 62;
    return d;
}

__device__ __forceinline__ void wgmma_fence(void)
{
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit(void)
{
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void wgmma_wait_all(void)
{
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}

// Waits until at most N committed wgmma groups of the warpgroup are pending.
template <int N> __device__ __forceinline__ void wgmma_wait(void)
{
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// Pins N accumulator registers at this point of the program: placed after a
// wgmma wait, the reads that follow cannot be scheduled above the wait (the
// wait asm itself names no registers).
template <int N> __device__ __forceinline__ void fence_regs(float *d)
{
#pragma unroll
    for (int i = 0; i < N; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}

// Named barrier `id` (1..15; 0 is __syncthreads') over `count` threads.
__device__ __forceinline__ void bar_sync(int id, int count)
{
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}

// Producer and consumer warpgroups trade registers: 40 + 2 x 232 per thread
// of 384 fits the 64K register file.
__device__ __forceinline__ void regs_producer(void)
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
}

__device__ __forceinline__ void regs_consumer(void)
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
}

// Two values rounded to T, packed for one 4-byte store (first at the lower
// address).
template <typename T> __device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <> __device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi)
{
    return (uint32_t)__half_as_ushort(__float2half_rn(lo)) |
           ((uint32_t)__half_as_ushort(__float2half_rn(hi)) << 16);
}
template <> __device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi)
{
    return (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(lo)) |
           ((uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(hi)) << 16);
}

// The linear tile index of a grid walked in groups of `group` row-tiles
// (consecutive blocks share column tiles while the group's rows stay in L2):
// tile t of tiles_m x tiles_n -> (tm, tn).
__device__ __forceinline__ void grouped_tile(int t, int tiles_m, int tiles_n, int group, int *tm,
                                             int *tn)
{
    const int per_group = group * tiles_n;
    const int first_m = (t / per_group) * group;
    const int gm = min(tiles_m - first_m, group);
    *tm = first_m + (t % per_group) % gm;
    *tn = (t % per_group) / gm;
}

// The kernel's shared-memory struct S at the first 1024-byte boundary of the
// dynamic shared memory `raw` (the 128-byte swizzle's alignment; the launch
// asks for 1024 bytes more than sizeof(S)). Aligned by an offset from raw,
// not by rounding an integer, so that the compiler still sees shared memory
// (LDS/STS rather than generic loads and stores).
template <typename S> __device__ __forceinline__ S &smem_aligned(unsigned char *raw)
{
    return *reinterpret_cast<S *>(raw + ((1024 - (smem_addr(raw) & 1023)) & 1023));
}

// ---- the stage ring of a persistent warp-specialized GEMM (conv2d v3, matmul v3)
// STAGES shared-memory stages pass between one producer thread (TMA) and two
// consumer warpgroups: full[s] completes when the stage's bytes have landed,
// empty[s] when both consumers are done with it. `it` counts ring steps from
// 0 and runs on across tiles (STAGES divides 2^32: the parity survives a
// wrap), so the next tile's first stages load during this one's epilogue.
template <int STAGES> __device__ __forceinline__ void ring_init(uint64_t *full, uint64_t *empty)
{
    for (int s = 0; s < STAGES; s++) {
        mbar_init(&full[s], 1);
        mbar_init(&empty[s], 2); // one arrival per consumer warpgroup
    }
    mbar_fence_init();
}

// Producer: the stage of step `it`, once the consumers have freed it.
template <int STAGES> __device__ __forceinline__ int ring_acquire(uint64_t *empty, uint32_t it)
{
    const int s = (int)(it % STAGES);
    if (it >= STAGES)
        mbar_wait(&empty[s], (int)((it / STAGES - 1) & 1));
    return s;
}

// Consumer: the stage of step `it`, once its bytes have landed.
template <int STAGES> __device__ __forceinline__ int ring_wait_full(uint64_t *full, uint32_t it)
{
    const int s = (int)(it % STAGES);
    mbar_wait(&full[s], (int)((it / STAGES) & 1));
    return s;
}

// Consumer, after issuing step `it`'s wgmmas: commits them as a group and
// keeps that one group in flight; the step before is then complete and its
// stage is freed (by the warpgroup's thread `release`, from the second step
// of a tile on).
template <int STAGES> __device__ __forceinline__ void ring_step_issued(uint64_t *empty, uint32_t it, bool release)
{
    wgmma_commit();
    wgmma_wait<1>(); // the previous step's group is done: its stage is free
    if (release)
        mbar_arrive(&empty[(it - 1) % STAGES]);
}

// Consumer, after a tile's last step (`it` one past it): every group done,
// the NACC accumulators d pinned after the wait, the last stage freed.
template <int STAGES, int NACC>
__device__ __forceinline__ void ring_tile_done(uint64_t *empty, uint32_t it, bool release, float *d)
{
    wgmma_wait<0>();
    fence_regs<NACC>(d); // the epilogue reads d only after the wait
    if (release)
        mbar_arrive(&empty[(it - 1) % STAGES]);
}

// Epilogue of a consumer warpgroup, a 64x64 chunk at a time through a
// shared [64][LD] chunk of T. chunk_rows writes the chunk row-major (row
// fr / fr + 8 of the warpgroup's 64, column 8j + fc) from its 32
// accumulator fragments d[4j..4j+3] (m64nNk16's layout: d[4j + 0, 1] at row
// warp*16 + lane/4, columns 8j + 2 (lane%4) + 0, 1; d[4j + 2, 3] eight rows
// below); chunk_store copies it out 16 bytes a thread, 8 threads a row,
// to at(row, column) for the warpgroup's thread t.
template <typename T, int LD> __device__ __forceinline__ void chunk_rows(T *ep, const float *d, int fr, int fc)
{
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const float *v = d + j * 4;
        const int col = j * 8 + fc;
        *reinterpret_cast<uint32_t *>(ep + fr * LD + col) = pack2<T>(v[0], v[1]);
        *reinterpret_cast<uint32_t *>(ep + (fr + 8) * LD + col) = pack2<T>(v[2], v[3]);
    }
}

template <int LD, typename T, typename At> __device__ __forceinline__ void chunk_store(const T *ep, int t, At at)
{
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int row = t / 8 + 16 * i, v8 = t % 8 * 8;
        const uint4 val = *reinterpret_cast<const uint4 *>(ep + row * LD + v8);
        *reinterpret_cast<uint4 *>(at(row, v8)) = val;
    }
}

typedef CUresult (*encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                              const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                              const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                              CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static inline encode_fn get_encode(void)
{
    static encode_fn fn;
    if (!fn) {
        cudaDriverEntryPointQueryResult q;
        void *p = NULL;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                             &q) == cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = (encode_fn)p;
        else
            cudaGetLastError();
    }
    return fn;
}

// A tensor of T of rank 1..5 (extents dims, innermost first; byte strides of
// dimensions 1..rank-1), a box with element strides estr (TMA loads
// ceil(box[i] / estr[i]) elements along i), the 128-byte swizzle, zero fill
// outside the tensor. box[0] must be 64 (128-byte rows). Returns 0, or -1
// when the encoder is missing or refuses.
template <typename T>
static int make_map_nd(CUtensorMap *map, const T *ptr, int rank, const uint64_t *dims,
                       const uint64_t *strides, const uint32_t *box, const uint32_t *estr)
{
    encode_fn enc = get_encode();
    if (!enc || rank < 1 || rank > 5)
        return -1;
    cuuint64_t d[5], st[4];
    cuuint32_t b[5], e[5];
    for (int i = 0; i < rank; i++) {
        d[i] = dims[i];
        b[i] = box[i];
        e[i] = estr[i];
        if (i + 1 < rank)
            st[i] = strides[i];
    }
    CUtensorMapDataType dt = dl_code<T>::code == kDLBfloat ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                           : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    return enc(map, dt, (cuuint32_t)rank, (void *)ptr, d, st, b, e, CU_TENSOR_MAP_INTERLEAVE_NONE,
               CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS
               ? 0
               : -1;
}

// A row-major [rows, cols] tensor of T with a [box_rows, 64] box and the
// 128-byte swizzle. Needs cols % 8 == 0 (16-byte row stride) and a 16-byte
// aligned base. Returns 0, or -1 when the encoder is missing or refuses.
template <typename T>
static int make_map(CUtensorMap *map, const T *ptr, int64_t rows, int64_t cols, int box_rows)
{
    const uint64_t dims[2] = {(uint64_t)cols, (uint64_t)rows}, strides[1] = {(uint64_t)cols * sizeof(T)};
    const uint32_t box[2] = {64, (uint32_t)box_rows}, estr[2] = {1, 1};
    return make_map_nd<T>(map, ptr, 2, dims, strides, box, estr);
}

// Lets kernel K use `bytes` of dynamic shared memory, once per process.
// Returns false when the device refuses.
template <auto K> static bool allow_smem(size_t bytes)
{
    static bool done = false;
    if (!done) {
        if (cudaFuncSetAttribute(K, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes) !=
            cudaSuccess) {
            cudaGetLastError();
            return false;
        }
        done = true;
    }
    return true;
}

} // namespace sm90
