/* The Triton kernels of triton/kernels.py as a kgate candidate (ABI v2):
 * wrappers from kgate's launch functions (DLPack tensors, named scalars, a
 * stream) to the launchers that Triton's AOT compiler generated
 * (triton/build.sh writes them, with entries.h mapping their hashed names
 * to TT_<name>). Each wrapper checks its tensors, picks the specialization
 * compiled for the column count, and returns a message instead of
 * launching when none fits. docs/triton.md tells the whole story. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include <kgate/plugin.h>

#include "entries.h"

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

enum { E_ARGS = 1, E_SHAPE = 2, E_DEVICE = 3 };

/* The compute capability the cubins are for (build.sh: TRITON_AOT_ARCH). */
#ifndef KG_TRITON_ARCH
#define KG_TRITON_ARCH 90
#endif

/* On a GPU the cubins are not for, the generated loader would print an error
 * and exit() the process: look first (once: a worker process uses one
 * device). */
static int device_ok(const kgate_params *p)
{
    static int state; /* 0 not looked at, 1 the right GPU, 2 not */
    static int major, minor;
    if (state == 0) {
        CUdevice dev;
        CUresult rc = cuCtxGetDevice(&dev);
        if (rc == CUDA_SUCCESS)
            rc = cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
        if (rc == CUDA_SUCCESS)
            rc = cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
        if (rc != CUDA_SUCCESS) {
            const char *s = NULL;
            cuGetErrorString(rc, &s);
            return fail(p, E_DEVICE, "triton: no current CUDA device to launch on: %s",
                        s ? s : "unknown error");
        }
        state = major * 10 + minor == KG_TRITON_ARCH ? 1 : 2;
    }
    if (state == 2)
        return fail(p, E_DEVICE,
                    "triton: the kernels are compiled for sm_%d%s; this GPU is sm_%d%d (rebuild "
                    "with TRITON_AOT_ARCH=%d%d)",
                    KG_TRITON_ARCH, KG_TRITON_ARCH >= 90 ? "a" : "", major, minor, major, minor);
    return 0;
}

static int launched(const kgate_params *p, CUresult rc)
{
    if (rc == CUDA_SUCCESS)
        return 0;
    const char *s = NULL;
    cuGetErrorString(rc, &s);
    return fail(p, (int)rc, "triton: cuLaunchKernel failed: %s", s ? s : "unknown error");
}

/* A tensor of the given DLPack type and rank on a CUDA device. */
static int is_tensor(const DLTensor *t, int code, int bits, int ndim)
{
    return t->ndim == ndim && t->dtype.code == code && t->dtype.bits == bits && t->dtype.lanes == 1 &&
           (t->device.device_type == kDLCUDA || t->device.device_type == kDLCUDAManaged) &&
           t->data != NULL;
}

static CUdeviceptr dptr(const DLTensor *t) { return (CUdeviceptr)(uintptr_t)t->data + t->byte_offset; }

/* Specializations compiled with pointers assumed 16-byte aligned. */
static int aligned16(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUdeviceptr d)
{
    return ((a | b | c | d) & 15) == 0;
}

/* x[ROWS,COLS] as 32-bit extents, both at least 1. */
static int rows_cols(const kgate_params *p, const char *op, const DLTensor *x, int32_t *rows,
                     int32_t *cols)
{
    if (x->shape[0] < 1 || x->shape[1] < 1 || x->shape[0] > INT32_MAX || x->shape[1] > INT32_MAX)
        return fail(p, E_SHAPE, "triton %s: extents %lldx%lld (want 1 to 2^31-1)", op,
                    (long long)x->shape[0], (long long)x->shape[1]);
    *rows = (int32_t)x->shape[0];
    *cols = (int32_t)x->shape[1];
    return 0;
}

/* eps travels as the bits of an fp32 (kernels.py explains why). */
static int32_t fp32_bits(double v)
{
    union {
        float f;
        int32_t bits;
    } u = {(float)v};
    return u.bits;
}

/* ------------------------------------------------ one row in one block */

/* The column counts the row-in-one-block kernels are compiled for: the
 * smallest BLOCK_N >= COLS is used. */
