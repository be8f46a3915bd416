/* The TileLang kernels of tilelang/gen.py as a kgate candidate (ABI v2).
 *
 * tilelang/gen/ holds the CUDA that TileLang 0.1.15 generated for each kernel
 * and row length, and kernels.h, which says how to launch each one (TileLang's
 * own host side is TVM packed-function code that needs TVM's runtime, so kgate
 * cannot use it). This file is the launcher: it checks the DLPack tensors,
 * picks the kernel compiled for the row length (COLS is compiled in, ROWS is
 * a runtime argument), and launches it on kgate's stream with
 * cudaLaunchKernel: grid (ROWS), block (the kernel's threads), the dynamic
 * shared memory TileLang asked for, the arguments in TileLang's order. A row
 * length no kernel was compiled for gets a message, not a launch; `supports`
 * tells kgate the same in advance. docs/tilelang.md tells the whole story. */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include <kgate/plugin.h>

#include "kernels.h"

#define N_TL ((int)(sizeof tl_kernels / sizeof tl_kernels[0]))

enum { E_ARGS = 1, E_SHAPE = 2 };

static int fail(const kgate_params *p, int code, const char *fmt, ...)
{
    if (p && p->error && p->error_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->error, p->error_size, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* A contiguous 16-bit tensor of the given DLPack type code and rank on a
 * CUDA device. */
static int is_tensor(const DLTensor *t, int code, int rank)
{
    if (t->ndim != rank || t->dtype.code != code || t->dtype.bits != 16 || t->dtype.lanes != 1 ||
        t->device.device_type != kDLCUDA || t->data == NULL)
        return 0;
    if (t->strides) {
        int64_t want = 1;
        for (int d = rank - 1; d >= 0; d--) {
            if (t->shape[d] != 1 && t->strides[d] != want)
                return 0;
            want *= t->shape[d];
        }
    }
    return 1;
}

static void *dptr(const DLTensor *t) { return (char *)t->data + t->byte_offset; }

/* The kernel of (op, variant) compiled for rows of `cols` elements. */
static const tl_kernel_info *find(const char *op, const char *variant, int64_t cols)
{
    for (int i = 0; i < N_TL; i++)
        if (tl_kernels[i].cols == cols && strcmp(tl_kernels[i].op, op) == 0 &&
            strcmp(tl_kernels[i].variant, variant) == 0)
            return &tl_kernels[i];
    return NULL;
}

/* "1024, 4096, 8192": the row lengths (op, variant) is compiled for. */
static const char *cols_list(const char *op, const char *variant, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < N_TL && n < size; i++)
        if (strcmp(tl_kernels[i].op, op) == 0 && strcmp(tl_kernels[i].variant, variant) == 0)
            n += (size_t)snprintf(buf + n, size - n, "%s%d", n ? ", " : "", tl_kernels[i].cols);
    return buf;
}

/* One call: x[R,C] (and weight[C], bias[C] when the operator has them) ->
 * y[R,C], all of DLPack type `code`. */
static int run(const char *op, const char *variant, int code, int n_in, const DLTensor *in, int ni,
               DLTensor *out, int no, const kgate_params *p, kgate_stream s, float eps)
{
    static const char *const names[] = {"x", "weight", "bias"};
    const char *dt = code == kDLBfloat ? "bf16" : "fp16";
    if (ni != n_in || no != 1)
        return fail(p, E_ARGS, "tilelang %s: expected %d inputs and 1 output, got %d and %d", op,
                    n_in, ni, no);
    for (int i = 0; i < n_in; i++)
        if (!is_tensor(&in[i], code, i ? 1 : 2))
            return fail(p, E_ARGS, "tilelang %s: %s must be a contiguous %s tensor of rank %d on the GPU",
                        op, names[i], dt, i ? 1 : 2);
    if (!is_tensor(&out[0], code, 2))
        return fail(p, E_ARGS, "tilelang %s: y must be a contiguous %s tensor of rank 2 on the GPU",
                    op, dt);
    int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    for (int i = 1; i < n_in; i++)
        if (in[i].shape[0] != cols)
            return fail(p, E_SHAPE, "tilelang %s: %s has %lld elements, x has %lld columns", op,
                        names[i], (long long)in[i].shape[0], (long long)cols);
    if (out[0].shape[0] != rows || out[0].shape[1] != cols)
        return fail(p, E_SHAPE, "tilelang %s: y is not shaped like x", op);
    if (rows < 1 || rows > INT_MAX)
        return fail(p, E_SHAPE, "tilelang %s: %lld rows (want 1 to 2^31-1)", op, (long long)rows);
    const tl_kernel_info *k = find(op, variant, cols);
    if (!k) {
        char list[128];
        return fail(p, E_SHAPE, "tilelang %s: no kernel for rows of %lld columns (compiled for %s)",
                    op, (long long)cols, cols_list(op, variant, list, sizeof list));
    }
    /* roles in enum tl_arg order: x, weight, bias, y */
    void *ptr[4] = {dptr(&in[0]), n_in > 1 ? dptr(&in[1]) : NULL, n_in > 2 ? dptr(&in[2]) : NULL,
                    dptr(&out[0])};
    for (int i = 0; i < 4; i++)
        if ((uintptr_t)ptr[i] % 16)
            return fail(p, E_SHAPE, "tilelang %s: the kernels load 16 bytes at a time; a tensor is "
                        "not 16-byte aligned", op);
    int nrows = (int)rows;
    void *args[6];
    for (int i = 0; i < k->n_args; i++) {
        switch (k->args[i]) {
        case TL_X:
        case TL_W:
        case TL_B:
        case TL_Y:
            args[i] = &ptr[k->args[i]];
            break;
        case TL_ROWS:
            args[i] = &nrows;
            break;
        case TL_EPS:
            args[i] = &eps;
            break;
        }
    }
    cudaError_t rc;
    /* More than 48 KiB of dynamic shared memory (the naive softmax's cached
     * row) must be allowed first: once per kernel (kgate's worker drives one
     * device from one thread). */
    if (k->smem > 48 * 1024) {
        static unsigned char allowed[N_TL];
        if (!allowed[k - tl_kernels]) {
            rc = cudaFuncSetAttribute(k->fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      (int)k->smem);
            if (rc != cudaSuccess) {
                cudaGetLastError();
                return fail(p, (int)rc, "tilelang %s: %u bytes of shared memory refused: %s", op,
                            k->smem, cudaGetErrorString(rc));
            }
            allowed[k - tl_kernels] = 1;
        }
    }
    dim3 grid = {(unsigned)nrows, 1, 1}, block = {k->threads, 1, 1};
    rc = cudaLaunchKernel(k->fn, grid, block, args, k->smem, (cudaStream_t)s);
    if (rc != cudaSuccess) {
        cudaGetLastError();
        return fail(p, (int)rc, "tilelang %s (%s, %d columns): launch failed: %s", op, variant,
                    k->cols, cudaGetErrorString(rc));
    }
    return 0;
}

/* ------------------------------------------------------ launch functions */

static int ln_naive(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                    kgate_stream s)
{
    return run("layer_norm", "naive", kDLBfloat, 3, in, ni, out, no, p, s,
               (float)kgate_scalar_get(p, "eps", 1e-5));
}

static int ln_fast(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                   kgate_stream s)
{
    return run("layer_norm", "fast", kDLBfloat, 3, in, ni, out, no, p, s,
               (float)kgate_scalar_get(p, "eps", 1e-5));
}

static int rms_naive(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                     kgate_stream s)
{
    return run("rms_norm", "naive", kDLFloat, 2, in, ni, out, no, p, s,
               (float)kgate_scalar_get(p, "eps", 1e-6));
}

static int rms_fast(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                    kgate_stream s)
{
    return run("rms_norm", "fast", kDLFloat, 2, in, ni, out, no, p, s,
               (float)kgate_scalar_get(p, "eps", 1e-6));
}

static int sm_naive(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                    kgate_stream s)
{
    return run("softmax", "naive", kDLFloat, 1, in, ni, out, no, p, s, 0.f);
}

static int sm_fast(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                   kgate_stream s)
{
    return run("softmax", "fast", kDLFloat, 1, in, ni, out, no, p, s, 0.f);
}

/* --------------------------------------------- the shapes they handle */

/* (ROWS, COLS) with a kernel of both variants compiled for COLS: kgate then
 * skips, and reports, the extra shapes (unaligned, tiny, unnamed) and any
 * timed shape outside these. */
static int supported(const char *op, const int64_t *e, int n)
{
    return n == 2 && e[0] >= 1 && e[0] <= INT_MAX && find(op, "naive", e[1]) && find(op, "fast", e[1]);
}

static int ln_supported(const int64_t *e, int n) { return supported("layer_norm", e, n); }
static int rms_supported(const int64_t *e, int n) { return supported("rms_norm", e, n); }
static int sm_supported(const int64_t *e, int n) { return supported("softmax", e, n); }

/* -------------------------------------------------------------- table */

static const kgate_kernel kernels[] = {
    {"tilelang_layer_norm_naive_bf16", "layer_norm", "bf16", NULL, 3, 1, ln_naive,
     "TileLang as first written: x.float() row copy by scalar loads (RC0b), mean and variance "
     "by T.serial into one-element fragments; on sm_90 the fragments spill (the paper's GH200 "
     "finding) (RC0a, RC3)",
     "eps", ln_supported},
    {"tilelang_layer_norm_bf16", "layer_norm", "bf16", NULL, 3, 1, ln_fast,
     "TileLang fixed: the row in a bf16 fragment (16-byte loads), T.reduce_sum allreduce for mean "
     "and variance, bf16 out",
     "eps", ln_supported},
    {"tilelang_rms_norm_naive_fp16", "rms_norm", "fp16", NULL, 2, 1, rms_naive,
     "TileLang as first written: x.float() row copy by scalar loads (RC0b), sum of squares by "
     "T.serial into a one-element fragment; on sm_90 the fragments spill (RC0a, RC3)",
     "eps", rms_supported},
    {"tilelang_rms_norm_fp16", "rms_norm", "fp16", NULL, 2, 1, rms_fast,
     "TileLang fixed: the row in an fp16 fragment (16-byte loads), T.reduce_sum allreduce, fp16 out",
     "eps", rms_supported},
    {"tilelang_softmax_naive_fp16", "softmax", "fp16", NULL, 1, 1, sm_naive,
     "TileLang in-tree style: the whole row cached as fp32 in shared memory, max and sum by "
     "T.serial (RC0a)",
     NULL, sm_supported},
    {"tilelang_softmax_fp16", "softmax", "fp16", NULL, 1, 1, sm_fast,
     "TileLang fixed: the row in fragments (16-byte loads), T.reduce_max and T.reduce_sum "
     "allreduces",
     NULL, sm_supported},
};

static const kgate_plugin plugin = KGATE_PLUGIN(kernels);

__attribute__((visibility("default"))) const kgate_plugin *kgate_plugin_v2(void)
{
    return &plugin;
}
