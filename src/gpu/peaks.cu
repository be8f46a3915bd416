// `kgate peaks`: the measured roofs.
//
// Bandwidth: four streams, each by several kernels (catalog/roofline.h says how
// the roofs are used): read-only (reductions), write-only (fills), copy (one
// read per write) and triad (two reads per write: add, mul, swiglu), plus
// cudaMemcpy device-to-device among the copies. The kernels are at least as
// strong as the bundled kernels that read highest (kernels/mean_reduction.cu
// v2: four 16-byte streaming loads in flight a thread, a block per 128 KB):
// 1 to 8 loads in flight, 16 or 32 bytes a thread, persistent grids (as
// many blocks as fit, grid-stride) and plain ones (a block per chunk),
// evict-first (.cs) and no-L1-allocate loads with a 256-byte L2 prefetch.
// Every variant is timed at 1 GiB a stream; the winner of each stream again
// at 8x L2 and 2 GiB; the roof is the best of them. Read-only streams are
// timed cold, as kernels are (L2 flushed by a read before each call); the
// others back to back, so that each call pays for the write-back of the one
// before it (the DRAM rate). Then every kernel that writes is timed cold at
// 4x L2: a cold call ends with some of its writes still in L2, so it moves
// more bytes than the DRAM rate allows in its time; the largest such
// surplus, at most the L2 size, is the roofs' L2 write credit.
//
// Matrix throughput from cuBLASLt at 8192^3 on random data (fp16, bf16, and
// fp32 through tf32 tensor cores).
#include <stdio.h>
#include <string.h>

#include "baseline.h"
#include "check.h"
#include "device.h"
#include "timer.h"

// ------------------------------------------------------------ the kernels
struct pk_args {
    const uint4 *a, *b; // the streams read (a: read, copy, triad; b: triad)
    uint4 *d;           // the stream written (write, copy, triad)
    size_t n;           // 16-byte vectors a stream
    unsigned *sink;     // written only when a read-only sum hits a value that never occurs
};

