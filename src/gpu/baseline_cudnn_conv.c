/* cuDNN's convolution forward through the graph (backend) API: the library
 * path of conv2d ("cudnn-conv", NCHW) and of conv2d_nhwc ("cudnn-conv-nhwc");
 * the layout is given by strides alone. One operation, CONVOLUTION_FORWARD,
 * alpha 1 and beta 0, with a convolution descriptor: cross-correlation, fp32
 * compute, 2 spatial dims, the call's stride, its padding before and after,
 * dilation 1. x is [N,C,H,W], w [K,C/G,R,S], y [N,K,P,Q] as dims in both
 * layouts: grouped convolution (depthwise too) is expressed, as the graph
 * API expresses it, by the filter's channel extent C/GROUPS.
 *
 * The engine search is the graph API's cudnnFind: every engine config the
 * heuristics (mode A) offer, up to KG_DN_MAX_CFG, is built and timed, and
 * the fastest is kept (kg_dn_pick). The choice is remembered in kgate's
 * choice cache (store/choice_cache.h: $XDG_CACHE_HOME/kgate/choices.tsv),
 * keyed by cuDNN's version, the GPU's UUID, layout, dtype and geometry, so
 * that a later run at the same case times the remembered config against
 * the heuristics' first (the one cuDNN runs without a search) and keeps it
 * when it is faster; otherwise (stale, failing, or a sandbox keeping the
 * file out of reach) it searches again. The file is the user's: a candidate
 * run without --sandbox could rewrite it, and the race against the
 * heuristics' first keeps that from making the library path slower than
 * cuDNN's unsearched choice. The note says how many configs
 * were offered, how many ran, which was kept, and whether it was
 * remembered. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../store/choice_cache.h"
#include "../catalog/op.h"
#include "../base/text.h"
#include "baseline.h"
#include "check.h"
#include "cudnn_api.h"
#include "cudnn_graph.h"
#include "tensors.h"

enum { CV_UID_X = 1, CV_UID_W, CV_UID_Y };

/* The geometry of a call: N C H W K R S stride pad groups, then P Q. */
enum { G_N, G_C, G_H, G_W, G_K, G_R, G_S, G_U, G_PAD, G_GROUPS, G_P, G_Q, G_COUNT };

typedef struct conv_ctx {
    kg_dn_plan g;
} conv_ctx;

/* ------------------------------------------------ the remembered choices */
/* The key of a case in kgate's choice cache (store/choice_cache.h): cuDNN's
 * version, the GPU's UUID, layout, dtype and geometry. 0, or -1 when the
 * GPU cannot be named (then nothing is remembered). */
static int choice_key(int nhwc, kg_dtype dt, const int64_t *geo, char *key, size_t size)
{
    int dev = 0;
    struct cudaDeviceProp prop;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    size_t u = 0;
    int cut = kg_append(key, size, &u, "cudnn-conv %zu GPU-", DN->cudnnGetVersion());
    for (int i = 0; i < 16; i++)
        cut |= kg_append(key, size, &u, "%02x", (unsigned char)prop.uuid.bytes[i]);
    cut |= kg_append(key, size, &u, " %s %s", nhwc ? "NHWC" : "NCHW", kg_dtype_name(dt));
    for (int i = 0; i < G_COUNT; i++)
        cut |= kg_append(key, size, &u, "%c%lld", i ? 'x' : ' ', (long long)geo[i]);
    return cut ? -1 : 0; /* a key cut short could name another problem's choice */
}

/* ---------------------------------------------------------- the graph */
static void conv_teardown(void *p)
{
    conv_ctx *c = p;
    if (!c)
        return;
    kg_dn_close(&c->g);
    free(c);
}

/* The call's geometry from the tensors and the bound scalars stride, pad,
 * groups; non-zero (err) when they do not describe one convolution. */
