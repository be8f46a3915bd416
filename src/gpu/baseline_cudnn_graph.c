/* cuDNN graph (backend) API baselines: one operation a graph, the engine
 * configs that heuristics mode A offers (up to 4) each timed, the fastest
 * kept. When no config finalizes and runs, setup fails with cuDNN's reason
 * (the path is unsupported here).
 *
 * pointwise:  add, mul (two inputs), relu and leaky relu (RELU_FWD with the
 *             call's lower clip slope), fp32 math. The tensors are viewed as
 *             [1, rows, cols] (rows x cols = the element count; a 1-D tensor
 *             is split at its largest divisor <= 16384), then, if nothing
 *             runs, as [rows, cols, 1, 1]. RELU_FWD first asks for NaN
 *             propagation and an upper clip of +Inf (torch semantics), and
 *             without them when that graph does not run; the note says
 *             which.
 * layer_norm: norm forward in layer-norm mode over x [rows, cols, 1, 1] with
 *             scale and bias [1, cols, 1, 1] and a by-value epsilon.
 * rms_norm:   the same operation in RMS-norm mode, scale only.
 *             Both norms try, in order: inference with scale (and bias) in
 *             the input dtype, inference with fp32 scale (and bias), the
 *             training phase (which also writes fp32 inverse variance, and
 *             for layer norm the mean). */
#include <math.h>
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

enum { DN_MAX_UIDS = 8, DN_MAX_CFG = 8, DN_TRY_CFG = 4 };

/* A built plan: the handle, the kept plan and its variant pack. Every path's
 * context starts with one, so launch needs nothing else. */
typedef struct dn_plan {
    cudnnHandle_t h;
    cudnnBackendDescriptor_t plan, pack;
    void *ws;
    int cfg_index;  /* 0-based, of the kept config */
    int64_t n_cfg;  /* configs the heuristics offered */
    int64_t uids[DN_MAX_UIDS];
    void *ptrs[DN_MAX_UIDS];
    int n_uids;
} dn_plan;

static void dn_release(dn_plan *g)
{
    if (g->pack)
        DN->cudnnBackendDestroyDescriptor(g->pack);
    if (g->plan)
        DN->cudnnBackendDestroyDescriptor(g->plan);
    cudaFree(g->ws);
    g->pack = g->plan = NULL;
    g->ws = NULL;
}

static void dn_close(dn_plan *g)
{
    dn_release(g);
    if (g->h)
        DN->cudnnDestroy(g->h);
    g->h = NULL;
}

static int dn_launch(void *p, kgate_stream s, kg_err *err)
{
    dn_plan *g = p;
    KG_CUDNN(DN->cudnnSetStream(g->h, (cudaStream_t)s));
    KG_CUDNN(DN->cudnnBackendExecute(g->h, g->plan, g->pack));
    return 0;
out:
    return err->code;
}

static int dn_cb(void *p, int set, kgate_stream s, kg_err *err)
{
    (void)set;
    return dn_launch(p, s, err);
}

static void dn_add_uid(dn_plan *g, int64_t uid, void *ptr)
{
    g->uids[g->n_uids] = uid;
    g->ptrs[g->n_uids] = ptr;
    g->n_uids++;
}

/* A tensor descriptor of nd dimensions (by value: a host scalar). */
static int dn_tensor(cudnnBackendDescriptor_t *d, int64_t uid, cudnnDataType_t dt, int nd,
                     const int64_t *dims, const int64_t *strides, bool by_value, kg_err *err)
{
    int64_t align = by_value ? 4 : 16;
    KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, d));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, nd, dims));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, nd, strides));
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

/* Builds a plan for one engine config and times it; keeps it in g when it
 * beats *best_t. Returns non-zero (with err) when the config cannot run. */
