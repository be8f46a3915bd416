/* cuDNN baselines.
 * softmax:    cudnnSoftmaxForward, accurate algorithm, instance mode over an
 *             NCHW tensor [rows, cols, 1, 1].
 * layer_norm: the graph (backend) API, one norm-forward operation in
 *             layer-norm mode over x [rows, cols, 1, 1] with scale and bias
 *             [1, cols, 1, 1] and a by-value epsilon. Tried in order:
 *             inference with scale/bias in the input dtype, inference with
 *             fp32 scale/bias, training phase (which also writes fp32 mean
 *             and inverse variance). Each engine config the heuristics offer
 *             (up to 4) is timed and the fastest kept. When nothing finalizes,
 *             setup fails with cuDNN's reason (the path is unsupported). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/op.h"
#include "baseline.h"
#include "check.h"
#include "cudnn_api.h"
#include "tensors.h"
#include "timer.h"

/* The loaded library; every setup loads it first (kg_cudnn_load). */
#define DN kg_cudnn_loaded()

/* ------------------------------------------------------------------ softmax */
typedef struct sm_ctx {
    cudnnHandle_t h;
    cudnnTensorDescriptor_t d;
    const void *x;
    void *y;
} sm_ctx;

static void sm_teardown(void *p)
{
    sm_ctx *c = p;
    if (!c)
        return;
    if (c->d)
        DN->cudnnDestroyTensorDescriptor(c->d);
    if (c->h)
        DN->cudnnDestroy(c->h);
    free(c);
}

static int sm_launch(void *p, kgate_stream s, kg_err *err)
{
    sm_ctx *c = p;
    float one = 1.f, zero = 0.f;
    KG_CUDNN(DN->cudnnSetStream(c->h, (cudaStream_t)s));
    KG_CUDNN(DN->cudnnSoftmaxForward(c->h, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &one,
                                 c->d, c->x, &zero, c->d, c->y));
    return 0;
out:
    return err->code;
}

static cudnnDataType_t cudnn_type(kg_dtype dt)
{
    return dt == KG_FP16 ? CUDNN_DATA_HALF : dt == KG_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

static int sm_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                    kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    (void)s;
    sm_ctx *c = NULL;
    kg_dtype dt = kg_tensor_dtype(&in[0]);
    if (!kg_cudnn_load(err))
        return err->code;
    c = calloc(1, sizeof *c);
    if (!c)
        return kg_err_set(err, KG_EXIT_ENV, "out of host memory");
    c->x = in[0].data;
    c->y = out[0].data;
    KG_CUDNN(DN->cudnnCreate(&c->h));
    KG_CUDNN(DN->cudnnCreateTensorDescriptor(&c->d));
    KG_CUDNN(DN->cudnnSetTensor4dDescriptor(c->d, CUDNN_TENSOR_NCHW, cudnn_type(dt),
                                        (int)in[0].shape[0], (int)in[0].shape[1], 1, 1));
    snprintf(note, note_size, "cudnnSoftmaxForward (accurate, instance), cuDNN %zu",
             DN->cudnnGetVersion());
    *ctx = c;
    return 0;
out:
    sm_teardown(c);
    return err->code;
}

const kg_baseline kg_baseline_cudnn_softmax = {"cudnn-softmax", "cuDNN", sm_setup, sm_launch,
                                               sm_teardown};

/* --------------------------------------------------------------- layer_norm */
enum { UID_X = 1, UID_SCALE, UID_BIAS, UID_EPS, UID_Y, UID_MEAN, UID_INVVAR, N_UID = 7 };

typedef struct ln_ctx {
    cudnnHandle_t h;
    cudnnBackendDescriptor_t plan, pack;
    void *ws, *scale32, *bias32, *stats;
    float eps;
    int cfg_index;
    int64_t uids[N_UID];
    void *ptrs[N_UID];
    int n_uids;
} ln_ctx;