static const int32_t row_blocks[] = {1024, 4096, 8192, 16384};
#define N_ROW_BLOCKS ((int)(sizeof row_blocks / sizeof row_blocks[0]))

static int row_block(const kgate_params *p, const char *op, int32_t cols, int aligned)
{
    for (int i = 0; aligned && cols % 16 == 0 && i < N_ROW_BLOCKS; i++)
        if (cols <= row_blocks[i])
            return i;
    fail(p, E_SHAPE,
         "triton %s: compiled for rows of at most 16384 columns, a multiple of 16, with 16-byte "
         "aligned tensors (got %d columns%s)",
         op, (int)cols, aligned ? "" : ", unaligned");
    return -1;
}

typedef CUresult (*ln_fn)(CUstream, CUdeviceptr, CUdeviceptr, CUdeviceptr, CUdeviceptr, int32_t,
                          int32_t, int32_t);
static const ln_fn ln_bf16_fns[N_ROW_BLOCKS] = {TT_ln_bf16_1024, TT_ln_bf16_4096, TT_ln_bf16_8192,
                                                TT_ln_bf16_16384};

static int ln_bf16(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                   kgate_stream s)
{
    int32_t rows = 0, cols = 0;
    if (ni != 3 || no != 1 || !is_tensor(&in[0], kDLBfloat, 16, 2) ||
        !is_tensor(&in[1], kDLBfloat, 16, 1) || !is_tensor(&in[2], kDLBfloat, 16, 1) ||
        !is_tensor(&out[0], kDLBfloat, 16, 2))
        return fail(p, E_ARGS, "triton layer_norm: expected bf16 x[R,C], weight[C], bias[C] -> y[R,C]");
    if (rows_cols(p, "layer_norm", &in[0], &rows, &cols))
        return E_SHAPE;
    if (in[1].shape[0] != cols || in[2].shape[0] != cols || out[0].shape[0] != rows ||
        out[0].shape[1] != cols)
        return fail(p, E_SHAPE, "triton layer_norm: weight, bias or y does not match x");
    CUdeviceptr x = dptr(&in[0]), w = dptr(&in[1]), b = dptr(&in[2]), y = dptr(&out[0]);
    int i = row_block(p, "layer_norm", cols, aligned16(x, w, b, y));
    if (i < 0)
        return E_SHAPE;
    if (device_ok(p))
        return E_DEVICE;
    int32_t eps = fp32_bits(kgate_scalar_get(p, "eps", 1e-5));
    return launched(p, ln_bf16_fns[i]((CUstream)s, x, w, b, y, rows, cols, eps));
}

typedef CUresult (*rms_fn)(CUstream, CUdeviceptr, CUdeviceptr, CUdeviceptr, int32_t, int32_t,
                           int32_t);
static const rms_fn rms_fp16_fns[N_ROW_BLOCKS] = {TT_rms_fp16_1024, TT_rms_fp16_4096,
                                                  TT_rms_fp16_8192, TT_rms_fp16_16384};
static const rms_fn rms_bf16_fns[N_ROW_BLOCKS] = {TT_rms_bf16_1024, TT_rms_bf16_4096,
                                                  TT_rms_bf16_8192, TT_rms_bf16_16384};

static int rms_norm(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                    kgate_stream s, int code, const rms_fn *fns)
{
    int32_t rows = 0, cols = 0;
    if (ni != 2 || no != 1 || !is_tensor(&in[0], code, 16, 2) || !is_tensor(&in[1], code, 16, 1) ||
        !is_tensor(&out[0], code, 16, 2))
        return fail(p, E_ARGS, "triton rms_norm: expected %s x[R,C], weight[C] -> y[R,C]",
                    code == kDLBfloat ? "bf16" : "fp16");
    if (rows_cols(p, "rms_norm", &in[0], &rows, &cols))
        return E_SHAPE;
    if (in[1].shape[0] != cols || out[0].shape[0] != rows || out[0].shape[1] != cols)
        return fail(p, E_SHAPE, "triton rms_norm: weight or y does not match x");
    CUdeviceptr x = dptr(&in[0]), w = dptr(&in[1]), y = dptr(&out[0]);
    int i = row_block(p, "rms_norm", cols, aligned16(x, w, y, 0));
    if (i < 0)
        return E_SHAPE;
    if (device_ok(p))
        return E_DEVICE;
    int32_t eps = fp32_bits(kgate_scalar_get(p, "eps", 1e-6));
    return launched(p, fns[i]((CUstream)s, x, w, y, rows, cols, eps));
}

