/* cuBLASLt baselines.
 * matmul: row-major C = A.B computed as the column-major C^T = B^T . A^T.
 *         The top 8 heuristic algorithms (64 MiB workspace) are each timed
 *         through the timing engine and the fastest kept.
 * cublasLtMatrixTransform (C = alpha op(A) + beta op(B), fp32 scale type):
 *   transpose: row-major x [R, C] is the column-major C x R matrix (ld C);
 *              op(A) = A^T with alpha 1, beta 0 and no B gives the
 *              column-major R x C matrix (ld R), i.e. row-major y [C, R].
 *   geam:      z = x + y (alpha = beta = 1) over the N-vector viewed as a
 *              column-major m x N/m matrix, m the largest divisor of N up to
 *              16384 (1 x N when N has none).
 *   Both run once at setup and wait, so a refusal is reported there. */
#include <cublasLt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../catalog/op.h"
#include "baseline.h"
#include "baseline_cublaslt_common.h"
#include "check.h"
#include "tensors.h"
#include "timer.h"

typedef struct lt_ctx {
    cublasLtHandle_t h;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    void *ws;
    const void *A, *B;
    void *C;
    float alpha, beta;
} lt_ctx;

static void lt_layouts_destroy(cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
                               cublasLtMatrixLayout_t lc)
{
    if (la)
        cublasLtMatrixLayoutDestroy(la);
    if (lb)
        cublasLtMatrixLayoutDestroy(lb);
    if (lc)
        cublasLtMatrixLayoutDestroy(lc);
}

static void lt_teardown(void *p)
{
    lt_ctx *c = p;
    if (!c)
        return;
    lt_layouts_destroy(c->la, c->lb, c->lc);
    if (c->op)
        cublasLtMatmulDescDestroy(c->op);
    if (c->h)
        cublasLtDestroy(c->h);
    if (c->ws)
        cudaFree(c->ws);
    free(c);
}

static int lt_launch(void *p, kgate_stream s, kg_err *err)
{
    lt_ctx *c = p;
    KG_CUBLAS(cublasLtMatmul(c->h, c->op, &c->alpha, c->B, c->lb, c->A, c->la, &c->beta, c->C,
                             c->lc, c->C, c->lc, &c->algo, c->ws, KG_LT_WORKSPACE,
                             (cudaStream_t)s));
    return 0;
out:
    return err->code;
}

static int lt_cb(void *p, int set, kgate_stream s, kg_err *err)
{
    (void)set;
    return lt_launch(p, s, err);
}

/* Builds the context for dt and picks the fastest algorithm. fp32 runs in
 * fp32 (CUBLAS_COMPUTE_32F), or with tf32 on the tensor cores at TF32's
 * precision (CUBLAS_COMPUTE_32F_FAST_TF32). */
static int lt_prepare(kg_dtype dt, int tf32, int64_t m, int64_t n, int64_t k, const void *A, const void *B,
                      void *C, kgate_stream s, lt_ctx **out, char *note, size_t note_size,
                      kg_err *err)
{
    lt_ctx *c = calloc(1, sizeof *c);
    cublasLtMatmulHeuristicResult_t res[KG_LT_ALGOS];
    int found = 0, best = -1;
    char what[96];
    if (!c)
        return kg_err_set(err, KG_EXIT_ENV, "out of host memory");
    cudaDataType_t t = kg_lt_type(dt);
    cublasComputeType_t ct = dt == KG_FP32 && tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    c->A = A;
    c->B = B;
    c->C = C;
    c->alpha = 1.0f;
    c->beta = 0.0f;
    KG_CUBLAS(cublasLtCreate(&c->h));
    KG_CUBLAS(cublasLtMatmulDescCreate(&c->op, ct, CUDA_R_32F));
    KG_CUBLAS(cublasLtMatrixLayoutCreate(&c->lb, t, (uint64_t)n, (uint64_t)k, n));
    KG_CUBLAS(cublasLtMatrixLayoutCreate(&c->la, t, (uint64_t)k, (uint64_t)m, k));
    KG_CUBLAS(cublasLtMatrixLayoutCreate(&c->lc, t, (uint64_t)n, (uint64_t)m, n));
    KG_CUDA(cudaMalloc(&c->ws, KG_LT_WORKSPACE));
    snprintf(what, sizeof what, "%lldx%lldx%lld %s", (long long)m, (long long)n, (long long)k,
             kg_dtype_name(dt));
    if (kg_lt_heuristics(c->h, c->op, c->lb, c->la, c->lc, c->lc, what, res, &found, err))
        goto out;
    best = kg_lt_fastest(res, found, &c->algo, lt_launch, c, s, err);
    if (best < 0)
        goto out;
    snprintf(note, note_size, "cuBLASLt%s, fastest of %d heuristic algorithms (#%d), 64 MiB workspace",
             dt != KG_FP32 ? "" : tf32 ? " with TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32)"
                                       : " in fp32 (CUBLAS_COMPUTE_32F)",
             found, best + 1);
    *out = c;
    c = NULL;
out:
    lt_teardown(c);
    return err->code;
}