// Load hints: 0 ld.global.cs (evict-first, as the bundled reductions), 1
// ld.global.nc.L1::no_allocate with a 256-byte L2 prefetch, 2 ld.global.nc,
// 3 ld.global (what Triton's tl.load gives).
template <int H> __device__ __forceinline__ uint4 pk_ld(const uint4 *p);
template <> __device__ __forceinline__ uint4 pk_ld<0>(const uint4 *p) { return __ldcs(p); }
template <> __device__ __forceinline__ uint4 pk_ld<1>(const uint4 *p)
{
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
    return v;
}
template <> __device__ __forceinline__ uint4 pk_ld<2>(const uint4 *p) { return __ldg(p); }
template <> __device__ __forceinline__ uint4 pk_ld<3>(const uint4 *p)
{
    uint4 v;
    asm("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}

// Store hints: 0 st.global.cs (evict-first), 1 st.global (write-back).
template <int H> __device__ __forceinline__ void pk_st(uint4 *p, uint4 v)
{
    if (H == 0)
        __stcs(p, v);
    else
        *p = v;
}

// U slots of a thread, step vectors-of-V apart: all loads first (U * V * NR
// in flight), then the stores or the sum. A slot is V adjacent 16-byte
// vectors (V = 2: 32 bytes a thread; sm_90 has no 32-byte load, so two).
template <int NR, int NW, int U, int V, int LH, int SH>
__device__ __forceinline__ void pk_group(const pk_args &g, size_t i0, size_t step, unsigned &acc)
{
    uint4 x[U][V], y[U][V];
#pragma unroll
    for (int u = 0; u < U; u++)
#pragma unroll
        for (int v = 0; v < V; v++) {
            const size_t k = (i0 + u * step) * V + v;
            if (NR >= 1)
                x[u][v] = pk_ld<LH>(g.a + k);
            if (NR >= 2)
                y[u][v] = pk_ld<LH>(g.b + k);
        }
#pragma unroll
    for (int u = 0; u < U; u++)
#pragma unroll
        for (int v = 0; v < V; v++) {
            const size_t k = (i0 + u * step) * V + v;
            uint4 o;
            if (NR == 0) {
                const unsigned h = (unsigned)k * 0x9E3779B1u;
                o = make_uint4(h, h ^ 0x5A5A5A5Au, h + 0x3C6EF372u, (unsigned)k);
            } else if (NR == 1) {
                o = x[u][v];
            } else {
                o = make_uint4(x[u][v].x ^ y[u][v].x, x[u][v].y ^ y[u][v].y, x[u][v].z ^ y[u][v].z,
                               x[u][v].w ^ y[u][v].w);
            }
            if (NW)
                pk_st<SH>(g.d + k, o);
            else
                acc ^= o.x ^ o.y ^ o.z ^ o.w;
        }
}

// Persistent grid: each thread strides over the whole stream, U slots at a time.
template <int NR, int NW, int U, int V, int LH, int SH>
__global__ void pk_persistent(pk_args g)
{
    const size_t slots = g.n / V, stride = (size_t)gridDim.x * blockDim.x;
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    unsigned acc = 0;
    for (; i + (U - 1) * stride < slots; i += U * stride)
        pk_group<NR, NW, U, V, LH, SH>(g, i, stride, acc);
    for (; i < slots; i += stride)
        pk_group<NR, NW, 1, V, LH, SH>(g, i, stride, acc);
    if (!NW && acc == 0x9E3779B9u)
        *g.sink = acc;
}

// Plain grid: block b takes slots [b, b + 1) * blockDim * U * ITER, ITER
// groups of U (the host makes the stream a whole number of chunks).
template <int NR, int NW, int U, int V, int LH, int SH, int ITER>
__global__ void pk_plain(pk_args g)
{
    const size_t base = blockIdx.x * (size_t)blockDim.x * U * ITER + threadIdx.x;
    unsigned acc = 0;
#pragma unroll 1
    for (int it = 0; it < ITER; it++)
        pk_group<NR, NW, U, V, LH, SH>(g, base + (size_t)it * U * blockDim.x, blockDim.x, acc);
    if (!NW && acc == 0x9E3779B9u)
        *g.sink = acc;
}

// Fills a stream with a pattern (not zeros, not constant) before the timing.
__global__ void pk_fill(uint4 *p, size_t n, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const unsigned h = ((unsigned)i ^ seed) * 0x85EBCA6Bu;
        p[i] = make_uint4(h, h * 0xC2B2AE35u, h ^ (unsigned)(i >> 32), ~h);
    }
}

// ------------------------------------------------------------ the variants
enum { PK_READ, PK_WRITE, PK_COPY, PK_TRIAD, PK_MIXES };
static const char *const pk_mix_name[PK_MIXES] = {"read", "write", "copy", "triad"};
static const int pk_reads[PK_MIXES] = {1, 0, 1, 2}, pk_writes[PK_MIXES] = {0, 1, 1, 1};

struct pk_variant {
    const char *name;
    int mix;
    const void *fn;  // the kernel; NULL: cudaMemcpyAsync
    int threads;
    int per_sm;      // persistent: blocks a SM (0: as many as fit)
    int chunk;       // plain: 16-byte vectors a block (0: persistent)
};

#define PERSIST(nr, nw, u, v, lh, sh) ((const void *)pk_persistent<nr, nw, u, v, lh, sh>)
#define PLAIN(nr, nw, u, v, lh, sh, it) ((const void *)pk_plain<nr, nw, u, v, lh, sh, it>)
static const pk_variant pk_variants[] = {
    {"read  1x16B .cs 512t 8/SM", PK_READ, PERSIST(1, 0, 1, 1, 0, 0), 512, 8, 0},
    {"read  4x16B .cs 512t persistent", PK_READ, PERSIST(1, 0, 4, 1, 0, 0), 512, 0, 0},
    {"read  8x16B .cs 256t persistent", PK_READ, PERSIST(1, 0, 8, 1, 0, 0), 256, 0, 0},
    {"read  4x16B .nc256 512t persistent", PK_READ, PERSIST(1, 0, 4, 1, 1, 0), 512, 0, 0},
    {"read  2x32B .cs 512t persistent", PK_READ, PERSIST(1, 0, 2, 2, 0, 0), 512, 0, 0},
    {"read  4x16B .cs 512t 128KB/block", PK_READ, PLAIN(1, 0, 4, 1, 0, 0, 4), 512, 0, 512 * 16},
    {"read  4x16B .cs 256t 64KB/block", PK_READ, PLAIN(1, 0, 4, 1, 0, 0, 4), 256, 0, 256 * 16},
    {"read  4x16B .nc256 512t 128KB/block", PK_READ, PLAIN(1, 0, 4, 1, 1, 0, 4), 512, 0, 512 * 16},
    {"read  8x16B .cs 256t 64KB/block", PK_READ, PLAIN(1, 0, 8, 1, 0, 0, 2), 256, 0, 256 * 16},
    {"read  1x16B ld 128t 2KB/block", PK_READ, PLAIN(1, 0, 1, 1, 3, 0, 1), 128, 0, 128},
    {"write 1x16B .cs 512t 8/SM", PK_WRITE, PERSIST(0, 1, 1, 1, 0, 0), 512, 8, 0},
    {"write 4x16B .cs 512t persistent", PK_WRITE, PERSIST(0, 1, 4, 1, 0, 0), 512, 0, 0},
    {"write 4x16B wb 512t persistent", PK_WRITE, PERSIST(0, 1, 4, 1, 0, 1), 512, 0, 0},
    {"write 2x32B .cs 512t persistent", PK_WRITE, PERSIST(0, 1, 2, 2, 0, 0), 512, 0, 0},
    {"write 4x16B .cs 512t 128KB/block", PK_WRITE, PLAIN(0, 1, 4, 1, 0, 0, 4), 512, 0, 512 * 16},
    {"write 4x16B wb 512t 128KB/block", PK_WRITE, PLAIN(0, 1, 4, 1, 0, 1, 4), 512, 0, 512 * 16},
    {"write 1x16B wb 128t 2KB/block", PK_WRITE, PLAIN(0, 1, 1, 1, 0, 1, 1), 128, 0, 128},
    {"copy  cudaMemcpy D2D", PK_COPY, NULL, 0, 0, 0},
    {"copy  1x16B .nc/wb 512t 8/SM", PK_COPY, PERSIST(1, 1, 1, 1, 2, 1), 512, 8, 0},
    {"copy  4x16B .cs 512t persistent", PK_COPY, PERSIST(1, 1, 4, 1, 0, 0), 512, 0, 0},
    {"copy  4x16B .nc256/wb 512t persistent", PK_COPY, PERSIST(1, 1, 4, 1, 1, 1), 512, 0, 0},
    {"copy  2x32B .cs 512t persistent", PK_COPY, PERSIST(1, 1, 2, 2, 0, 0), 512, 0, 0},
    {"copy  4x16B .cs 512t 64KB/block", PK_COPY, PLAIN(1, 1, 4, 1, 0, 0, 2), 512, 0, 512 * 8},
    {"copy  4x16B .nc256/wb 512t 64KB/block", PK_COPY, PLAIN(1, 1, 4, 1, 1, 1, 2), 512, 0, 512 * 8},
    {"copy  1x16B ld/wb 128t 2KB/block", PK_COPY, PLAIN(1, 1, 1, 1, 3, 1, 1), 128, 0, 128},
    {"triad 2x16B .cs 512t persistent", PK_TRIAD, PERSIST(2, 1, 2, 1, 0, 0), 512, 0, 0},
    {"triad 4x16B .cs 256t persistent", PK_TRIAD, PERSIST(2, 1, 4, 1, 0, 0), 256, 0, 0},
    {"triad 4x16B .nc256/wb 256t persistent", PK_TRIAD, PERSIST(2, 1, 4, 1, 1, 1), 256, 0, 0},
    {"triad 4x16B .cs 512t 64KB/block", PK_TRIAD, PLAIN(2, 1, 4, 1, 0, 0, 2), 512, 0, 512 * 8},
    {"triad 4x16B .nc256/wb 512t 64KB/block", PK_TRIAD, PLAIN(2, 1, 4, 1, 1, 1, 2), 512, 0, 512 * 8},
    {"triad 1x16B ld/wb 128t 2KB/block", PK_TRIAD, PLAIN(2, 1, 1, 1, 3, 1, 1), 128, 0, 128},
};
#undef PERSIST
#undef PLAIN
enum { PK_N = (int)(sizeof pk_variants / sizeof pk_variants[0]) };

struct pk_ctx {
    pk_args g;
    cudaStream_t s;
    const pk_variant *v;
    size_t bytes; // a stream's bytes this call
    unsigned grid;
    int sms;
};

static int pk_launch(void *p, int set, kgate_stream st, kg_err *err)
{
    (void)set;
    pk_ctx *c = (pk_ctx *)p;
    cudaStream_t s = (cudaStream_t)st;
    pk_args g = c->g;
    void *args[] = {&g};
    g.n = c->bytes / 16;
    if (!c->v->fn)
        KG_CUDA(cudaMemcpyAsync(g.d, g.a, c->bytes, cudaMemcpyDeviceToDevice, s));
    else
        KG_CUDA(cudaLaunchKernel(c->v->fn, dim3(c->grid), dim3((unsigned)c->v->threads), args, 0, s));
    return 0;
out:
    return err->code;
}

// Times variant v at `bytes` a stream and records it in pk: bytes read +
// written over the median time; cold: L2 flushed before each call, as
// kernels are timed; else back to back.
static int pk_time(pk_ctx *c, const pk_variant *v, size_t bytes, int cold, kg_peaks *pk, double *bw,
                   kg_err *err)
{
    kg_timer_cfg tc;
    kg_timing tm;
    c->v = v;
    c->bytes = bytes;
    if (v->fn && v->chunk) {
        c->grid = (unsigned)(bytes / 16 / (size_t)v->chunk);
    } else if (v->fn) {
        int per_sm = v->per_sm;
        if (!per_sm)
            KG_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, v->fn, v->threads, 0));
        c->grid = (unsigned)(per_sm * c->sms);
    }
    kg_timer_defaults(&tc);
    tc.flush = cold ? KG_FLUSH_READ : KG_FLUSH_NONE;
    tc.stop.min_samples = 30; /* the median of 30 or more calls of 60 us to 1.5 ms */
    tc.stop.min_gpu_s = 0.01;
    tc.stop.max_wall_s = 0.5;
    if (kg_time(&tc, pk_launch, c, (kgate_stream)c->s, &tm, err))
        goto out;
    *bw = (double)bytes * (pk_reads[v->mix] + pk_writes[v->mix]) / tm.st.median;
    if (pk->n_variants < KG_PEAK_VARIANTS) {
        kg_peak_variant *r = &pk->variants[pk->n_variants++];
        snprintf(r->name, sizeof r->name, "%s", v->name);
        snprintf(r->mix, sizeof r->mix, "%s", pk_mix_name[v->mix]);
        r->stream_bytes = (double)bytes;
        r->bw = *bw;
        r->cold = cold;
    }
    return 0;