static int rms_fp16(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                    kgate_stream s)
{
    return rms_norm(in, ni, out, no, p, s, kDLFloat, rms_fp16_fns);
}

static int rms_bf16(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                    kgate_stream s)
{
    return rms_norm(in, ni, out, no, p, s, kDLBfloat, rms_bf16_fns);
}

/* ------------------------------------------------------- x[R,C] -> ... */

typedef CUresult (*xy_fn)(CUstream, CUdeviceptr, CUdeviceptr, int32_t, int32_t);

/* Checks x[R,C] of (code, bits) -> out[0] of (ocode, obits) with the rank
 * the operator gives it (2: [R,C], 1: [R]). */
static int xy_args(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                   const char *op, const char *expect, int code, int bits, int ocode, int obits,
                   int orank, int32_t *rows, int32_t *cols)
{
    if (ni != 1 || no != 1 || !is_tensor(&in[0], code, bits, 2) ||
        !is_tensor(&out[0], ocode, obits, orank))
        return fail(p, E_ARGS, "triton %s: expected %s", op, expect);
    if (rows_cols(p, op, &in[0], rows, cols))
        return E_SHAPE;
    if (out[0].shape[0] != *rows || (orank == 2 && out[0].shape[1] != *cols))
        return fail(p, E_SHAPE, "triton %s: the output does not match x", op);
    return device_ok(p);
}

/* log_softmax: the whole row in one block up to 8192 columns, else (and for
 * unaligned or odd rows) the online two-pass kernel. */
static const int32_t lsm_blocks[] = {1024, 2048, 4096, 8192};
static const xy_fn lsm_fp16_fns[] = {TT_lsm_fp16_1024, TT_lsm_fp16_2048, TT_lsm_fp16_4096,
                                     TT_lsm_fp16_8192};

static int lsm_fp16(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                    kgate_stream s)
{
    int32_t rows = 0, cols = 0;
    int rc = xy_args(in, ni, out, no, p, "log_softmax", "fp16 x[R,C] -> y[R,C]", kDLFloat, 16, kDLFloat, 16, 2, &rows, &cols);
    if (rc)
        return rc;
    CUdeviceptr x = dptr(&in[0]), y = dptr(&out[0]);
    xy_fn fn = TT_lsm_fp16_online_any;
    if (aligned16(x, y, 0, 0) && cols % 16 == 0) {
        fn = TT_lsm_fp16_online;
        for (int i = 0; i < (int)(sizeof lsm_blocks / sizeof lsm_blocks[0]); i++)
            if (cols <= lsm_blocks[i]) {
                fn = lsm_fp16_fns[i];
                break;
            }
    }
    return launched(p, fn((CUstream)s, x, y, rows, cols));
}

static int mean_fp32(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                     kgate_stream s)
{
    int32_t rows = 0, cols = 0;
    int rc = xy_args(in, ni, out, no, p, "mean_reduction", "fp32 x[R,C] -> y[R]", kDLFloat, 32, kDLFloat, 32, 1, &rows, &cols);
    if (rc)
        return rc;
    CUdeviceptr x = dptr(&in[0]), y = dptr(&out[0]);
    xy_fn fn = aligned16(x, y, 0, 0) && cols % 16 == 0 ? TT_mean_fp32 : TT_mean_fp32_any;
    return launched(p, fn((CUstream)s, x, y, rows, cols));
}

static int argmax_fp16(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                       kgate_stream s)
{
    int32_t rows = 0, cols = 0;
    int rc = xy_args(in, ni, out, no, p, "argmax", "fp16 x[R,C] -> int64 i[R]", kDLFloat, 16, kDLInt, 64, 1, &rows, &cols);
    if (rc)
        return rc;
    CUdeviceptr x = dptr(&in[0]), i = dptr(&out[0]);
    xy_fn fn = aligned16(x, i, 0, 0) && cols % 16 == 0 ? TT_argmax_fp16 : TT_argmax_fp16_any;
    return launched(p, fn((CUstream)s, x, i, rows, cols));
}