static int conv_geometry(int nhwc, const DLTensor *in, const DLTensor *out, const kgate_params *p,
                         int64_t *geo, kg_err *err)
{
    const int64_t *x = in[0].shape, *w = in[1].shape, *y = out[0].shape;
    if (in[0].ndim != 4 || in[1].ndim != 4 || out[0].ndim != 4)
        return kg_err_set(err, KG_EXIT_ENV, "cuDNN convolution: expected 4-D x, w and y");
    int64_t cg = nhwc ? w[3] : w[1];
    geo[G_N] = x[0];
    geo[G_C] = nhwc ? x[3] : x[1];
    geo[G_H] = nhwc ? x[1] : x[2];
    geo[G_W] = nhwc ? x[2] : x[3];
    geo[G_K] = w[0];
    geo[G_R] = nhwc ? w[1] : w[2];
    geo[G_S] = nhwc ? w[2] : w[3];
    geo[G_U] = (int64_t)kgate_scalar_get(p, "stride", 0);
    geo[G_PAD] = (int64_t)kgate_scalar_get(p, "pad", -1);
    geo[G_GROUPS] = (int64_t)kgate_scalar_get(p, "groups", 0);
    if (geo[G_U] < 1 || geo[G_PAD] < 0 || geo[G_GROUPS] < 1 || cg * geo[G_GROUPS] != geo[G_C] ||
        geo[G_K] % geo[G_GROUPS] || geo[G_H] + 2 * geo[G_PAD] < geo[G_R] || geo[G_W] + 2 * geo[G_PAD] < geo[G_S])
        return kg_err_set(err, KG_EXIT_ENV, "cuDNN convolution: the tensors and the scalars stride, pad, "
                          "groups do not describe one convolution");
    geo[G_P] = (geo[G_H] + 2 * geo[G_PAD] - geo[G_R]) / geo[G_U] + 1;
    geo[G_Q] = (geo[G_W] + 2 * geo[G_PAD] - geo[G_S]) / geo[G_U] + 1;
    if (y[0] != geo[G_N] || y[nhwc ? 3 : 1] != geo[G_K] || y[nhwc ? 1 : 2] != geo[G_P] ||
        y[nhwc ? 2 : 3] != geo[G_Q])
        return kg_err_set(err, KG_EXIT_ENV, "cuDNN convolution: y is not [N,K,P,Q] of this geometry");
    return 0;
}

/* Strides of a [d0, d1, d2, d3] = [outer, channels, rows, cols] tensor,
 * channels first (NCHW) or last (NHWC). */
static void conv_strides(int nhwc, const int64_t *d, int64_t *s)
{
    s[3] = nhwc ? d[1] : 1;
    s[2] = nhwc ? d[3] * d[1] : d[3];
    s[1] = nhwc ? 1 : d[2] * d[3];
    s[0] = d[1] * d[2] * d[3];
}

/* The forward operation (finalized) over tensors t[0..2] = x, w, y. */
static int conv_operation(int nhwc, cudnnDataType_t dt, const int64_t *geo, cudnnBackendDescriptor_t *t,
                          cudnnBackendDescriptor_t *conv, cudnnBackendDescriptor_t *op, kg_err *err)
{
    int64_t xd[4] = {geo[G_N], geo[G_C], geo[G_H], geo[G_W]};
    int64_t wd[4] = {geo[G_K], geo[G_C] / geo[G_GROUPS], geo[G_R], geo[G_S]};
    int64_t yd[4] = {geo[G_N], geo[G_K], geo[G_P], geo[G_Q]};
    int64_t xs[4], ws[4], ys[4];
    int64_t two = 2, pads[2] = {geo[G_PAD], geo[G_PAD]}, strides[2] = {geo[G_U], geo[G_U]}, dil[2] = {1, 1};
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    float alpha = 1.0f, beta = 0.0f;
    conv_strides(nhwc, xd, xs);
    conv_strides(nhwc, wd, ws);
    conv_strides(nhwc, yd, ys);
    if (kg_dn_tensor(&t[0], CV_UID_X, dt, 4, xd, xs, false, err) ||
        kg_dn_tensor(&t[1], CV_UID_W, dt, 4, wd, ws, false, err) ||
        kg_dn_tensor(&t[2], CV_UID_Y, dt, 4, yd, ys, false, err))
        goto out;
    KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, conv));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &two));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pads));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pads));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, strides));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil));
    KG_CUDNN(DN->cudnnBackendFinalize(*conv));
    KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, op));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[0]));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[1]));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[2]));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, conv));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta));
    KG_CUDNN(DN->cudnnBackendFinalize(*op));
