// `kgate peaks`: the measured roofs. Bandwidth from a 16-byte copy kernel and
// from cudaMemcpy device-to-device over 2 GiB buffers (bytes read + written),
// and from a read-only and a write-only 16-byte stream over 2 GiB (the roofs
// of reductions and of fills: core/roofline.h);
// matrix throughput from cuBLASLt at 8192^3 on random data (fp16, bf16, and
// fp32 through tf32 tensor cores).
#include <string.h>

#include "baseline.h"
#include "check.h"
#include "device.h"
#include "timer.h"

__global__ void copy16(const uint4 *__restrict__ src, uint4 *__restrict__ dst, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = src[i];
}

// Reads every 16 bytes once; the sum is written only when it hits a value
// that never occurs, which keeps the loads alive.
__global__ void read16(const uint4 *__restrict__ src, size_t n, unsigned *sink)
{
    unsigned acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = __ldcs(src + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9E3779B9u)
        *sink = acc;
}

__global__ void write16(uint4 *__restrict__ dst, size_t n, unsigned v)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        __stcs(dst + i, make_uint4(v, v, v, (unsigned)i));
}

enum { M_COPY, M_MEMCPY, M_READ, M_WRITE };

struct copy_ctx {
    void *src, *dst;
    size_t bytes;
    int mode, sms;
};

static int copy_cb(void *p, int set, kgate_stream st, kg_err *err)
{
    (void)set;
    copy_ctx *c = (copy_ctx *)p;
    cudaStream_t s = (cudaStream_t)st;
    if (c->mode == M_MEMCPY) {
        KG_CUDA(cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, s));
    } else {
        if (c->mode == M_COPY)
            copy16<<<c->sms * 8, 512, 0, s>>>((const uint4 *)c->src, (uint4 *)c->dst, c->bytes / 16);
        else if (c->mode == M_READ)
            read16<<<c->sms * 8, 512, 0, s>>>((const uint4 *)c->src, c->bytes / 16, (unsigned *)c->dst);
        else
            write16<<<c->sms * 8, 512, 0, s>>>((uint4 *)c->dst, c->bytes / 16, 0x5A5A5A5Au);
        KG_CUDA(cudaGetLastError());
    }
    return 0;
out:
    return err->code;
}

extern "C" int kg_peaks_measure(kg_peaks *pk, kg_roofs *roofs, kg_err *err)
{
    copy_ctx c = {NULL, NULL, (size_t)2 << 30, M_COPY, 0};
    cudaStream_t s = NULL;
    int dev;
    memset(pk, 0, sizeof *pk);
    memset(roofs, 0, sizeof *roofs);
    KG_CUDA(cudaGetDevice(&dev));
    KG_CUDA(cudaDeviceGetAttribute(&c.sms, cudaDevAttrMultiProcessorCount, dev));
    KG_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    KG_CUDA(cudaMalloc(&c.src, c.bytes));
    KG_CUDA(cudaMalloc(&c.dst, c.bytes));
    KG_CUDA(cudaMemsetAsync(c.src, 0x5A, c.bytes, s));
    pk->copy_bytes = 2.0 * (double)c.bytes;
    for (int m = M_COPY; m <= M_WRITE; m++) {
        kg_timer_cfg tc;
        kg_timing tm;
        kg_timer_defaults(&tc);
        tc.flush = KG_FLUSH_NONE; // 2-4 GiB of traffic dwarfs the L2
        tc.stop.max_wall_s = 3.0;
        c.mode = m;
        if (kg_time(&tc, copy_cb, &c, (kgate_stream)s, &tm, err))
            goto out;
        double moved = m == M_COPY || m == M_MEMCPY ? pk->copy_bytes : (double)c.bytes;
        double bw = moved / tm.st.median;
        if (m == M_MEMCPY)
            pk->memcpy_bw = bw;
        else if (m == M_COPY)
            pk->copy_kernel_bw = bw;
        else if (m == M_READ)
            pk->read_bw = bw;
        else
            pk->write_bw = bw;
    }
    cudaFree(c.src);
    cudaFree(c.dst);
    c.src = c.dst = NULL;
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
    for (int i = 0; i < KG_DTYPE_COUNT; i++)
        roofs->mma[i] = pk->mma[i];
out:
    if (c.src)
        cudaFree(c.src);
    if (c.dst)
        cudaFree(c.dst);
    if (s)
        cudaStreamDestroy(s);
    return err->code;
}