/* The paper's argmax: 128 rows a program, a runtime element stride (1 here). */
static int argmax_tiles_fp16(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                             kgate_stream s)
{
    int32_t rows = 0, cols = 0;
    int rc = xy_args(in, ni, out, no, p, "argmax", "fp16 x[R,C] -> int64 i[R]", kDLFloat, 16, kDLInt, 64, 1, &rows, &cols);
    if (rc)
        return rc;
    return launched(p, TT_argmax_tiles_fp16((CUstream)s, dptr(&in[0]), dptr(&out[0]), rows, cols, 1));
}

/* ------------------------------------------------------------- matmul */

typedef CUresult (*mm_fn)(CUstream, CUdeviceptr, CUdeviceptr, CUdeviceptr, int32_t, int32_t,
                          int32_t);

static int matmul(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                  kgate_stream s, int code, mm_fn fn)
{
    if (ni != 2 || no != 1 || !is_tensor(&in[0], code, 16, 2) || !is_tensor(&in[1], code, 16, 2) ||
        !is_tensor(&out[0], code, 16, 2))
        return fail(p, E_ARGS, "triton matmul: expected %s A[M,K], B[K,N] -> C[M,N]",
                    code == kDLBfloat ? "bf16" : "fp16");
    int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
    if (in[1].shape[0] != k || out[0].shape[0] != m || out[0].shape[1] != n)
        return fail(p, E_SHAPE, "triton matmul: A, B and C do not match");
    CUdeviceptr a = dptr(&in[0]), b = dptr(&in[1]), c = dptr(&out[0]);
    if (m < 16 || n < 16 || k < 16 || m % 16 || n % 16 || k % 16 || m > INT32_MAX / 2 ||
        n > INT32_MAX / 2 || k > INT32_MAX / 2 || !aligned16(a, b, c, 0))
        return fail(p, E_SHAPE,
                    "triton matmul: compiled for M, N, K multiples of 16 and 16-byte aligned "
                    "tensors (got %lldx%lldx%lld)",
                    (long long)m, (long long)n, (long long)k);
    if (device_ok(p))
        return E_DEVICE;
    return launched(p, fn((CUstream)s, a, b, c, (int32_t)m, (int32_t)n, (int32_t)k));
}

static int mm_fp16(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                   kgate_stream s)
{
    return matmul(in, ni, out, no, p, s, kDLFloat, TT_mm_fp16);
}

static int mm_bf16(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                   kgate_stream s)
{
    return matmul(in, ni, out, no, p, s, kDLBfloat, TT_mm_bf16);
}

/* --------------------------------------------------- linear_activation */

typedef CUresult (*la_fn)(CUstream, CUdeviceptr, CUdeviceptr, CUdeviceptr, CUdeviceptr, int32_t, int32_t,
                          int32_t);

static int linact(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p, kgate_stream s,
                  int code, la_fn fn)
{
    if (ni != 3 || no != 1 || !is_tensor(&in[0], code, 16, 2) || !is_tensor(&in[1], code, 16, 2) ||
        !is_tensor(&in[2], code, 16, 2) || !is_tensor(&out[0], code, 16, 2))
        return fail(p, E_ARGS, "triton linear_activation: expected %s x[M,K], W1[N,K], W3[N,K] -> out[M,N]",
                    code == kDLBfloat ? "bf16" : "fp16");
    int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[0];
    if (in[1].shape[1] != k || in[2].shape[0] != n || in[2].shape[1] != k || out[0].shape[0] != m ||
        out[0].shape[1] != n)
        return fail(p, E_SHAPE, "triton linear_activation: x, W1, W3 and out do not match");
    CUdeviceptr x = dptr(&in[0]), w1 = dptr(&in[1]), w3 = dptr(&in[2]), y = dptr(&out[0]);
    if (m < 16 || n < 16 || k < 16 || m % 16 || n % 16 || k % 16 || m > INT32_MAX / 2 || n > INT32_MAX / 2 ||
        k > INT32_MAX / 2 || !aligned16(x, w1, w3, y))
        return fail(p, E_SHAPE,
                    "triton linear_activation: compiled for M, N, K multiples of 16 and 16-byte aligned "
                    "tensors (got %lldx%lldx%lld)",
                    (long long)m, (long long)n, (long long)k);
    if (device_ok(p))
        return E_DEVICE;
    return launched(p, fn((CUstream)s, x, w1, w3, y, (int32_t)m, (int32_t)n, (int32_t)k));
}

