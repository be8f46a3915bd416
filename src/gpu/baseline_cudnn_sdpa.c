/* cuDNN's fused flash attention forward ("cudnn-sdpa") through the graph
 * (backend) API: the operation graph that cuDNN 9's fused attention engines
 * recognize as scaled dot-product attention, built operation by operation
 * as cudnn-frontend's SDPA node lowers it for backends before 9.21 (its
 * composite path: include/cudnn_frontend/node/scaled_dot_product_flash_attention.h,
 * softmax.h, diagonal_band_mask.h and utils/attn_score_modifiers.h; written
 * here from that structure, not copied). Tensors [B,H,S,D] as the operator's:
 *
 *   S1 = matmul(Q, K^T)                 K^T: K's memory as [B,H,D,S], strides [HSD,SD,1,D]
 *   S2 = S1 * scale                     pointwise MUL by a by-value fp32 1/sqrt(D)
 *   causal only:
 *     R = GEN_INDEX(S2, axis 2), C = GEN_INDEX(S2, axis 3)      int32 query, key index
 *     M = CMP_GE(R, C)                                          boolean: key <= query
 *     S3 = BINARY_SELECT(S2, -inf, M)                           by-value -inf (the lowest
 *                                                               float before cuDNN 9.10)
 *   MX = reduction MAX over keys of S3  [B,H,S,1]
 *   E = EXP(SUB(S3, MX)), Z = reduction ADD over keys of E  [B,H,S,1]
 *   Stats = ADD(MX, LOG(Z))             [B,H,S,1] fp32: virtual (inference) or written
 *   P = DIV(E, Z)                       in the input dtype (the second matmul's A type)
 *   O = matmul(P, V)
 *
 * Every virtual score tensor is fp32 and every operation computes in fp32
 * (the comparison in boolean). Attempts, the first that runs is kept: Stats
 * virtual, then Stats written to an fp32 buffer (the training graph); each
 * with the by-value scalars as 1-element tensors (as the frontend makes
 * them), then as [1,1,1,1]. The engine search is kg_dn_pick's (heuristics
 * mode A, the first KG_DN_TRY_CFG configs timed, the fastest kept). When no
 * attempt finalizes and runs, setup fails with cuDNN's reasons: the path
 * cannot run here (cuDNN's fused attention needs D a multiple of 8, at most
 * 256 on Hopper). */
#include <float.h>
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

/* uids: the bound tensors, then the virtual ones */
enum { U_Q = 1, U_KT, U_V, U_O, U_SCALE, U_NEGINF, U_STATS, U_VIRTUAL = 100 };

typedef struct sdpa_ctx {
    kg_dn_plan g;
    float scale, neg_inf; /* the by-value scalars: cuDNN reads them at execution */
    void *stats;          /* fp32 [B,H,S,1], the training graph's Stats */
} sdpa_ctx;

static void sdpa_teardown(void *p)
{
    sdpa_ctx *c = p;
    if (!c)
        return;
    kg_dn_close(&c->g);
    cudaFree(c->stats);
    free(c);
}

/* Every descriptor one attempt creates, destroyed together after the engine
 * search (the kept plan does not need them). */
enum { SD_MAX_DESC = 64 };
typedef struct sd_build {
    cudnnBackendDescriptor_t d[SD_MAX_DESC];
    int n;
    cudnnBackendDescriptor_t ops[16];
    int n_ops;
    int64_t next_virtual;
} sd_build;

static int sd_new(sd_build *b, cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t *out, kg_err *err)
{
    *out = NULL;
    if (b->n == SD_MAX_DESC)
        return kg_err_set(err, KG_EXIT_ENV, "cuDNN attention graph: more than %d descriptors", SD_MAX_DESC);
    KG_CUDNN(DN->cudnnBackendCreateDescriptor(type, out));
    b->d[b->n++] = *out;
    return 0;
out:
    return err->code;
}

enum { SD_REAL, SD_VIRTUAL, SD_VALUE };