static int dn_try_cfg(dn_plan *g, cudnnBackendDescriptor_t cfg, int index, kgate_stream s,
                      double *best_t, kg_err *err)
{
    cudnnBackendDescriptor_t plan = NULL, pack = NULL;
    int64_t ws_size = 0;
    void *ws_ptr = NULL;
    KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan));
    KG_CUDNN(DN->cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &g->h));
    KG_CUDNN(DN->cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg));
    KG_CUDNN(DN->cudnnBackendFinalize(plan));
    KG_CUDNN(DN->cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, NULL, &ws_size));
    if (ws_size > 0)
        KG_CUDA(cudaMalloc(&ws_ptr, (size_t)ws_size));
    KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack));
    KG_CUDNN(DN->cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, g->n_uids, g->uids));
    KG_CUDNN(DN->cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, g->n_uids, g->ptrs));
    KG_CUDNN(DN->cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws_ptr));
    KG_CUDNN(DN->cudnnBackendFinalize(pack));
    {
        dn_plan trial = *g;
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
        if (kg_time(&tc, dn_cb, &trial, s, &tm, err))
            goto out;
        if (tm.st.median < *best_t) {
            *best_t = tm.st.median;
            dn_release(g);
            g->plan = plan;
            g->pack = pack;
            g->ws = ws_ptr;
            g->cfg_index = index;
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

/* Makes a graph of the one finalized operation `op`, asks heuristics mode A
 * for engine configs, times up to DN_TRY_CFG of them and keeps the fastest
 * in g (g->uids and g->ptrs must be filled). `what` names the operation in
 * messages. */
static int dn_pick(dn_plan *g, cudnnBackendDescriptor_t op, const char *what, kgate_stream s,
                   kg_err *err)
{
    cudnnBackendDescriptor_t graph = NULL, heur = NULL, cfgs[DN_MAX_CFG] = {0};
    int64_t n_cfg = 0;
    double best_t = 1e30;
    int best = -1;
    char why[256] = "";
    KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph));
    KG_CUDNN(DN->cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op));
    KG_CUDNN(DN->cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &g->h));
    KG_CUDNN(DN->cudnnBackendFinalize(graph));
    {
        cudnnBackendHeurMode_t hm = CUDNN_HEUR_MODE_A;
        KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
        KG_CUDNN(DN->cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph));
        KG_CUDNN(DN->cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &hm));
        KG_CUDNN(DN->cudnnBackendFinalize(heur));
    }
    for (int i = 0; i < DN_MAX_CFG; i++)
        KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[i]));
    KG_CUDNN(DN->cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, DN_MAX_CFG, &n_cfg, cfgs));
    if (n_cfg == 0) {
        kg_err_set(err, KG_EXIT_ENV, "cuDNN heuristics offer no engine for %s", what);
        goto out;
    }
    g->n_cfg = n_cfg;
    for (int i = 0; i < n_cfg && i < DN_TRY_CFG; i++) {
        kg_err e2 = {0, ""};
        if (dn_try_cfg(g, cfgs[i], i, s, &best_t, &e2) == 0)
            best = g->cfg_index;
        else if (!why[0])
            snprintf(why, sizeof why, "%.250s", e2.msg);
    }
    if (best < 0) {
        kg_err_set(err, KG_EXIT_ENV, "no cuDNN %s engine config ran (%lld offered): %s", what,
                   (long long)n_cfg, why);
        goto out;
    }
out:
    destroy_all(cfgs, DN_MAX_CFG);
    if (heur)
        DN->cudnnBackendDestroyDescriptor(heur);
    if (graph)
        DN->cudnnBackendDestroyDescriptor(graph);
    return err->code;
}

/* ---------------------------------------------------------------- pointwise */
enum { PW_X = 1, PW_B, PW_Y };

typedef struct pw_ctx {
    dn_plan g;
} pw_ctx;

static void pw_teardown(void *p)
{
    pw_ctx *c = p;
    if (!c)
        return;
    dn_close(&c->g);
    free(c);
}

/* What an attempt asked of a RELU_FWD beyond mode and slope. */
enum { PW_ASK_NAN = 1, PW_ASK_UPPER = 2 };

/* One attempt: the pointwise graph over tensors of nd dims. relu with
 * `extras`: also ask for NaN propagation (torch.relu(NaN) is NaN; the
 * attribute is deprecated) and an upper clip of +Inf (relu(+Inf) = +Inf,
 * where a default clip at the largest finite value would not give it); the
 * bits of *got say which of the two cuDNN accepted. */