static void ln_teardown(void *p)
{
    ln_ctx *c = p;
    if (!c)
        return;
    if (c->pack)
        DN->cudnnBackendDestroyDescriptor(c->pack);
    if (c->plan)
        DN->cudnnBackendDestroyDescriptor(c->plan);
    if (c->h)
        DN->cudnnDestroy(c->h);
    cudaFree(c->ws);
    cudaFree(c->scale32);
    cudaFree(c->bias32);
    cudaFree(c->stats);
    free(c);
}

static int ln_launch(void *p, kgate_stream s, kg_err *err)
{
    ln_ctx *c = p;
    KG_CUDNN(DN->cudnnSetStream(c->h, (cudaStream_t)s));
    KG_CUDNN(DN->cudnnBackendExecute(c->h, c->plan, c->pack));
    return 0;
out:
    return err->code;
}

static int ln_cb(void *p, int set, kgate_stream s, kg_err *err)
{
    (void)set;
    return ln_launch(p, s, err);
}

static int tensor_desc(cudnnBackendDescriptor_t *d, int64_t uid, cudnnDataType_t dt,
                       const int64_t *dims, const int64_t *strides, bool by_value, kg_err *err)
{
    int64_t align = by_value ? 4 : 16;
    KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, d));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
    if (by_value)
        KG_CUDNN(DN->cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1,
                                          &by_value));
    KG_CUDNN(DN->cudnnBackendFinalize(*d));
    return 0;
out:
    return err->code;
}

static void destroy_all(cudnnBackendDescriptor_t *d, int n)
{
    for (int i = 0; i < n; i++)
        if (d[i])
            DN->cudnnBackendDestroyDescriptor(d[i]);
}

/* Builds a plan for one engine config and times it; keeps it in c when it
 * beats *best_t. Returns non-zero (with err) when the config cannot run. */
static int ln_try_cfg(ln_ctx *c, cudnnBackendDescriptor_t cfg, int index, kgate_stream s,
                      double *best_t, kg_err *err)
{
    cudnnBackendDescriptor_t plan = NULL, pack = NULL;
    int64_t ws_size = 0;
    void *ws_ptr = NULL;
    KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan));
    KG_CUDNN(DN->cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &c->h));
    KG_CUDNN(DN->cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg));
    KG_CUDNN(DN->cudnnBackendFinalize(plan));
    KG_CUDNN(DN->cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, NULL, &ws_size));
    if (ws_size > 0)
        KG_CUDA(cudaMalloc(&ws_ptr, (size_t)ws_size));
    KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack));
    KG_CUDNN(DN->cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, c->n_uids, c->uids));
    KG_CUDNN(DN->cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, c->n_uids, c->ptrs));
    KG_CUDNN(DN->cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws_ptr));
    KG_CUDNN(DN->cudnnBackendFinalize(pack));
    {
        ln_ctx trial = *c;
        kg_timer_cfg tc;
        kg_timing tm;
        trial.plan = plan;
        trial.pack = pack;
        kg_timer_defaults(&tc);
        tc.stop.min_samples = 5;
        tc.stop.min_gpu_s = 0.01;
        tc.stop.max_wall_s = 1.0;
        tc.stop.max_samples = 200;
        tc.warmup = 1;
        tc.batch_below_s = 0;
        if (kg_time(&tc, ln_cb, &trial, s, &tm, err))
            goto out;
        if (tm.st.median < *best_t) {
            *best_t = tm.st.median;
            if (c->pack)
                DN->cudnnBackendDestroyDescriptor(c->pack);
            if (c->plan)
                DN->cudnnBackendDestroyDescriptor(c->plan);
            cudaFree(c->ws);
            c->plan = plan;
            c->pack = pack;
            c->ws = ws_ptr;
            c->cfg_index = index;
            plan = pack = NULL;
            ws_ptr = NULL;
        }
    }
out:
    if (pack)
        DN->cudnnBackendDestroyDescriptor(pack);
    if (plan)
        DN->cudnnBackendDestroyDescriptor(plan);
    cudaFree(ws_ptr);
    return err->code;
}

