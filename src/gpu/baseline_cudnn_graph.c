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

#include "../catalog/op.h"
#include "baseline.h"
#include "check.h"
#include "cudnn_api.h"
#include "cudnn_graph.h"
#include "tensors.h"
#include "timer.h"

/* ---------------------------------------------------------------- pointwise */
enum { PW_X = 1, PW_B, PW_Y };

typedef struct pw_ctx {
    kg_dn_plan g;
} pw_ctx;

static void pw_teardown(void *p)
{
    pw_ctx *c = p;
    if (!c)
        return;
    kg_dn_close(&c->g);
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
    if (kg_dn_tensor(&t[0], PW_X, dt, nd, dims, strides, false, err) ||
        (n_in == 2 && kg_dn_tensor(&t[1], PW_B, dt, nd, dims, strides, false, err)) ||
        kg_dn_tensor(&t[2], PW_Y, dt, nd, dims, strides, false, err))
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
    kg_dn_pick(&c->g, &op, 1, KG_DN_TRY_CFG, what, s, err);
out:
    if (op)
        DN->cudnnBackendDestroyDescriptor(op);
    if (pw)
        DN->cudnnBackendDestroyDescriptor(pw);
    kg_dn_destroy_all(t, 3);
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
        kg_dn_add_uid(&c->g, PW_X, in[0].data);
        if (n_in == 2)
            kg_dn_add_uid(&c->g, PW_B, in[1].data);
        kg_dn_add_uid(&c->g, PW_Y, out[0].data);
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
                     (long long)(c->g.n_cfg < KG_DN_TRY_CFG ? c->g.n_cfg : KG_DN_TRY_CFG),
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
                                                     kg_dn_launch, pw_teardown, 0};
const kg_baseline kg_baseline_cudnn_pointwise_mul = {"cudnn-pointwise-mul", "cuDNN", pw_mul_setup,
                                                     kg_dn_launch, pw_teardown, 0};
const kg_baseline kg_baseline_cudnn_pointwise_relu = {"cudnn-pointwise-relu", "cuDNN", pw_relu_setup,
                                                      kg_dn_launch, pw_teardown, 0};
const kg_baseline kg_baseline_cudnn_pointwise_leaky_relu = {
    "cudnn-pointwise-leaky-relu", "cuDNN", pw_leaky_setup, kg_dn_launch, pw_teardown, 0};

/* ---------------------------------------------------------- layer/rms norm */
enum { UID_X = 1, UID_SCALE, UID_BIAS, UID_EPS, UID_Y, UID_MEAN, UID_INVVAR, N_UID = 7 };

typedef struct norm_ctx {
    kg_dn_plan g;
    int rms;
    float eps;
    void *scale32, *bias32, *stats;
} norm_ctx;

static void norm_teardown(void *p)
{
    norm_ctx *c = p;
    if (!c)
        return;
    kg_dn_close(&c->g);
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
    if (kg_dn_tensor(&t[UID_X], UID_X, xt, 4, xd, xs, false, err) ||
        kg_dn_tensor(&t[UID_SCALE], UID_SCALE, st, 4, wd, ws, false, err) ||
        (use[UID_BIAS] && kg_dn_tensor(&t[UID_BIAS], UID_BIAS, st, 4, wd, ws, false, err)) ||
        kg_dn_tensor(&t[UID_EPS], UID_EPS, CUDNN_DATA_FLOAT, 4, ed, ss, true, err) ||
        kg_dn_tensor(&t[UID_Y], UID_Y, xt, 4, xd, xs, false, err) ||
        (use[UID_MEAN] && kg_dn_tensor(&t[UID_MEAN], UID_MEAN, CUDNN_DATA_FLOAT, 4, sd, ss, false, err)) ||
        (use[UID_INVVAR] && kg_dn_tensor(&t[UID_INVVAR], UID_INVVAR, CUDNN_DATA_FLOAT, 4, sd, ss, false, err)))
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
            kg_dn_add_uid(&c->g, u, ptr[u]);
    if (kg_dn_pick(&c->g, &op, 1, KG_DN_TRY_CFG, what, s, err))
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
    kg_dn_destroy_all(t, N_UID + 1);
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

const kg_baseline kg_baseline_cudnn_layer_norm = {"cudnn-layernorm", "cuDNN", ln_setup, kg_dn_launch,
                                                  norm_teardown, 0};
const kg_baseline kg_baseline_cudnn_rms_norm = {"cudnn-rmsnorm", "cuDNN", rms_setup, kg_dn_launch,
                                                norm_teardown, 0};