static int pw_try(pw_ctx *c, cudnnPointwiseMode_t mode, bool relu, bool extras, double slope,
                  int n_in, cudnnDataType_t dt, int nd, const int64_t *dims, const int64_t *strides,
                  const char *what, kgate_stream s, int *got, kg_err *err)
{
    cudnnBackendDescriptor_t t[3] = {0}, pw = NULL, op = NULL;
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    *got = 0;
    if (dn_tensor(&t[0], PW_X, dt, nd, dims, strides, false, err) ||
        (n_in == 2 && dn_tensor(&t[1], PW_B, dt, nd, dims, strides, false, err)) ||
        dn_tensor(&t[2], PW_Y, dt, nd, dims, strides, false, err))
        goto out;
    KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &pw));
    KG_CUDNN(DN->cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
    KG_CUDNN(DN->cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec));
    if (relu && extras) {
        cudnnNanPropagation_t nan = CUDNN_PROPAGATE_NAN;
        double upper = (double)INFINITY;
        if (DN->cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_NAN_PROPAGATION,
                                         CUDNN_TYPE_NAN_PROPOGATION, 1, &nan) == CUDNN_STATUS_SUCCESS)
            *got |= PW_ASK_NAN;
        if (DN->cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, CUDNN_TYPE_DOUBLE,
                                         1, &upper) == CUDNN_STATUS_SUCCESS)
            *got |= PW_ASK_UPPER;
    }
    if (relu && slope != 0.0)
        KG_CUDNN(DN->cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE, CUDNN_TYPE_DOUBLE, 1, &slope));
    KG_CUDNN(DN->cudnnBackendFinalize(pw));
    KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, &op));
    KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw));
    KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[0]));
    if (n_in == 2)
        KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[1]));
    KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[2]));
    KG_CUDNN(DN->cudnnBackendFinalize(op));
    dn_pick(&c->g, op, what, s, err);
out:
    if (op)
        DN->cudnnBackendDestroyDescriptor(op);
    if (pw)
        DN->cudnnBackendDestroyDescriptor(pw);
    destroy_all(t, 3);
    return err->code;
}

/* n_in: 1 (x -> y) or 2 (x, y -> z). Attempts: the [1, rows, cols] view,
 * then [rows, cols, 1, 1]; for relu each first with the extra attributes,
 * then without. */
static int pw_setup(const DLTensor *in, DLTensor *out, int n_in, cudnnPointwiseMode_t mode,
                    const char *mode_name, bool relu, double slope, kgate_stream s, void **ctx,
                    char *note, size_t note_size, kg_err *err)
{
    pw_ctx *c = NULL;
    kg_dtype dt = kg_tensor_dtype(&in[0]);
    int64_t n = kg_tensor_numel(&in[0]);
    int64_t cols = in[0].ndim >= 2 ? in[0].shape[in[0].ndim - 1] : kg_divisor_upto(n, 16384);
    int64_t rows = cols > 0 ? n / cols : 0;
    char why[4][200] = {"", "", "", ""};
    char what[64];
    snprintf(what, sizeof what, "pointwise %s", mode_name);
    if (n < 1 || rows * cols != n)
        return kg_err_set(err, KG_EXIT_ENV, "cuDNN %s: cannot view %lld elements as rows x cols",
                          what, (long long)n);
    if (!kg_cudnn_load(err))
        return err->code;
    c = calloc(1, sizeof *c);
    if (!c)
        return kg_err_set(err, KG_EXIT_ENV, "out of host memory");
    KG_CUDNN(DN->cudnnCreate(&c->g.h));
    for (int a = 0; a < 4; a++) {
        kg_err e2 = {0, ""};
        int view = a / 2, got = 0;
        bool extras = a % 2 == 0;
        int64_t d3[3] = {1, rows, cols}, s3[3] = {rows * cols, cols, 1};
        int64_t d4[4] = {rows, cols, 1, 1}, s4[4] = {cols, 1, 1, 1};
        if (!extras && !relu)
            continue; /* add, mul: nothing extra to leave out */
        c->g.n_uids = 0;
        dn_add_uid(&c->g, PW_X, in[0].data);
        if (n_in == 2)
            dn_add_uid(&c->g, PW_B, in[1].data);
        dn_add_uid(&c->g, PW_Y, out[0].data);
        if (pw_try(c, mode, relu, extras, slope, n_in, kg_cudnn_type(dt), view == 0 ? 3 : 4,
                   view == 0 ? d3 : d4, view == 0 ? s3 : s4, what, s, &got, &e2) == 0) {
            snprintf(note, note_size,
                     "cuDNN %zu graph API pointwise %s (fp32 math%s%s%s), view [%s%lld,%lld%s], "
                     "fastest of the first %lld of %lld engine configs (config %d)",
                     DN->cudnnGetVersion(), mode_name,
                     slope != 0.0 ? ", lower clip slope = negative_slope" : "",
                     relu ? (got & PW_ASK_NAN ? ", NaN propagation" : ", no NaN propagation attribute") : "",
                     relu ? (got & PW_ASK_UPPER ? ", upper clip +Inf" : ", default upper clip") : "",
                     view == 0 ? "1," : "", (long long)rows, (long long)cols, view == 0 ? "" : ",1,1",
                     (long long)(c->g.n_cfg < DN_TRY_CFG ? c->g.n_cfg : DN_TRY_CFG),
                     (long long)c->g.n_cfg, c->g.cfg_index + 1);
            *ctx = c;
            return 0;
        }
        snprintf(why[a], sizeof why[a], "%.190s", e2.msg);
    }
    kg_err_set(err, KG_EXIT_ENV,
               "cuDNN %s unsupported here for %s: [1,%lld,%lld]: %.200s%s%.200s | [%lld,%lld,1,1]: %.200s%s%.200s",
               what, kg_dtype_name(dt), (long long)rows, (long long)cols, why[0],
               why[1][0] ? " | plain: " : "", why[1], (long long)rows, (long long)cols, why[2],
               why[3][0] ? " | plain: " : "", why[3]);
out:
    pw_teardown(c);
    return err->code;
}