static int lt_setup_as(int tf32, const DLTensor *in, DLTensor *out, kgate_stream s, void **ctx, char *note,
                       size_t note_size, kg_err *err)
{
    lt_ctx *c = NULL;
    kg_dtype dt = kg_tensor_dtype(&in[0]);
    int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
    if (lt_prepare(dt, tf32, m, n, k, in[0].data, in[1].data, out[0].data, s, &c, note, note_size, err))
        return err->code;
    *ctx = c;
    return 0;
}

static int lt_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                    kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    return lt_setup_as(0, in, out, s, ctx, note, note_size, err);
}

/* fp32 with TF32 tensor cores (tried at fp32 only): what a library does
 * when asked for speed over fp32's precision (PyTorch's allow_tf32).
 * Checked like every path, it shows whether TF32 passes fp32's tolerance at
 * this shape; it does not at the presets' (catalog/tolerance.h), so it is
 * not the path E is measured against. */
static int lt_setup_tf32(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                         kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    return lt_setup_as(1, in, out, s, ctx, note, note_size, err);
}

const kg_baseline kg_baseline_cublaslt = {"cublaslt", "cuBLASLt", lt_setup, lt_launch, lt_teardown, 0};
const kg_baseline kg_baseline_cublaslt_tf32 = {"cublaslt-tf32", "cuBLASLt", lt_setup_tf32, lt_launch, lt_teardown,
                                               1u << KG_FP32};

int kg_cublaslt_peak(kg_dtype dt, int64_t m, int64_t n, int64_t k, double *t_s, kg_err *err)
{
    DLTensor a = {0}, b = {0}, c = {0};
    lt_ctx *ctx = NULL;
    cudaStream_t s = NULL;
    char note[256];
    int64_t ea[2] = {m, k}, eb[2] = {k, n}, ec[2] = {m, n};
    KG_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    if (kg_tensor_alloc(&a, dt, 2, ea, err) || kg_tensor_alloc(&b, dt, 2, eb, err) ||
        kg_tensor_alloc(&c, dt, 2, ec, err))
        goto out;
    if (kg_tensor_fill_uniform(&a, -1, 1, 1, (kgate_stream)s, err) ||
        kg_tensor_fill_uniform(&b, -1, 1, 2, (kgate_stream)s, err))
        goto out;
    if (lt_prepare(dt, 1, m, n, k, a.data, b.data, c.data, (kgate_stream)s, &ctx, note, sizeof note,
                   err))
        goto out;
    {
        kg_timer_cfg tc;
        kg_timing tm;
        kg_timer_defaults(&tc);
        tc.stop.max_wall_s = 3.0;
        if (kg_time(&tc, lt_cb, ctx, (kgate_stream)s, &tm, err))
            goto out;
        *t_s = tm.st.median;
    }
out:
    lt_teardown(ctx);
    kg_tensor_free(&a);
    kg_tensor_free(&b);
    kg_tensor_free(&c);
    if (s)
        cudaStreamDestroy(s);
    return err->code;
}

/* --------------------------------------------------------- matrix transform */
typedef struct tf_ctx {
    cublasLtHandle_t h;
    cublasLtMatrixTransformDesc_t d;
    cublasLtMatrixLayout_t la, lb, lc;
    const void *A, *B;
    void *C;
    float alpha, beta;
} tf_ctx;

static void tf_teardown(void *p)
{
    tf_ctx *c = p;
    if (!c)
        return;
    lt_layouts_destroy(c->la, c->lb, c->lc);
    if (c->d)
        cublasLtMatrixTransformDescDestroy(c->d);
    if (c->h)
        cublasLtDestroy(c->h);
    free(c);
}

