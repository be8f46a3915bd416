/* The Triton kernels of triton/kernels.py as a kgate candidate: wrappers
 * from kgate's ABI (DLPack tensors, a stream) to the launchers that Triton's
 * AOT compiler generated (triton/build.sh). */
#include <stdint.h>
#include <stdio.h>

#include <kgate/plugin.h>

#include "entries.h"

static int fail(const kgate_params *p, int code, const char *msg)
{
    if (p && p->error && p->error_size)
        snprintf(p->error, p->error_size, "%s", msg);
    return code;
}

static int ln_bf16(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                   kgate_stream s)
{
    if (ni != 3 || no != 1 || in[0].ndim != 2)
        return fail(p, 1, "triton layer_norm: expected x[R,C], weight, bias -> y");
    int rows = (int)in[0].shape[0], cols = (int)in[0].shape[1];
    if (cols % 16)
        return fail(p, 2, "triton layer_norm: compiled for COLS a multiple of 16");
    CUdeviceptr x = (CUdeviceptr)in[0].data, w = (CUdeviceptr)in[1].data,
                b = (CUdeviceptr)in[2].data, y = (CUdeviceptr)out[0].data;
    union {
        float f;
        int32_t bits;
    } eps = {(float)p->eps}; /* see kernels.py: eps travels as fp32 bits */
    CUresult rc;
    if (cols <= 1024)
        rc = TT_ln_bf16_1024((CUstream)s, x, w, b, y, rows, cols, eps.bits);
    else if (cols <= 4096)
        rc = TT_ln_bf16_4096((CUstream)s, x, w, b, y, rows, cols, eps.bits);
    else if (cols <= 8192)
        rc = TT_ln_bf16_8192((CUstream)s, x, w, b, y, rows, cols, eps.bits);
    else if (cols <= 16384)
        rc = TT_ln_bf16_16384((CUstream)s, x, w, b, y, rows, cols, eps.bits);
    else
        return fail(p, 2, "triton layer_norm: compiled for rows of at most 16384 columns");
    return rc == CUDA_SUCCESS ? 0 : fail(p, (int)rc, "cuLaunchKernel failed");
}

#define MATMUL(T)                                                                              \
    static int mm_##T(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p, \
                      kgate_stream s)                                                          \
    {                                                                                          \
        if (ni != 2 || no != 1)                                                                \
            return fail(p, 1, "triton matmul: expected A, B -> C");                           \
        int m = (int)in[0].shape[0], k = (int)in[0].shape[1], n = (int)in[1].shape[1];         \
        if (m % 16 || n % 16 || k % 16)                                                        \
            return fail(p, 2, "triton matmul: compiled for M, N, K multiples of 16");         \
        CUresult rc = TT_mm_##T((CUstream)s, (CUdeviceptr)in[0].data, (CUdeviceptr)in[1].data, \
                                (CUdeviceptr)out[0].data, m, n, k);                            \
        return rc == CUDA_SUCCESS ? 0 : fail(p, (int)rc, "cuLaunchKernel failed");            \
    }
MATMUL(fp16)
MATMUL(bf16)

static const kgate_kernel kernels[] = {
    {"triton_matmul_fp16", "matmul", "fp16", 2, 1, mm_fp16, "Triton tutorial GEMM, 128x256x64, GROUP_M 8"},
    {"triton_matmul_bf16", "matmul", "bf16", 2, 1, mm_bf16, "Triton tutorial GEMM, 128x256x64, GROUP_M 8"},
    {"triton_layer_norm_bf16", "layer_norm", "bf16", 3, 1, ln_bf16, "one program per row, row in one block"},
};
static const kgate_plugin plugin = {KGATE_ABI_VERSION, 3, kernels};
const kgate_plugin *kgate_plugin_v1(void) { return &plugin; }
