/* Legacy cuDNN baselines (the cudnn_ops library), every one with float
 * compute (alpha 1, beta 0 as floats):
 *   optensor add/mul: cudnnOpTensor ADD / MUL over NCHW [1, N, 1, 1] (a
 *                 tensor of rank >= 2: [rows, cols, 1, 1]); when that view is
 *                 refused, [N/k, k, 1, 1] with k the largest divisor <= 16384.
 *   activation:   cudnnActivationForward RELU, NaN propagating, same views.
 *   log softmax:  cudnnSoftmaxForward LOG, instance mode, [rows, cols, 1, 1].
 *   reduce:       cudnnReduceTensor MAX (NaN propagating) / AVG of
 *                 [rows, cols, 1, 1] into [rows, 1, 1, 1]; argmax is MAX with
 *                 32-bit flattened indices into scratch values and indices,
 *                 then a small kernel widening them to int64 (the index mod
 *                 cols: right whether cuDNN counts from the row's start or
 *                 from the tensor's, see baseline_cub.h).
 *   transform:    cudnnTransformTensor from [R, C, 1, 1] (strides C,1,1,1)
 *                 into the same dims with strides (1, R, RC, RC): the
 *                 row-major [C, R] transpose.
 * Legacy descriptors take int extents: tensors of more than INT_MAX elements
 * are unsupported. Every setup runs the call once and waits for it, so a
 * case the library refuses is reported at setup (unsupported), not at the
 * first timed launch. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../catalog/op.h"
#include "baseline.h"
#include "baseline_cub.h"
#include "check.h"
#include "cudnn_api.h"
#include "tensors.h"

/* The loaded library; every setup loads it first (kg_cudnn_load). */
#define DN kg_cudnn_loaded()

typedef enum lg_kind { LG_OPTENSOR, LG_ACTIVATION, LG_LOG_SOFTMAX, LG_REDUCE, LG_TRANSFORM } lg_kind;

typedef struct lg_ctx {
    lg_kind kind;
    cudnnHandle_t h;
    cudnnTensorDescriptor_t a, c; /* input(s), output */
    cudnnOpTensorDescriptor_t opt;
    cudnnActivationDescriptor_t act;
    cudnnReduceTensorDescriptor_t red;
    const void *x, *y;
    void *z;
    void *ws, *idx;
    size_t ws_size, idx_size;
    int64_t *out_i64; /* argmax: the int64 indices */
    int64_t rows, cols;
} lg_ctx;

static void lg_teardown(void *p)
{
    lg_ctx *c = p;
    if (!c)
        return;
    if (c->red)
        DN->cudnnDestroyReduceTensorDescriptor(c->red);
    if (c->act)
        DN->cudnnDestroyActivationDescriptor(c->act);
    if (c->opt)
        DN->cudnnDestroyOpTensorDescriptor(c->opt);
    if (c->a)
        DN->cudnnDestroyTensorDescriptor(c->a);
    if (c->c)
        DN->cudnnDestroyTensorDescriptor(c->c);
    if (c->h)
        DN->cudnnDestroy(c->h);
    cudaFree(c->ws);
    cudaFree(c->idx);
    if (c->out_i64) /* argmax: z is the scratch values tensor */
        cudaFree(c->z);
    free(c);
}

static int lg_launch(void *p, kgate_stream s, kg_err *err)
{
    lg_ctx *c = p;
    float one = 1.f, zero = 0.f;
    KG_CUDNN(DN->cudnnSetStream(c->h, (cudaStream_t)s));
    switch (c->kind) {
    case LG_OPTENSOR:
        KG_CUDNN(DN->cudnnOpTensor(c->h, c->opt, &one, c->a, c->x, &one, c->a, c->y, &zero, c->a,
                                   c->z));
        break;
    case LG_ACTIVATION:
        KG_CUDNN(DN->cudnnActivationForward(c->h, c->act, &one, c->a, c->x, &zero, c->a, c->z));
        break;
    case LG_LOG_SOFTMAX:
        KG_CUDNN(DN->cudnnSoftmaxForward(c->h, CUDNN_SOFTMAX_LOG, CUDNN_SOFTMAX_MODE_INSTANCE, &one,
                                         c->a, c->x, &zero, c->a, c->z));
        break;
    case LG_REDUCE:
        KG_CUDNN(DN->cudnnReduceTensor(c->h, c->red, c->idx, c->idx_size, c->ws, c->ws_size, &one,
                                       c->a, c->x, &zero, c->c, c->z));
        if (c->out_i64)
            KG_CUDA(kg_widen_row_index_u32(c->idx, c->out_i64, c->rows, c->cols, s));
        break;
    case LG_TRANSFORM:
        KG_CUDNN(DN->cudnnTransformTensor(c->h, &one, c->a, c->x, &zero, c->c, c->z));
        break;
    }
    return 0;
out:
    return err->code;
}