out:
    return err->code;
}

// The streams' roofs: every variant at sizes[0], each stream's best again at
// sizes[1] and sizes[2]; a stream's roof is the best of them. Then every
// kernel that writes is timed cold at `mid` bytes a stream: the fastest of
// a stream against its roof gives the stream's L2 write credit.
static int pk_bandwidth(pk_ctx *c, const size_t sizes[3], size_t mid, double l2, kg_peaks *pk, kg_err *err)
{
    int best[PK_MIXES] = {-1, -1, -1, -1};
    double top[PK_MIXES] = {0, 0, 0, 0}, cold[PK_MIXES] = {0, 0, 0, 0}, bw;
    for (int i = 0; i < PK_N; i++) {
        const pk_variant *v = &pk_variants[i];
        if (pk_time(c, v, sizes[0], v->mix == PK_READ, pk, &bw, err))
            return err->code;
        if (bw > top[v->mix])
            top[v->mix] = bw, best[v->mix] = i;
        if (!v->fn)
            pk->memcpy_bw = bw;
        else if (v->mix == PK_COPY && bw > pk->copy_kernel_bw)
            pk->copy_kernel_bw = bw;
    }
    for (int m = 0; m < PK_MIXES; m++)
        for (int k = 1; k < 3; k++) {
            const pk_variant *v = &pk_variants[best[m]];
            if (sizes[k] == sizes[0] || (k == 2 && sizes[2] == sizes[1]))
                continue;
            if (pk_time(c, v, sizes[k], m == PK_READ, pk, &bw, err))
                return err->code;
            top[m] = bw > top[m] ? bw : top[m];
            if (!v->fn && bw > pk->memcpy_bw)
                pk->memcpy_bw = bw;
            else if (v->fn && m == PK_COPY && bw > pk->copy_kernel_bw)
                pk->copy_kernel_bw = bw;
        }
    for (int i = 0; i < PK_N; i++) {
        const pk_variant *v = &pk_variants[i];
        if (v->mix == PK_READ)
            continue;
        if (pk_time(c, v, mid, 1, pk, &bw, err))
            return err->code;
        cold[v->mix] = bw > cold[v->mix] ? bw : cold[v->mix];
    }
    pk->read_bw = top[PK_READ];
    pk->write_bw = top[PK_WRITE];
    pk->triad_bw = top[PK_TRIAD];
    for (int m = PK_WRITE; m < PK_MIXES; m++) {
        /* the bytes a cold call moved beyond what the roof allows in its time */
        const double moved = (double)mid * (pk_reads[m] + pk_writes[m]);
        const double surplus = cold[m] > top[m] ? moved * (1.0 - top[m] / cold[m]) : 0;
        pk->credit[m - PK_WRITE] = surplus;
        if (surplus > pk->l2_credit)
            pk->l2_credit = surplus < l2 ? surplus : l2;
    }
    return 0;
}