static int tf_launch(void *p, kgate_stream s, kg_err *err)
{
    tf_ctx *c = p;
    KG_CUBLAS(cublasLtMatrixTransform(c->h, c->d, &c->alpha, c->A, c->la, &c->beta, c->B, c->lb,
                                      c->C, c->lc, (cudaStream_t)s));
    return 0;
out:
    return err->code;
}

/* The context with its handle and an fp32-scale transform descriptor. */
static int tf_begin(kg_dtype dt, tf_ctx **out, kg_err *err)
{
    tf_ctx *c = calloc(1, sizeof *c);
    *out = c;
    if (!c)
        return kg_err_set(err, KG_EXIT_ENV, "out of host memory");
    if (dt != KG_FP16 && dt != KG_BF16 && dt != KG_FP32)
        return kg_err_set(err, KG_EXIT_ENV, "cublasLtMatrixTransform path: no %s data",
                          kg_dtype_name(dt));
    KG_CUBLAS(cublasLtCreate(&c->h));
    KG_CUBLAS(cublasLtMatrixTransformDescCreate(&c->d, CUDA_R_32F));
    return 0;
out:
    return err->code;
}

static int transpose_setup(const kg_op *op, const DLTensor *in, DLTensor *out,
                           const kgate_params *p, kgate_stream s, void **ctx, char *note,
                           size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    tf_ctx *c = NULL;
    kg_dtype dt = kg_tensor_dtype(&in[0]);
    int64_t r = in[0].shape[0], k = in[0].ndim >= 2 ? in[0].shape[1] : 1;
    if (tf_begin(dt, &c, err))
        goto out;
    {
        int32_t op_t = CUBLAS_OP_T;
        KG_CUBLAS(cublasLtMatrixTransformDescSetAttribute(c->d, CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA,
                                                          &op_t, sizeof op_t));
    }
    KG_CUBLAS(cublasLtMatrixLayoutCreate(&c->la, kg_lt_type(dt), (uint64_t)k, (uint64_t)r, k));
    KG_CUBLAS(cublasLtMatrixLayoutCreate(&c->lc, kg_lt_type(dt), (uint64_t)r, (uint64_t)k, r));
    c->A = in[0].data;
    c->B = NULL; /* beta 0: no B */
    c->C = out[0].data;
    c->alpha = 1.0f;
    c->beta = 0.0f;
    if (kg_baseline_trial(tf_launch, c, s, err))
        goto out;
    snprintf(note, note_size,
             "cublasLtMatrixTransform, transa T, alpha 1, beta 0 (no B), fp32 scale, column-major "
             "%lldx%lld (ld %lld) -> %lldx%lld (ld %lld)",
             (long long)k, (long long)r, (long long)k, (long long)r, (long long)k, (long long)r);
    *ctx = c;
    return 0;
out:
    tf_teardown(c);
    return err->code;
}

static int geam_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                      kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    tf_ctx *c = NULL;
    kg_dtype dt = kg_tensor_dtype(&in[0]);
    int64_t n = kg_tensor_numel(&in[0]), m = kg_divisor_upto(n, 16384);
    if (tf_begin(dt, &c, err))
        goto out;
    KG_CUBLAS(cublasLtMatrixLayoutCreate(&c->la, kg_lt_type(dt), (uint64_t)m, (uint64_t)(n / m), m));
    KG_CUBLAS(cublasLtMatrixLayoutCreate(&c->lb, kg_lt_type(dt), (uint64_t)m, (uint64_t)(n / m), m));
    KG_CUBLAS(cublasLtMatrixLayoutCreate(&c->lc, kg_lt_type(dt), (uint64_t)m, (uint64_t)(n / m), m));
    c->A = in[0].data;
    c->B = in[1].data;
    c->C = out[0].data;
    c->alpha = 1.0f;
    c->beta = 1.0f;
    if (kg_baseline_trial(tf_launch, c, s, err))
        goto out;
    snprintf(note, note_size,
             "cublasLtMatrixTransform C = A + B (alpha = beta = 1, fp32 scale), column-major "
             "%lldx%lld",
             (long long)m, (long long)(n / m));
    *ctx = c;
    return 0;
out:
    tf_teardown(c);
    return err->code;
}

const kg_baseline kg_baseline_cublaslt_transpose = {"cublaslt-transpose", "cuBLASLt",
                                                    transpose_setup, tf_launch, tf_teardown, 0};
const kg_baseline kg_baseline_cublaslt_geam = {"cublaslt-geam", "cuBLASLt", geam_setup, tf_launch,
                                               tf_teardown, 0};