static int la_fp16(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p, kgate_stream s)
{
    return linact(in, ni, out, no, p, s, kDLFloat, TT_linact_fp16);
}

static int la_bf16(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p, kgate_stream s)
{
    return linact(in, ni, out, no, p, s, kDLBfloat, TT_linact_bf16);
}

/* -------------------------------------------------------------- conv2d */

typedef CUresult (*cv_fn)(CUstream, CUdeviceptr, CUdeviceptr, CUdeviceptr, int32_t, int32_t, int32_t, int32_t,
                          int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t);

/* The output extent of a window walk, or -1 when there is none. */
static int64_t conv_out(int64_t in, int64_t pad, int64_t f, int64_t u)
{
    return u < 1 || in + 2 * pad < f ? -1 : (in + 2 * pad - f) / u + 1;
}

static int conv2d(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p, kgate_stream s,
                  int code, cv_fn fn)
{
    if (ni != 2 || no != 1 || !is_tensor(&in[0], code, 16, 4) || !is_tensor(&in[1], code, 16, 4) ||
        !is_tensor(&out[0], code, 16, 4))
        return fail(p, E_ARGS, "triton conv2d: expected %s x[N,C,H,W], w[K,C,R,S] -> y[N,K,P,Q]",
                    code == kDLBfloat ? "bf16" : "fp16");
    const int64_t *xs = in[0].shape, *ws = in[1].shape, *ys = out[0].shape;
    double u = kgate_scalar_get(p, "stride", 1), pad = kgate_scalar_get(p, "pad", 0),
           groups = kgate_scalar_get(p, "groups", 1);
    if (groups != 1)
        return fail(p, E_SHAPE, "triton conv2d: groups 1 only (got %g)", groups);
    if (!(u >= 1 && u <= 65536 && pad >= 0 && pad <= 65536))
        return fail(p, E_ARGS, "triton conv2d: stride %g, pad %g", u, pad);
    int64_t pp = conv_out(xs[2], (int64_t)pad, ws[2], (int64_t)u), qq = conv_out(xs[3], (int64_t)pad, ws[3], (int64_t)u);
    if (ws[1] != xs[1] || ys[0] != xs[0] || ys[1] != ws[0] || ys[2] != pp || ys[3] != qq)
        return fail(p, E_SHAPE, "triton conv2d: x, w and y do not match stride %g, pad %g", u, pad);
    for (int i = 0; i < 4; i++)
        if (xs[i] > INT32_MAX / 4 || ws[i] > INT32_MAX / 4)
            return fail(p, E_SHAPE, "triton conv2d: an extent past 2^29");
    if ((double)ys[0] * (double)pp * (double)qq > INT32_MAX / 2)
        return fail(p, E_SHAPE, "triton conv2d: N*P*Q past 2^30");
    if (device_ok(p))
        return E_DEVICE;
    return launched(p, fn((CUstream)s, dptr(&in[0]), dptr(&in[1]), dptr(&out[0]), (int32_t)xs[0], (int32_t)xs[1],
                          (int32_t)xs[2], (int32_t)xs[3], (int32_t)ws[0], (int32_t)ws[2], (int32_t)ws[3],
                          (int32_t)u, (int32_t)pad, (int32_t)pp, (int32_t)qq));
}

static int cv_fp16(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p, kgate_stream s)
{
    return conv2d(in, ni, out, no, p, s, kDLFloat, TT_conv_fp16);
}

static int cv_bf16(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p, kgate_stream s)
{
    return conv2d(in, ni, out, no, p, s, kDLBfloat, TT_conv_bf16);
}