/* One attempt at a plan. training: use the training phase with stats outputs. */
static int ln_try(ln_ctx *c, cudnnDataType_t xt, cudnnDataType_t st, int training, int64_t rows,
                  int64_t cols, kgate_stream s, char *note, size_t note_size, kg_err *err)
{
    cudnnBackendDescriptor_t t[7] = {0}, op = NULL, graph = NULL, heur = NULL, cfgs[8] = {0};
    int64_t xd[4] = {rows, cols, 1, 1}, xs[4] = {cols, 1, 1, 1};
    int64_t wd[4] = {1, cols, 1, 1}, ws[4] = {cols, 1, 1, 1};
    int64_t sd[4] = {rows, 1, 1, 1}, ss[4] = {1, 1, 1, 1};
    int64_t ed[4] = {1, 1, 1, 1};
    int64_t n_cfg = 0;
    double best_t = 1e30;
    int best = -1;
    char why[256] = "";
    if (tensor_desc(&t[0], UID_X, xt, xd, xs, false, err) ||
        tensor_desc(&t[1], UID_SCALE, st, wd, ws, false, err) ||
        tensor_desc(&t[2], UID_BIAS, st, wd, ws, false, err) ||
        tensor_desc(&t[3], UID_EPS, CUDNN_DATA_FLOAT, ed, ss, true, err) ||
        tensor_desc(&t[4], UID_Y, xt, xd, xs, false, err))
        goto out;
    if (training && (tensor_desc(&t[5], UID_MEAN, CUDNN_DATA_FLOAT, sd, ss, false, err) ||
                     tensor_desc(&t[6], UID_INVVAR, CUDNN_DATA_FLOAT, sd, ss, false, err)))
        goto out;
    {
        cudnnBackendNormMode_t mode = CUDNN_LAYER_NORM;
        cudnnBackendNormFwdPhase_t phase = training ? CUDNN_NORM_FWD_TRAINING : CUDNN_NORM_FWD_INFERENCE;
        KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR, &op));
        KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_NORM_FWD_MODE, CUDNN_TYPE_NORM_MODE, 1, &mode));
        KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_NORM_FWD_PHASE, CUDNN_TYPE_NORM_FWD_PHASE, 1, &phase));
        KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_NORM_FWD_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[0]));
        KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[1]));
        KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[2]));
        KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[3]));
        KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_NORM_FWD_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[4]));
        if (training) {
            KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[5]));
            KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[6]));
        }
        KG_CUDNN(DN->cudnnBackendFinalize(op));
    }
    KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph));
    KG_CUDNN(DN->cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op));
    KG_CUDNN(DN->cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &c->h));
    KG_CUDNN(DN->cudnnBackendFinalize(graph));
    {
        cudnnBackendHeurMode_t hm = CUDNN_HEUR_MODE_A;
        KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
        KG_CUDNN(DN->cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph));
        KG_CUDNN(DN->cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &hm));
        KG_CUDNN(DN->cudnnBackendFinalize(heur));
    }
    for (int i = 0; i < 8; i++)
        KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[i]));
    KG_CUDNN(DN->cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 8, &n_cfg, cfgs));
    if (n_cfg == 0) {
        kg_err_set(err, KG_EXIT_ENV, "cuDNN heuristics offer no engine for layer norm");
        goto out;
    }
    c->uids[0] = UID_X; c->uids[1] = UID_SCALE; c->uids[2] = UID_BIAS; c->uids[3] = UID_EPS; c->uids[4] = UID_Y;
    c->n_uids = training ? 7 : 5;
    if (training) {
        c->uids[5] = UID_MEAN;
        c->uids[6] = UID_INVVAR;
    }
    for (int i = 0; i < n_cfg && i < 4; i++) {
        kg_err e2 = {0, ""};
        if (ln_try_cfg(c, cfgs[i], i, s, &best_t, &e2) == 0)
            best = c->cfg_index;
        else if (!why[0])
            snprintf(why, sizeof why, "%.250s", e2.msg);
    }
    if (best < 0) {
        kg_err_set(err, KG_EXIT_ENV, "no cuDNN layer-norm engine config ran (%lld offered): %s",
                   (long long)n_cfg, why);
        goto out;
    }
    snprintf(note, note_size, "cuDNN %zu graph API norm forward (layer norm, %s, scale/bias %s), engine config %d of %lld",
             DN->cudnnGetVersion(), training ? "training phase" : "inference",
             st == CUDNN_DATA_FLOAT ? "fp32" : "input dtype", best + 1, (long long)n_cfg);