/* Loads cuDNN, makes the context and its handle; rows x cols is input 0
 * with its last extent as columns. */
static int lg_begin(lg_kind kind, const DLTensor *in, lg_ctx **out_c, kg_err *err)
{
    lg_ctx *c = NULL;
    int64_t n = kg_tensor_numel(&in[0]);
    int64_t cols = in[0].ndim >= 1 ? in[0].shape[in[0].ndim - 1] : 1;
    *out_c = NULL;
    if (n < 1 || cols < 1)
        return kg_err_set(err, KG_EXIT_ENV, "cuDNN: empty tensor");
    if (n > INT_MAX)
        return kg_err_set(err, KG_EXIT_ENV,
                          "legacy cuDNN takes int extents and strides: %lld elements exceed INT_MAX",
                          (long long)n);
    if (!kg_cudnn_load(err))
        return err->code;
    c = calloc(1, sizeof *c);
    if (!c)
        return kg_err_set(err, KG_EXIT_ENV, "out of host memory");
    c->kind = kind;
    c->cols = cols;
    c->rows = n / cols;
    *out_c = c;
    KG_CUDNN(DN->cudnnCreate(&c->h));
    KG_CUDNN(DN->cudnnCreateTensorDescriptor(&c->a));
    KG_CUDNN(DN->cudnnCreateTensorDescriptor(&c->c));
    return 0;
out:
    return err->code;
}

/* Element-wise paths: tries the natural NCHW view, then a split one. */
static int lg_elementwise(lg_ctx *c, const DLTensor *in, kgate_stream s, const char *what,
                          char *note, size_t note_size, kg_err *err)
{
    kg_dtype dt = kg_tensor_dtype(&in[0]);
    int64_t n = c->rows * c->cols;
    int64_t k = kg_divisor_upto(n, 16384);
    int dims[2][2] = {{in[0].ndim >= 2 ? (int)c->rows : 1, in[0].ndim >= 2 ? (int)c->cols : (int)n},
                      {(int)(n / k), (int)k}};
    char why[2][300] = {"", ""};
    for (int v = 0; v < 2; v++) {
        kg_err e2 = {0, ""};
        if (v == 1 && dims[1][0] == dims[0][0] && dims[1][1] == dims[0][1])
            break;
        if (DN->cudnnSetTensor4dDescriptor(c->a, CUDNN_TENSOR_NCHW, kg_cudnn_type(dt), dims[v][0],
                                           dims[v][1], 1, 1) != CUDNN_STATUS_SUCCESS) {
            snprintf(why[v], sizeof why[v], "cudnnSetTensor4dDescriptor refused [%d,%d,1,1]",
                     dims[v][0], dims[v][1]);
            continue;
        }
        if (kg_baseline_trial(lg_launch, c, s, &e2) == 0) {
            snprintf(note, note_size, "%s, cuDNN %zu, float compute, NCHW [%d,%d,1,1]", what,
                     DN->cudnnGetVersion(), dims[v][0], dims[v][1]);
            return 0;
        }
        snprintf(why[v], sizeof why[v], "%.290s", e2.msg);
    }
    return kg_err_set(err, KG_EXIT_ENV, "%s unsupported here for %s: [%d,%d,1,1]: %.300s%s%.300s",
                      what, kg_dtype_name(dt), dims[0][0], dims[0][1], why[0],
                      why[1][0] ? " | split: " : "", why[1]);
}

/* --------------------------------------------------------------- op tensor */
static int optensor_setup(cudnnOpTensorOp_t op, const char *what, const DLTensor *in, DLTensor *out,
                          kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    lg_ctx *c = NULL;
    if (lg_begin(LG_OPTENSOR, in, &c, err))
        goto out;
    c->x = in[0].data;
    c->y = in[1].data;
    c->z = out[0].data;
    KG_CUDNN(DN->cudnnCreateOpTensorDescriptor(&c->opt));
    KG_CUDNN(DN->cudnnSetOpTensorDescriptor(c->opt, op, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN));
    if (lg_elementwise(c, in, s, what, note, note_size, err))
        goto out;
    *ctx = c;
    return 0;
out:
    lg_teardown(c);
    return err->code;
}