// Bytes rounded up to a whole number of 4 MiB (every plain chunk divides it).
static size_t pk_round(double bytes)
{
    const size_t q = (size_t)4 << 20;
    return ((size_t)bytes + q - 1) / q * q;
}

extern "C" int kg_peaks_measure(kg_peaks *pk, kg_roofs *roofs, kg_err *err)
{
    pk_ctx c;
    int dev, l2 = 0;
    size_t free_b = 0, total_b = 0;
    memset(&c, 0, sizeof c);
    memset(pk, 0, sizeof *pk);
    memset(roofs, 0, sizeof *roofs);
    KG_CUDA(cudaGetDevice(&dev));
    KG_CUDA(cudaDeviceGetAttribute(&c.sms, cudaDevAttrMultiProcessorCount, dev));
    KG_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    if (l2 <= 0)
        l2 = 64 << 20; /* not reported: about an H100's */
    KG_CUDA(cudaMemGetInfo(&free_b, &total_b));
    {
        /* a stream is at most 2 GiB and an eighth of the free memory (three are
         * allocated); the screening size 1 GiB, the others 8x L2 and the most */
        size_t most = pk_round((double)((size_t)2 << 30));
        while (most > ((size_t)64 << 20) && 8 * most > free_b)
            most /= 2;
        size_t sizes[3] = {most < ((size_t)1 << 30) ? most : (size_t)1 << 30, pk_round(8.0 * l2), most};
        if (sizes[1] > most)
            sizes[1] = most;
        const size_t mid = pk_round(4.0 * l2) < most ? pk_round(4.0 * l2) : most;
        KG_CUDA(cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking));
        KG_CUDA(cudaMalloc((void **)&c.g.a, most));
        KG_CUDA(cudaMalloc((void **)&c.g.b, most));
        KG_CUDA(cudaMalloc((void **)&c.g.d, most));
        KG_CUDA(cudaMalloc((void **)&c.g.sink, sizeof(unsigned)));
        pk_fill<<<c.sms * 4, 512, 0, c.s>>>((uint4 *)c.g.a, most / 16, 0x1234567u);
        pk_fill<<<c.sms * 4, 512, 0, c.s>>>((uint4 *)c.g.b, most / 16, 0x89ABCDEu);
        pk_fill<<<c.sms * 4, 512, 0, c.s>>>(c.g.d, most / 16, 0x2468ACEu);
        KG_CUDA(cudaGetLastError());
        KG_CUDA(cudaStreamSynchronize(c.s));
        pk->copy_bytes = 2.0 * (double)sizes[0];
        if (pk_bandwidth(&c, sizes, mid, (double)l2, pk, err))
            goto out;
    }
    cudaFree((void *)c.g.a);
    cudaFree((void *)c.g.b);
    cudaFree(c.g.d);
    c.g.a = c.g.b = NULL;
    c.g.d = NULL;
    {
        const kg_dtype dts[3] = {KG_FP16, KG_BF16, KG_FP32};
        const double n = 8192;
        for (int i = 0; i < 3; i++) {
            double t;
            if (kg_cublaslt_peak(dts[i], 8192, 8192, 8192, &t, err))
                goto out;
            pk->mma[dts[i]] = 2.0 * n * n * n / t;
        }
    }
    strcpy(roofs->source, "measured");
    roofs->bw = pk->copy_kernel_bw > pk->memcpy_bw ? pk->copy_kernel_bw : pk->memcpy_bw;
    roofs->bw_read = pk->read_bw;
    roofs->bw_write = pk->write_bw;
    roofs->bw_triad = pk->triad_bw;
    roofs->l2_credit = pk->l2_credit;
    for (int i = 0; i < KG_DTYPE_COUNT; i++)
        roofs->mma[i] = pk->mma[i];
out:
    if (c.g.a)
        cudaFree((void *)c.g.a);
    if (c.g.b)
        cudaFree((void *)c.g.b);
    if (c.g.d)
        cudaFree(c.g.d);
    if (c.g.sink)
        cudaFree(c.g.sink);
    if (c.s)
        cudaStreamDestroy(c.s);
    return err->code;
}