/* A finalized tensor descriptor; virtual ones get the next free uid. */
static int sd_tensor(sd_build *b, cudnnBackendDescriptor_t *t, int64_t uid, cudnnDataType_t dt, int nd,
                     const int64_t *dims, const int64_t *strides, int kind, kg_err *err)
{
    int64_t align = 16;
    bool yes = true;
    if (kind == SD_VIRTUAL)
        uid = b->next_virtual++;
    if (sd_new(b, CUDNN_BACKEND_TENSOR_DESCRIPTOR, t, err))
        return err->code;
    KG_CUDNN(DN->cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, nd, dims));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, nd, strides));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
    KG_CUDNN(DN->cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
    if (kind == SD_VIRTUAL)
        KG_CUDNN(DN->cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes));
    if (kind == SD_VALUE)
        KG_CUDNN(DN->cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes));
    KG_CUDNN(DN->cudnnBackendFinalize(*t));
    return 0;
out:
    return err->code;
}

/* A pointwise operation y = mode(x[, b[, t]]) computed in `prec`; axis is
 * GEN_INDEX's. */
static int sd_pointwise(sd_build *b, cudnnPointwiseMode_t mode, cudnnDataType_t prec, int64_t axis,
                        cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t bb, cudnnBackendDescriptor_t t,
                        cudnnBackendDescriptor_t y, kg_err *err)
{
    cudnnBackendDescriptor_t pw, op;
    if (sd_new(b, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &pw, err))
        return err->code;
    KG_CUDNN(DN->cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
    KG_CUDNN(DN->cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec));
    if (mode == CUDNN_POINTWISE_GEN_INDEX)
        KG_CUDNN(DN->cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis));
    KG_CUDNN(DN->cudnnBackendFinalize(pw));
    if (sd_new(b, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, &op, err))
        return err->code;
    KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw));
    KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
    if (bb)
        KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &bb));
    if (t)
        KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t));
    KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
    KG_CUDNN(DN->cudnnBackendFinalize(op));
    b->ops[b->n_ops++] = op;
    return 0;
out:
    return err->code;
}

/* y = reduction of x over the dimensions where y has extent 1, in fp32. */
static int sd_reduce(sd_build *b, cudnnReduceTensorOp_t how, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y,
                     kg_err *err)
{
    cudnnBackendDescriptor_t rd, op;
    cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    if (sd_new(b, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, &rd, err))
        return err->code;
    KG_CUDNN(DN->cudnnBackendSetAttribute(rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32));
    KG_CUDNN(DN->cudnnBackendSetAttribute(rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &how));
    KG_CUDNN(DN->cudnnBackendFinalize(rd));
    if (sd_new(b, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, &op, err))
        return err->code;
    KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd));
    KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
    KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
    KG_CUDNN(DN->cudnnBackendFinalize(op));
    b->ops[b->n_ops++] = op;
    return 0;
out:
    return err->code;
}

/* c = a . b (batched over the leading dims), fp32 accumulation. */
static int sd_matmul(sd_build *b, cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t bm, cudnnBackendDescriptor_t c,
                     kg_err *err)
{
    cudnnBackendDescriptor_t md, op;
    cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    if (sd_new(b, CUDNN_BACKEND_MATMUL_DESCRIPTOR, &md, err))
        return err->code;
    KG_CUDNN(DN->cudnnBackendSetAttribute(md, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32));
    KG_CUDNN(DN->cudnnBackendFinalize(md));
    if (sd_new(b, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, &op, err))
        return err->code;
    KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a));
    KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &bm));
    KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c));
    KG_CUDNN(DN->cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &md));
    KG_CUDNN(DN->cudnnBackendFinalize(op));
    b->ops[b->n_ops++] = op;
    return 0;
out:
    return err->code;
}