/* ------------------------------------------- the shapes they handle */

/* The row-in-one-block kernels (extents ROWS, COLS): COLS a multiple of 16,
 * at most 16384. Declared so that kgate skips them, and says so, at the
 * extra shapes they were not compiled for. */
static int rows_supported(const int64_t *e, int n)
{
    return n == 2 && e[1] % 16 == 0 && e[1] <= 16384;
}

/* The GEMM (extents M, N, K): multiples of 16. */
static int mm_supported(const int64_t *e, int n)
{
    return n == 3 && e[0] % 16 == 0 && e[1] % 16 == 0 && e[2] % 16 == 0 && e[0] <= INT32_MAX / 2 &&
           e[1] <= INT32_MAX / 2 && e[2] <= INT32_MAX / 2;
}

/* conv2d (extents N C H W K R S STRIDE PAD GROUPS): groups 1, N*P*Q within
 * 32-bit program ids. */
static int conv_supported(const int64_t *e, int n)
{
    if (n != 10 || e[9] != 1)
        return 0;
    int64_t pp = conv_out(e[2], e[8], e[5], e[7]), qq = conv_out(e[3], e[8], e[6], e[7]);
    return pp > 0 && qq > 0 && (double)e[0] * (double)pp * (double)qq <= INT32_MAX / 2;
}

/* ------------------------------------------------ the tuned GEMM (tune) */

/* One compiled configuration of matmul_kernel (triton/build.sh). */
struct mm_cfg {
    int bm, bn, bk, gm, st, w;
    mm_fn fn;
};
#include "tune_mm.inc"

static const int64_t k_bm[] = {64, 128, 256}, k_bn[] = {64, 128, 256}, k_bk[] = {32, 64}, k_gm[] = {1, 8},
                     k_st[] = {3, 4}, k_w[] = {4, 8};
static const kgate_knob mm_knobs[] = {{"block_m", 3, k_bm},    {"block_n", 3, k_bn},   {"block_k", 2, k_bk},
                                      {"group_size_m", 2, k_gm}, {"num_stages", 2, k_st}, {"num_warps", 2, k_w}};

/* The compiled configuration for knob values c, or NULL (its tiles do not
 * fit in shared memory: not compiled). */
static const struct mm_cfg *mm_find(const int64_t *c)
{
    for (size_t i = 0; i < sizeof mm_wide / sizeof mm_wide[0]; i++) {
        const struct mm_cfg *e = &mm_wide[i];
        if (e->bm == c[0] && e->bn == c[1] && e->bk == c[2] && e->gm == c[3] && e->st == c[4] && e->w == c[5])
            return e;
    }
    return NULL;
}


static int mm_tuned(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                    const int64_t *config, kgate_stream s)
{
    const struct mm_cfg *e = mm_find(config);
    if (!e)
        return fail(p, E_ARGS, "triton matmul: configuration not compiled (its tiles exceed shared memory)");
    return matmul(in, ni, out, no, p, s, kDLFloat, e->fn);
}

static int mm_tuned_valid(const int64_t *config, const int64_t *extents, int n)
{
    return mm_find(config) != NULL && mm_supported(extents, n);
}

/* The Triton tutorial's eight autotune configurations, by index. */
static const int64_t k_tut[] = {0, 1, 2, 3, 4, 5, 6, 7};
static const kgate_knob tut_knobs[] = {{"tutorial_config", 8, k_tut}};

static int mm_tut(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p, const int64_t *config,
                  kgate_stream s)
{
    return matmul(in, ni, out, no, p, s, kDLFloat, mm_tutorial[config[0]].fn);
}

static int mm_tut_valid(const int64_t *config, const int64_t *extents, int n)
{
    (void)config;
    return mm_supported(extents, n);
}

static int mm_tut_default(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p, kgate_stream s)
{
    return matmul(in, ni, out, no, p, s, kDLFloat, mm_tutorial[0].fn);
}

static const kgate_tunable tunables[] = {
    {"triton_matmul_fp16", 6, mm_knobs, mm_tuned, mm_tuned_valid},
    {"triton_matmul_tutorial_fp16", 1, tut_knobs, mm_tut, mm_tut_valid},
};
static const kgate_tunables tunable_table = {1, 2, tunables};