static int add_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                     kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    return optensor_setup(CUDNN_OP_TENSOR_ADD, "cudnnOpTensor ADD", in, out, s, ctx, note,
                          note_size, err);
}

static int mul_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                     kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    return optensor_setup(CUDNN_OP_TENSOR_MUL, "cudnnOpTensor MUL", in, out, s, ctx, note,
                          note_size, err);
}

/* -------------------------------------------------------------- activation */
static int relu_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                      kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    lg_ctx *c = NULL;
    if (lg_begin(LG_ACTIVATION, in, &c, err))
        goto out;
    c->x = in[0].data;
    c->z = out[0].data;
    KG_CUDNN(DN->cudnnCreateActivationDescriptor(&c->act));
    KG_CUDNN(DN->cudnnSetActivationDescriptor(c->act, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
    if (lg_elementwise(c, in, s, "cudnnActivationForward RELU (NaN propagating)", note, note_size, err))
        goto out;
    *ctx = c;
    return 0;
out:
    lg_teardown(c);
    return err->code;
}

/* ------------------------------------------------------------- log softmax */
static int log_softmax_setup(const kg_op *op, const DLTensor *in, DLTensor *out,
                             const kgate_params *p, kgate_stream s, void **ctx, char *note,
                             size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    lg_ctx *c = NULL;
    kg_dtype dt = kg_tensor_dtype(&in[0]);
    if (lg_begin(LG_LOG_SOFTMAX, in, &c, err))
        goto out;
    c->x = in[0].data;
    c->z = out[0].data;
    KG_CUDNN(DN->cudnnSetTensor4dDescriptor(c->a, CUDNN_TENSOR_NCHW, kg_cudnn_type(dt), (int)c->rows,
                                            (int)c->cols, 1, 1));
    if (kg_baseline_trial(lg_launch, c, s, err))
        goto out;
    snprintf(note, note_size, "cudnnSoftmaxForward (log, instance), cuDNN %zu, NCHW [%lld,%lld,1,1]",
             DN->cudnnGetVersion(), (long long)c->rows, (long long)c->cols);
    *ctx = c;
    return 0;
out:
    lg_teardown(c);
    return err->code;
}

/* ------------------------------------------------------------------ reduce */
/* argmax: out is int64 indices, the values go to a scratch tensor. */
static int reduce_setup(cudnnReduceTensorOp_t rop, int argmax, const char *what, const DLTensor *in,
                        DLTensor *out, kgate_stream s, void **ctx, char *note, size_t note_size,
                        kg_err *err)
{
    lg_ctx *c = NULL;
    kg_dtype dt = kg_tensor_dtype(&in[0]);
    if (lg_begin(LG_REDUCE, in, &c, err))
        goto out;
    c->x = in[0].data;
    if (kg_tensor_numel(&out[0]) != c->rows) {
        kg_err_set(err, KG_EXIT_ENV, "%s: output has %lld elements, expected one per row (%lld)",
                   what, (long long)kg_tensor_numel(&out[0]), (long long)c->rows);
        goto out;
    }
    if (argmax) {
        c->out_i64 = out[0].data;
        KG_CUDA(cudaMalloc(&c->z, kg_dtype_size(dt) * (size_t)c->rows));
    } else {
        c->z = out[0].data;
    }
    KG_CUDNN(DN->cudnnSetTensor4dDescriptor(c->a, CUDNN_TENSOR_NCHW, kg_cudnn_type(dt), (int)c->rows,
                                            (int)c->cols, 1, 1));
    KG_CUDNN(DN->cudnnSetTensor4dDescriptor(c->c, CUDNN_TENSOR_NCHW, kg_cudnn_type(dt), (int)c->rows,
                                            1, 1, 1));
    KG_CUDNN(DN->cudnnCreateReduceTensorDescriptor(&c->red));
    KG_CUDNN(DN->cudnnSetReduceTensorDescriptor(
        c->red, rop, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN,
        argmax ? CUDNN_REDUCE_TENSOR_FLATTENED_INDICES : CUDNN_REDUCE_TENSOR_NO_INDICES,
        CUDNN_32BIT_INDICES));
    KG_CUDNN(DN->cudnnGetReductionWorkspaceSize(c->h, c->red, c->a, c->c, &c->ws_size));
    KG_CUDNN(DN->cudnnGetReductionIndicesSize(c->h, c->red, c->a, c->c, &c->idx_size));
    if (argmax && c->idx_size < sizeof(uint32_t) * (size_t)c->rows) {
        kg_err_set(err, KG_EXIT_ENV,
                   "cudnnGetReductionIndicesSize gave %zu bytes for %lld rows: not 32-bit indices "
                   "one per row, which the widening step reads",
                   c->idx_size, (long long)c->rows);
        goto out;
    }
    if (c->ws_size)
        KG_CUDA(cudaMalloc(&c->ws, c->ws_size));
    if (c->idx_size)
        KG_CUDA(cudaMalloc(&c->idx, c->idx_size));
    if (kg_baseline_trial(lg_launch, c, s, err))
        goto out;
    snprintf(note, note_size,
             "%s, cuDNN %zu, float compute, [%lld,%lld,1,1] -> [%lld,1,1,1], workspace %zu B%s",
             what, DN->cudnnGetVersion(), (long long)c->rows, (long long)c->cols, (long long)c->rows,
             c->ws_size, argmax ? ", 32-bit indices widened to int64 by a kgate kernel" : "");
    *ctx = c;
    return 0;
out:
    lg_teardown(c);
    return err->code;
}

static int max_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                     kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    return reduce_setup(CUDNN_REDUCE_TENSOR_MAX, 0, "cudnnReduceTensor MAX (NaN propagating)", in,
                        out, s, ctx, note, note_size, err);
}