/* Builds the graph of the module comment into b and binds its inputs. */
static int sdpa_graph(sd_build *b, sdpa_ctx *c, const DLTensor *in, int causal, int training, int rank4,
                      kg_err *err)
{
    const int64_t B = in[0].shape[0], H = in[0].shape[1], S = in[0].shape[2], D = in[0].shape[3];
    const cudnnDataType_t io = kg_cudnn_type(kg_tensor_dtype(&in[0])), f32 = CUDNN_DATA_FLOAT;
    const int64_t qd[4] = {B, H, S, D}, qs[4] = {H * S * D, S * D, D, 1};
    const int64_t ktd[4] = {B, H, D, S}, kts[4] = {H * S * D, S * D, 1, D};
    const int64_t sd[4] = {B, H, S, S}, ss[4] = {H * S * S, S * S, S, 1};
    const int64_t rd[4] = {B, H, S, 1}, rs[4] = {H * S, S, 1, 1};
    const int64_t one[4] = {1, 1, 1, 1};
    const int snd = rank4 ? 4 : 1; /* the by-value scalars' rank */
    cudnnBackendDescriptor_t q, kt, v, o, scale, neginf = NULL, stats, s1, s2, s3, mx, sub, e, z, lz, p;
    b->next_virtual = U_VIRTUAL;
    if (sd_tensor(b, &q, U_Q, io, 4, qd, qs, SD_REAL, err) || sd_tensor(b, &kt, U_KT, io, 4, ktd, kts, SD_REAL, err) ||
        sd_tensor(b, &v, U_V, io, 4, qd, qs, SD_REAL, err) || sd_tensor(b, &o, U_O, io, 4, qd, qs, SD_REAL, err) ||
        sd_tensor(b, &scale, U_SCALE, f32, snd, one, one, SD_VALUE, err) ||
        (causal && sd_tensor(b, &neginf, U_NEGINF, f32, snd, one, one, SD_VALUE, err)) ||
        sd_tensor(b, &stats, U_STATS, f32, 4, rd, rs, training ? SD_REAL : SD_VIRTUAL, err) ||
        sd_tensor(b, &s1, 0, f32, 4, sd, ss, SD_VIRTUAL, err) || sd_tensor(b, &s2, 0, f32, 4, sd, ss, SD_VIRTUAL, err) ||
        sd_tensor(b, &mx, 0, f32, 4, rd, rs, SD_VIRTUAL, err) || sd_tensor(b, &sub, 0, f32, 4, sd, ss, SD_VIRTUAL, err) ||
        sd_tensor(b, &e, 0, f32, 4, sd, ss, SD_VIRTUAL, err) || sd_tensor(b, &z, 0, f32, 4, rd, rs, SD_VIRTUAL, err) ||
        sd_tensor(b, &lz, 0, f32, 4, rd, rs, SD_VIRTUAL, err) || sd_tensor(b, &p, 0, io, 4, sd, ss, SD_VIRTUAL, err))
        return err->code;
    if (sd_matmul(b, q, kt, s1, err) ||
        sd_pointwise(b, CUDNN_POINTWISE_MUL, f32, 0, s1, scale, NULL, s2, err))
        return err->code;
    s3 = s2;
    if (causal) {
        cudnnBackendDescriptor_t row, col, mask;
        if (sd_tensor(b, &row, 0, CUDNN_DATA_INT32, 4, sd, ss, SD_VIRTUAL, err) ||
            sd_tensor(b, &col, 0, CUDNN_DATA_INT32, 4, sd, ss, SD_VIRTUAL, err) ||
            sd_tensor(b, &mask, 0, CUDNN_DATA_BOOLEAN, 4, sd, ss, SD_VIRTUAL, err) ||
            sd_tensor(b, &s3, 0, f32, 4, sd, ss, SD_VIRTUAL, err) ||
            sd_pointwise(b, CUDNN_POINTWISE_GEN_INDEX, f32, 2, s2, NULL, NULL, row, err) ||
            sd_pointwise(b, CUDNN_POINTWISE_GEN_INDEX, f32, 3, s2, NULL, NULL, col, err) ||
            sd_pointwise(b, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, 0, row, col, NULL, mask, err) ||
            sd_pointwise(b, CUDNN_POINTWISE_BINARY_SELECT, f32, 0, s2, neginf, mask, s3, err))
            return err->code;
    }
    if (sd_reduce(b, CUDNN_REDUCE_TENSOR_MAX, s3, mx, err) ||
        sd_pointwise(b, CUDNN_POINTWISE_SUB, f32, 0, s3, mx, NULL, sub, err) ||
        sd_pointwise(b, CUDNN_POINTWISE_EXP, f32, 0, sub, NULL, NULL, e, err) ||
        sd_reduce(b, CUDNN_REDUCE_TENSOR_ADD, e, z, err) ||
        sd_pointwise(b, CUDNN_POINTWISE_LOG, f32, 0, z, NULL, NULL, lz, err) ||
        sd_pointwise(b, CUDNN_POINTWISE_ADD, f32, 0, mx, lz, NULL, stats, err) ||
        sd_pointwise(b, CUDNN_POINTWISE_DIV, f32, 0, e, z, NULL, p, err) || sd_matmul(b, p, v, o, err))
        return err->code;
    c->g.n_uids = 0;
    c->g.n_cfg = 0;
    c->g.n_tried = 0;
    kg_dn_add_uid(&c->g, U_Q, in[0].data);
    kg_dn_add_uid(&c->g, U_KT, in[1].data);
    kg_dn_add_uid(&c->g, U_V, in[2].data);
    kg_dn_add_uid(&c->g, U_SCALE, &c->scale);
    if (causal)
        kg_dn_add_uid(&c->g, U_NEGINF, &c->neg_inf);
    if (training)
        kg_dn_add_uid(&c->g, U_STATS, c->stats);
    return 0;
}