static int pw_add_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                        kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    return pw_setup(in, out, 2, CUDNN_POINTWISE_ADD, "ADD", false, 0.0, s, ctx, note, note_size, err);
}

static int pw_mul_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                        kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    return pw_setup(in, out, 2, CUDNN_POINTWISE_MUL, "MUL", false, 0.0, s, ctx, note, note_size, err);
}

static int pw_relu_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                         kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    return pw_setup(in, out, 1, CUDNN_POINTWISE_RELU_FWD, "RELU_FWD", true, 0.0, s, ctx, note,
                    note_size, err);
}

static int pw_leaky_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                          kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    /* a zero slope is plain relu: RELU_FWD without the slope attribute */
    return pw_setup(in, out, 1, CUDNN_POINTWISE_RELU_FWD, "RELU_FWD", true,
                    kgate_scalar_get(p, "negative_slope", 0.01), s, ctx, note, note_size, err);
}

const kg_baseline kg_baseline_cudnn_pointwise_add = {"cudnn-pointwise-add", "cuDNN", pw_add_setup,
                                                     dn_launch, pw_teardown};
const kg_baseline kg_baseline_cudnn_pointwise_mul = {"cudnn-pointwise-mul", "cuDNN", pw_mul_setup,
                                                     dn_launch, pw_teardown};
const kg_baseline kg_baseline_cudnn_pointwise_relu = {"cudnn-pointwise-relu", "cuDNN", pw_relu_setup,
                                                      dn_launch, pw_teardown};
const kg_baseline kg_baseline_cudnn_pointwise_leaky_relu = {
    "cudnn-pointwise-leaky-relu", "cuDNN", pw_leaky_setup, dn_launch, pw_teardown};

/* ---------------------------------------------------------- layer/rms norm */
enum { UID_X = 1, UID_SCALE, UID_BIAS, UID_EPS, UID_Y, UID_MEAN, UID_INVVAR, N_UID = 7 };

typedef struct norm_ctx {
    dn_plan g;
    int rms;
    float eps;
    void *scale32, *bias32, *stats;
} norm_ctx;

static void norm_teardown(void *p)
{
    norm_ctx *c = p;
    if (!c)
        return;
    dn_close(&c->g);
    cudaFree(c->scale32);
    cudaFree(c->bias32);
    cudaFree(c->stats);
    free(c);
}

/* One attempt at a plan. ptr[uid]: the data pointer of each tensor.
 * training: the training phase with fp32 stats outputs (RMS norm: inverse
 * variance only). */