static int avg_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                     kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    return reduce_setup(CUDNN_REDUCE_TENSOR_AVG, 0, "cudnnReduceTensor AVG", in, out, s, ctx, note,
                        note_size, err);
}

static int argmax_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                        kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    return reduce_setup(CUDNN_REDUCE_TENSOR_MAX, 1,
                        "cudnnReduceTensor MAX with flattened indices (NaN propagating)", in, out,
                        s, ctx, note, note_size, err);
}

/* --------------------------------------------------------------- transform */
static int transform_setup(const kg_op *op, const DLTensor *in, DLTensor *out,
                           const kgate_params *p, kgate_stream s, void **ctx, char *note,
                           size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    lg_ctx *c = NULL;
    kg_dtype dt = kg_tensor_dtype(&in[0]);
    if (lg_begin(LG_TRANSFORM, in, &c, err))
        goto out;
    c->x = in[0].data;
    c->z = out[0].data;
    {
        int r = (int)c->rows, k = (int)c->cols;
        int dims[4] = {r, k, 1, 1};
        int src[4] = {k, 1, 1, 1};
        int dst[4] = {1, r, r * k, r * k};
        KG_CUDNN(DN->cudnnSetTensorNdDescriptor(c->a, kg_cudnn_type(dt), 4, dims, src));
        KG_CUDNN(DN->cudnnSetTensorNdDescriptor(c->c, kg_cudnn_type(dt), 4, dims, dst));
    }
    if (kg_baseline_trial(lg_launch, c, s, err))
        goto out;
    snprintf(note, note_size,
             "cudnnTransformTensor, cuDNN %zu, [%lld,%lld,1,1] strides (%lld,1,1,1) -> strides "
             "(1,%lld,RC,RC)",
             DN->cudnnGetVersion(), (long long)c->rows, (long long)c->cols, (long long)c->cols,
             (long long)c->rows);
    *ctx = c;
    return 0;
out:
    lg_teardown(c);
    return err->code;
}

const kg_baseline kg_baseline_cudnn_optensor_add = {"cudnn-optensor-add", "cuDNN", add_setup,
                                                    lg_launch, lg_teardown, 0};
const kg_baseline kg_baseline_cudnn_optensor_mul = {"cudnn-optensor-mul", "cuDNN", mul_setup,
                                                    lg_launch, lg_teardown, 0};
const kg_baseline kg_baseline_cudnn_activation_relu = {"cudnn-activation-relu", "cuDNN", relu_setup,
                                                       lg_launch, lg_teardown, 0};
const kg_baseline kg_baseline_cudnn_log_softmax = {"cudnn-log-softmax", "cuDNN", log_softmax_setup,
                                                   lg_launch, lg_teardown, 0};
const kg_baseline kg_baseline_cudnn_reduce_max = {"cudnn-reduce-max", "cuDNN", max_setup, lg_launch,
                                                  lg_teardown, 0};
const kg_baseline kg_baseline_cudnn_reduce_avg = {"cudnn-reduce-avg", "cuDNN", avg_setup, lg_launch,
                                                  lg_teardown, 0};
const kg_baseline kg_baseline_cudnn_reduce_argmax = {"cudnn-reduce-argmax", "cuDNN", argmax_setup,
                                                     lg_launch, lg_teardown, 0};
const kg_baseline kg_baseline_cudnn_transform = {"cudnn-transform", "cuDNN", transform_setup,
                                                 lg_launch, lg_teardown, 0};