__attribute__((visibility("default"))) const kgate_tunables *kgate_tunables_v1(void)
{
    return &tunable_table;
}

/* -------------------------------------------------------------- table */

static const kgate_kernel kernels[] = {
    {"triton_matmul_fp16", "matmul", "fp16", NULL, 2, 1, mm_fp16,
     "Triton tutorial GEMM (wgmma), 128x256x64 tiles, 3 stages, GROUP_M 8", NULL, mm_supported},
    {"triton_matmul_bf16", "matmul", "bf16", NULL, 2, 1, mm_bf16,
     "Triton tutorial GEMM (wgmma), 128x256x64 tiles, 3 stages, GROUP_M 8", NULL, mm_supported},
    {"triton_matmul_tutorial_fp16", "matmul", "fp16", NULL, 2, 1, mm_tut_default,
     "Triton tutorial GEMM, its first autotune config; kgate tune searches the tutorial's eight",
     NULL, mm_supported},
    {"triton_linear_activation_fp16", "linear_activation", "fp16", NULL, 3, 1, la_fp16,
     "the tutorial GEMM with two accumulators sharing the x tile, silu(a) * b before the store, 128x128x64 "
     "tiles, 3 stages",
     NULL, mm_supported},
    {"triton_linear_activation_bf16", "linear_activation", "bf16", NULL, 3, 1, la_bf16,
     "the tutorial GEMM with two accumulators sharing the x tile, silu(a) * b before the store, 128x128x64 "
     "tiles, 3 stages",
     NULL, mm_supported},
    {"triton_conv2d_fp16", "conv2d", "fp16", NULL, 2, 1, cv_fp16,
     "direct convolution as TritonBench's: NCHW in place, 64 pixels x 64 channels a program, taps x "
     "32-channel slices through tl.dot; groups 1",
     "stride,pad,groups", conv_supported},
    {"triton_conv2d_bf16", "conv2d", "bf16", NULL, 2, 1, cv_bf16,
     "direct convolution as TritonBench's: NCHW in place, 64 pixels x 64 channels a program, taps x "
     "32-channel slices through tl.dot; groups 1",
     "stride,pad,groups", conv_supported},
    {"triton_layer_norm_bf16", "layer_norm", "bf16", NULL, 3, 1, ln_bf16,
     "one program per row, the row in one block, fp32 two-pass statistics", "eps", rows_supported},
    {"triton_rms_norm_fp16", "rms_norm", "fp16", NULL, 2, 1, rms_fp16,
     "one program per row, the row in one block, x * rsqrt(mean(x^2) + eps) * w", "eps",
     rows_supported},
    {"triton_rms_norm_bf16", "rms_norm", "bf16", NULL, 2, 1, rms_bf16,
     "one program per row, the row in one block, x * rsqrt(mean(x^2) + eps) * w", "eps",
     rows_supported},
    {"triton_log_softmax_fp16", "log_softmax", "fp16", NULL, 1, 1, lsm_fp16,
     "one program per row: the row in one block up to 8192 columns, else online two-pass", NULL, NULL},
    {"triton_mean_reduction_fp32", "mean_reduction", "fp32", NULL, 1, 1, mean_fp32,
     "one program per row, fp32 accumulator over 4096-wide chunks, tl.sum / COLS", NULL, NULL},
    {"triton_argmax_fp16", "argmax", "fp16", NULL, 1, 1, argmax_tiles_fp16,
     "the paper's argmax: 128 rows a program, 128-wide chunks, a runtime element stride: 64 programs "
     "for 132 SMs (RC2a, RC1)",
     NULL, NULL},
    {"triton_argmax_rows_fp16", "argmax", "fp16", NULL, 1, 1, argmax_fp16,
     "one program per row, tl.max(return_indices=True) over 4096-wide chunks", NULL, NULL},
};

static const kgate_plugin plugin = KGATE_PLUGIN(kernels);

__attribute__((visibility("default"))) const kgate_plugin *kgate_plugin_v2(void)
{
    return &plugin;
}