out:
    destroy_all(cfgs, 8);
    if (heur)
        DN->cudnnBackendDestroyDescriptor(heur);
    if (graph)
        DN->cudnnBackendDestroyDescriptor(graph);
    if (op)
        DN->cudnnBackendDestroyDescriptor(op);
    destroy_all(t, 7);
    return err->code;
}


static int ln_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                    kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    ln_ctx *c = NULL;
    kg_dtype dt = kg_tensor_dtype(&in[0]);
    int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    char why[3][300] = {"", "", ""};
    if (!kg_cudnn_load(err))
        return err->code;
    c = calloc(1, sizeof *c);
    if (!c)
        return kg_err_set(err, KG_EXIT_ENV, "out of host memory");
    KG_CUDNN(DN->cudnnCreate(&c->h));
    c->eps = (float)kgate_scalar_get(p, "eps", 1e-5);
    KG_CUDA(cudaMalloc(&c->scale32, sizeof(float) * (size_t)cols));
    KG_CUDA(cudaMalloc(&c->bias32, sizeof(float) * (size_t)cols));
    KG_CUDA(cudaMalloc(&c->stats, 2 * sizeof(float) * (size_t)rows));
    {
        /* fp32 copies of weight and bias for the attempts that want them */
        double *h = malloc(sizeof(double) * (size_t)cols);
        float *f = malloc(sizeof(float) * (size_t)cols);
        int bad = !h || !f;
        for (int k = 1; k <= 2 && !bad; k++) {
            if (kg_tensor_to_host(&in[k], h, err)) {
                bad = 1;
                break;
            }
            for (int64_t j = 0; j < cols; j++)
                f[j] = (float)h[j];
            if (cudaMemcpy(k == 1 ? c->scale32 : c->bias32, f, sizeof(float) * (size_t)cols,
                           cudaMemcpyHostToDevice) != cudaSuccess)
                bad = 1;
        }
        free(h);
        free(f);
        if (bad) {
            kg_err_set(err, KG_EXIT_ENV, "cannot stage fp32 scale and bias for cuDNN");
            goto out;
        }
    }
    for (int attempt = 0; attempt < 3; attempt++) {
        kg_err e2 = {0, ""};
        int training = attempt == 2, fp32_scale = attempt >= 1;
        c->ptrs[0] = in[0].data;
        c->ptrs[1] = fp32_scale ? c->scale32 : in[1].data;
        c->ptrs[2] = fp32_scale ? c->bias32 : in[2].data;
        c->ptrs[3] = &c->eps;
        c->ptrs[4] = out[0].data;
        c->ptrs[5] = c->stats;
        c->ptrs[6] = (float *)c->stats + rows;
        if (ln_try(c, cudnn_type(dt), fp32_scale ? CUDNN_DATA_FLOAT : cudnn_type(dt), training,
                   rows, cols, s, note, note_size, &e2) == 0) {
            *ctx = c;
            return 0;
        }
        snprintf(why[attempt], sizeof why[attempt], "%.290s", e2.msg);
    }
    kg_err_set(err, KG_EXIT_ENV, "cuDNN layer norm unsupported here: %.300s | %.300s | %.300s",
               why[0], why[1], why[2]);
out:
    ln_teardown(c);
    return err->code;
}

const kg_baseline kg_baseline_cudnn_layer_norm = {"cudnn-layernorm", "cuDNN", ln_setup, ln_launch,
                                                  ln_teardown};