out:
    return err->code;
}

static int conv_setup(int nhwc, const DLTensor *in, DLTensor *out, const kgate_params *p, kgate_stream s,
                      void **ctx, char *note, size_t note_size, kg_err *err)
{
    conv_ctx *c = NULL;
    cudnnBackendDescriptor_t t[3] = {0}, conv = NULL, op = NULL;
    int64_t geo[G_COUNT];
    kg_dtype dt = kg_tensor_dtype(&in[0]);
    const char *layout = nhwc ? "NHWC" : "NCHW";
    int remembered_hit = 0;
    if (conv_geometry(nhwc, in, out, p, geo, err) || !kg_cudnn_load(err))
        return err->code;
    c = calloc(1, sizeof *c);
    if (!c)
        return kg_err_set(err, KG_EXIT_ENV, "out of host memory");
    KG_CUDNN(DN->cudnnCreate(&c->g.h));
    if (conv_operation(nhwc, kg_cudnn_type(dt), geo, t, &conv, &op, err))
        goto out;
    kg_dn_add_uid(&c->g, CV_UID_X, in[0].data);
    kg_dn_add_uid(&c->g, CV_UID_W, in[1].data);
    kg_dn_add_uid(&c->g, CV_UID_Y, out[0].data);
    {
        /* a choice remembered by an earlier search at this case, tried first */
        char key[KG_CHOICE_KEY], path[2048];
        int index = -1, tried = 0, keyed = choice_key(nhwc, dt, geo, key, sizeof key) == 0;
        kg_err e2 = {0, ""};
        if (keyed && kg_choice_path(path, sizeof path, &e2) != 0)
            keyed = 0;
        /* the remembered config is timed against the heuristics' first, the one
         * cuDNN runs without a search; when that one wins, the choice is stale (or
         * the file was rewritten by someone else): searched again */
        int among[2] = {0, 0};
        if (keyed && kg_choice_get(path, key, &index, &tried) == 0) {
            among[1] = index;
            if (kg_dn_pick_among(&c->g, &op, 1, among, 2, "convolution forward", s, &e2) == 0 &&
                c->g.cfg_index == index) {
                remembered_hit = 1;
                c->g.n_tried = tried;
            }
        }
        if (!remembered_hit) {
            /* none, or one that fails or loses now: the full search, remembered */
            if (kg_dn_pick(&c->g, &op, 1, KG_DN_MAX_CFG, "convolution forward", s, err))
                goto out;
            if (keyed)
                kg_choice_put(path, key, c->g.cfg_index, c->g.n_tried, &e2); /* a miss next time, at worst */
        }
    }
    snprintf(note, note_size,
             "cuDNN %zu graph API convolution forward (%s, cross-correlation, fp32 compute, stride %lld, "
             "pad %lld, groups %lld): engine config %d of the %lld offered, the fastest of the %d that ran%s",
             DN->cudnnGetVersion(), layout, (long long)geo[G_U], (long long)geo[G_PAD], (long long)geo[G_GROUPS],
             c->g.cfg_index + 1, (long long)c->g.n_cfg, c->g.n_tried,
             remembered_hit ? " (remembered from an earlier search at this case, kgate's choices.tsv, and timed "
                              "faster than the heuristics' first)"
                            : "");
    *ctx = c;
    c = NULL;
out:
    if (op)
        DN->cudnnBackendDestroyDescriptor(op);
    if (conv)
        DN->cudnnBackendDestroyDescriptor(conv);
    kg_dn_destroy_all(t, 3);
    conv_teardown(c);
    return err->code;
}

static int conv_nchw_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                           kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    return conv_setup(0, in, out, p, s, ctx, note, note_size, err);
}

static int conv_nhwc_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                           kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    return conv_setup(1, in, out, p, s, ctx, note, note_size, err);
}

const kg_baseline kg_baseline_cudnn_conv = {"cudnn-conv", "cuDNN", conv_nchw_setup, kg_dn_launch, conv_teardown, 0};
const kg_baseline kg_baseline_cudnn_conv_nhwc = {"cudnn-conv-nhwc", "cuDNN", conv_nhwc_setup, kg_dn_launch,
                                                 conv_teardown, 0};