/* One attempt: the graph, O bound, the engine search. */
static int sdpa_try(sdpa_ctx *c, const DLTensor *in, DLTensor *out, int causal, int training, int rank4,
                    kgate_stream s, kg_err *err)
{
    sd_build b;
    memset(&b, 0, sizeof b);
    if (sdpa_graph(&b, c, in, causal, training, rank4, err) == 0) {
        kg_dn_add_uid(&c->g, U_O, out[0].data);
        kg_dn_pick(&c->g, b.ops, b.n_ops, KG_DN_TRY_CFG, "fused attention", s, err);
    }
    kg_dn_destroy_all(b.d, b.n);
    return err->code;
}

/* cuDNN's own words in a KG_CUDNN message ("CALL failed at FILE:LINE:
 * STATUS: REASON"): what follows the location, or the whole message. */
static const char *sd_reason(const char *msg)
{
    const char *at = strncmp(msg, "DN->", 4) == 0 ? strstr(msg, " failed at ") : NULL;
    const char *colon = at ? strstr(at + 11, ": ") : NULL;
    return colon ? colon + 2 : msg;
}

static int sdpa_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p, kgate_stream s,
                      void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    sdpa_ctx *c = NULL;
    char why[4][160] = {"", "", "", ""};
    const int causal = kgate_scalar_get(p, "causal", 0) != 0;
    if (in[0].ndim != 4)
        return kg_err_set(err, KG_EXIT_ENV, "cuDNN fused attention: expected [B,H,S,D] tensors");
    const int64_t B = in[0].shape[0], H = in[0].shape[1], S = in[0].shape[2], D = in[0].shape[3];
    if (!kg_cudnn_load(err))
        return err->code;
    c = calloc(1, sizeof *c);
    if (!c)
        return kg_err_set(err, KG_EXIT_ENV, "out of host memory");
    KG_CUDNN(DN->cudnnCreate(&c->g.h));
    c->scale = (float)(1.0 / sqrt((double)D));
    /* the mask value cudnn-frontend uses: -inf from cuDNN 9.10, the lowest
     * float before */
    c->neg_inf = DN->cudnnGetVersion() >= 91000 ? -INFINITY : -FLT_MAX;
    KG_CUDA(cudaMalloc(&c->stats, sizeof(float) * (size_t)(B * H * S)));
    for (int a = 0; a < 4; a++) {
        kg_err e2 = {0, ""};
        const int training = a % 2, rank4 = a / 2;
        if (sdpa_try(c, in, out, causal, training, rank4, s, &e2) == 0) {
            snprintf(note, note_size,
                     "cuDNN %zu graph API fused attention: matmul Q.K^T, mul 1/sqrt(D)%s, softmax "
                     "(max, sub, exp, sum, div; stats %s), matmul P.V; fp32 inside, by-value scalars "
                     "%s; engine config %d of %lld",
                     DN->cudnnGetVersion(), causal ? ", causal mask (gen_index, cmp_ge, select -inf)" : "",
                     training ? "written" : "virtual", rank4 ? "[1,1,1,1]" : "[1]", c->g.cfg_index + 1,
                     (long long)c->g.n_cfg);
            *ctx = c;
            return 0;
        }
        snprintf(why[a], sizeof why[a], "%.150s", sd_reason(e2.msg));
    }
    kg_err_set(err, KG_EXIT_ENV,
               "cuDNN fused attention unsupported here (%lldx%lldx%lldx%lld, causal %d): stats virtual: %s | "
               "stats written: %s | [1,1,1,1] scalars: %s | %s",
               (long long)B, (long long)H, (long long)S, (long long)D, causal, why[0], why[1], why[2], why[3]);
out:
    sdpa_teardown(c);
    return err->code;
}

const kg_baseline kg_baseline_cudnn_sdpa = {"cudnn-sdpa", "cuDNN", sdpa_setup, kg_dn_launch, sdpa_teardown, 0};