static int norm_try(norm_ctx *c, void *const *ptr, cudnnDataType_t xt, cudnnDataType_t st,
                    int training, int64_t rows, int64_t cols, kgate_stream s, char *note,
                    size_t note_size, kg_err *err)
{
    cudnnBackendDescriptor_t t[N_UID + 1] = {0}, op = NULL;
    int64_t xd[4] = {rows, cols, 1, 1}, xs[4] = {cols, 1, 1, 1};
    int64_t wd[4] = {1, cols, 1, 1}, ws[4] = {cols, 1, 1, 1};
    int64_t sd[4] = {rows, 1, 1, 1}, ss[4] = {1, 1, 1, 1};
    int64_t ed[4] = {1, 1, 1, 1};
    const char *what = c->rms ? "RMS norm" : "layer norm";
    bool use[N_UID + 1] = {false};
    use[UID_X] = use[UID_SCALE] = use[UID_EPS] = use[UID_Y] = true;
    use[UID_BIAS] = !c->rms;
    use[UID_MEAN] = training && !c->rms;
    use[UID_INVVAR] = training;
    if (dn_tensor(&t[UID_X], UID_X, xt, 4, xd, xs, false, err) ||
        dn_tensor(&t[UID_SCALE], UID_SCALE, st, 4, wd, ws, false, err) ||
        (use[UID_BIAS] && dn_tensor(&t[UID_BIAS], UID_BIAS, st, 4, wd, ws, false, err)) ||
        dn_tensor(&t[UID_EPS], UID_EPS, CUDNN_DATA_FLOAT, 4, ed, ss, true, err) ||
        dn_tensor(&t[UID_Y], UID_Y, xt, 4, xd, xs, false, err) ||
        (use[UID_MEAN] && dn_tensor(&t[UID_MEAN], UID_MEAN, CUDNN_DATA_FLOAT, 4, sd, ss, false, err)) ||
        (use[UID_INVVAR] && dn_tensor(&t[UID_INVVAR], UID_INVVAR, CUDNN_DATA_FLOAT, 4, sd, ss, false, err)))
        goto out;
    {
        cudnnBackendNormMode_t mode = c->rms ? CUDNN_RMS_NORM : CUDNN_LAYER_NORM;
        cudnnBackendNormFwdPhase_t phase = training ? CUDNN_NORM_FWD_TRAINING : CUDNN_NORM_FWD_INFERENCE;
        KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR, &op));
        KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_NORM_FWD_MODE, CUDNN_TYPE_NORM_MODE, 1, &mode));
        KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_NORM_FWD_PHASE, CUDNN_TYPE_NORM_FWD_PHASE, 1, &phase));
        KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_NORM_FWD_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[UID_X]));
        KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[UID_SCALE]));
        if (use[UID_BIAS])
            KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[UID_BIAS]));
        KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[UID_EPS]));
        KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_NORM_FWD_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[UID_Y]));
        if (use[UID_MEAN])
            KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[UID_MEAN]));
        if (use[UID_INVVAR])
            KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[UID_INVVAR]));
        KG_CUDNN(DN->cudnnBackendFinalize(op));
    }
    c->g.n_uids = 0;
    for (int u = 1; u <= N_UID; u++)
        if (use[u])
            dn_add_uid(&c->g, u, ptr[u]);
    if (dn_pick(&c->g, op, what, s, err))
        goto out;
    if (c->rms)
        snprintf(note, note_size, "cuDNN %zu graph API norm forward (RMS norm, %s, scale %s), engine config %d of %lld",
                 DN->cudnnGetVersion(), training ? "training phase" : "inference",
                 st == CUDNN_DATA_FLOAT ? "fp32" : "input dtype", c->g.cfg_index + 1,
                 (long long)c->g.n_cfg);
    else
        snprintf(note, note_size, "cuDNN %zu graph API norm forward (layer norm, %s, scale/bias %s), engine config %d of %lld",
                 DN->cudnnGetVersion(), training ? "training phase" : "inference",
                 st == CUDNN_DATA_FLOAT ? "fp32" : "input dtype", c->g.cfg_index + 1,
                 (long long)c->g.n_cfg);
out:
    if (op)
        DN->cudnnBackendDestroyDescriptor(op);
    destroy_all(t, N_UID + 1);
    return err->code;
}

/* fp32 copy of a [cols] tensor on the device, for the attempts that want it. */
static int stage_fp32(const DLTensor *t, void *dst, int64_t cols, kg_err *err)
{
    double *h = malloc(sizeof(double) * (size_t)cols);
    float *f = malloc(sizeof(float) * (size_t)cols);
    int rc = 0;
    if (!h || !f) {
        rc = kg_err_set(err, KG_EXIT_ENV, "out of host memory");
        goto done;
    }
    if ((rc = kg_tensor_to_host(t, h, err)) != 0)
        goto done;
    for (int64_t j = 0; j < cols; j++)
        f[j] = (float)h[j];
    if (cudaMemcpy(dst, f, sizeof(float) * (size_t)cols, cudaMemcpyHostToDevice) != cudaSuccess)
        rc = kg_err_set(err, KG_EXIT_ENV, "cannot stage an fp32 copy of the norm's scale/bias for cuDNN");
done:
    free(h);
    free(f);
    return rc;
}

/* rms: in = x, weight; else x, weight, bias. */
static int norm_setup(int rms, const DLTensor *in, DLTensor *out, const kgate_params *p,
                      kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    norm_ctx *c = NULL;
    kg_dtype dt = kg_tensor_dtype(&in[0]);
    int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    char why[3][300] = {"", "", ""};
    if (!kg_cudnn_load(err))
        return err->code;
    c = calloc(1, sizeof *c);
    if (!c)
        return kg_err_set(err, KG_EXIT_ENV, "out of host memory");
    c->rms = rms;
    KG_CUDNN(DN->cudnnCreate(&c->g.h));
    c->eps = (float)kgate_scalar_get(p, "eps", rms ? 1e-6 : 1e-5);
    KG_CUDA(cudaMalloc(&c->scale32, sizeof(float) * (size_t)cols));
    if (!rms)
        KG_CUDA(cudaMalloc(&c->bias32, sizeof(float) * (size_t)cols));
    KG_CUDA(cudaMalloc(&c->stats, 2 * sizeof(float) * (size_t)rows));
    if (stage_fp32(&in[1], c->scale32, cols, err) || (!rms && stage_fp32(&in[2], c->bias32, cols, err)))
        goto out;
    for (int attempt = 0; attempt < 3; attempt++) {
        kg_err e2 = {0, ""};
        int training = attempt == 2, fp32_scale = attempt >= 1;
        void *ptr[N_UID + 1] = {NULL};
        ptr[UID_X] = in[0].data;
        ptr[UID_SCALE] = fp32_scale ? c->scale32 : in[1].data;
        ptr[UID_BIAS] = rms ? NULL : fp32_scale ? c->bias32 : in[2].data;
        ptr[UID_EPS] = &c->eps;
        ptr[UID_Y] = out[0].data;
        /* layer norm: mean then inverse variance; RMS norm: inverse variance */
        ptr[UID_MEAN] = c->stats;
        ptr[UID_INVVAR] = rms ? c->stats : (float *)c->stats + rows;
        if (norm_try(c, ptr, kg_cudnn_type(dt), fp32_scale ? CUDNN_DATA_FLOAT : kg_cudnn_type(dt),
                     training, rows, cols, s, note, note_size, &e2) == 0) {
            *ctx = c;
            return 0;
        }
        snprintf(why[attempt], sizeof why[attempt], "%.290s", e2.msg);
    }
    kg_err_set(err, KG_EXIT_ENV, "cuDNN %s unsupported here: %.300s | %.300s | %.300s",
               rms ? "RMS norm" : "layer norm", why[0], why[1], why[2]);
out:
    norm_teardown(c);
    return err->code;
}

static int ln_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                    kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    return norm_setup(0, in, out, p, s, ctx, note, note_size, err);
}

static int rms_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                     kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    return norm_setup(1, in, out, p, s, ctx, note, note_size, err);
}

const kg_baseline kg_baseline_cudnn_layer_norm = {"cudnn-layernorm", "cuDNN", ln_setup, dn_launch,
                                                  norm_teardown};
const kg_baseline kg_baseline_cudnn_rms_norm = {"cudnn-rmsnorm", "cuDNN", rms_setup, dn_launch,
                                                norm_teardown};
