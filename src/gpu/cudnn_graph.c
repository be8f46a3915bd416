/* The shared cuDNN graph plumbing (cudnn_graph.h): descriptors, plans,
 * and the timed engine search. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_graph.h"
#include "check.h"
#include "timer.h"

void kg_dn_release(kg_dn_plan *g)
{
    if (g->pack)
        DN->cudnnBackendDestroyDescriptor(g->pack);
    if (g->plan)
        DN->cudnnBackendDestroyDescriptor(g->plan);
    cudaFree(g->ws);
    g->pack = g->plan = NULL;
    g->ws = NULL;
}

void kg_dn_close(kg_dn_plan *g)
{
    kg_dn_release(g);
    if (g->h)
        DN->cudnnDestroy(g->h);
    g->h = NULL;
}

int kg_dn_launch(void *p, kgate_stream s, kg_err *err)
{
    kg_dn_plan *g = p;
    KG_CUDNN(DN->cudnnSetStream(g->h, (cudaStream_t)s));
    KG_CUDNN(DN->cudnnBackendExecute(g->h, g->plan, g->pack));
    return 0;
out:
    return err->code;
}

static int dn_cb(void *p, int set, kgate_stream s, kg_err *err)
{
    (void)set;
    return kg_dn_launch(p, s, err);
}

void kg_dn_add_uid(kg_dn_plan *g, int64_t uid, void *ptr)
{
    g->uids[g->n_uids] = uid;
    g->ptrs[g->n_uids] = ptr;
    g->n_uids++;
}

int kg_dn_tensor(cudnnBackendDescriptor_t *d, int64_t uid, cudnnDataType_t dt, int nd,
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

void kg_dn_destroy_all(cudnnBackendDescriptor_t *d, int n)
{
    for (int i = 0; i < n; i++)
        if (d[i])
            DN->cudnnBackendDestroyDescriptor(d[i]);
}

/* The engine configs heuristics mode A offers for a graph of ops. */
typedef struct dn_offer {
    cudnnBackendDescriptor_t graph, heur, cfgs[KG_DN_MAX_CFG];
    int64_t n_cfg;
} dn_offer;

static void dn_offer_free(dn_offer *o)
{
    kg_dn_destroy_all(o->cfgs, KG_DN_MAX_CFG);
    if (o->heur)
        DN->cudnnBackendDestroyDescriptor(o->heur);
    if (o->graph)
        DN->cudnnBackendDestroyDescriptor(o->graph);
}

static int dn_offer_get(kg_dn_plan *g, const cudnnBackendDescriptor_t *ops, int n_ops, dn_offer *o, kg_err *err)
{
    cudnnBackendHeurMode_t hm = CUDNN_HEUR_MODE_A;
    memset(o, 0, sizeof *o);
    KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &o->graph));
    KG_CUDNN(DN->cudnnBackendSetAttribute(o->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n_ops, ops));
    KG_CUDNN(DN->cudnnBackendSetAttribute(o->graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &g->h));
    KG_CUDNN(DN->cudnnBackendFinalize(o->graph));
    KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &o->heur));
    KG_CUDNN(DN->cudnnBackendSetAttribute(o->heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &o->graph));
    KG_CUDNN(DN->cudnnBackendSetAttribute(o->heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &hm));
    KG_CUDNN(DN->cudnnBackendFinalize(o->heur));
    for (int i = 0; i < KG_DN_MAX_CFG; i++)
        KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &o->cfgs[i]));
    KG_CUDNN(DN->cudnnBackendGetAttribute(o->heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, KG_DN_MAX_CFG, &o->n_cfg, o->cfgs));
    g->n_cfg = o->n_cfg;
    return 0;
out:
    return err->code;
}

/* A built plan of one engine config, its variant pack (g's uids and
 * pointers) and its workspace. */
typedef struct dn_built {
    cudnnBackendDescriptor_t plan, pack;
    void *ws;
} dn_built;

static void dn_built_free(dn_built *b)
{
    if (b->pack)
        DN->cudnnBackendDestroyDescriptor(b->pack);
    if (b->plan)
        DN->cudnnBackendDestroyDescriptor(b->plan);
    cudaFree(b->ws);
    memset(b, 0, sizeof *b);
}

static int dn_build(kg_dn_plan *g, cudnnBackendDescriptor_t cfg, dn_built *b, kg_err *err)
{
    int64_t ws_size = 0;
    memset(b, 0, sizeof *b);
    KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &b->plan));
    KG_CUDNN(DN->cudnnBackendSetAttribute(b->plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &g->h));
    KG_CUDNN(DN->cudnnBackendSetAttribute(b->plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg));
    KG_CUDNN(DN->cudnnBackendFinalize(b->plan));
    KG_CUDNN(DN->cudnnBackendGetAttribute(b->plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, NULL, &ws_size));
    if (ws_size > 0)
        KG_CUDA(cudaMalloc(&b->ws, (size_t)ws_size));
    KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &b->pack));
    KG_CUDNN(DN->cudnnBackendSetAttribute(b->pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, g->n_uids, g->uids));
    KG_CUDNN(DN->cudnnBackendSetAttribute(b->pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, g->n_uids, g->ptrs));
    KG_CUDNN(DN->cudnnBackendSetAttribute(b->pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &b->ws));
    KG_CUDNN(DN->cudnnBackendFinalize(b->pack));
    return 0;
out:
    return err->code;
}

/* g takes b over (config `index`), releasing what it held. */
static void dn_keep(kg_dn_plan *g, dn_built *b, int index)
{
    kg_dn_release(g);
    g->plan = b->plan;
    g->pack = b->pack;
    g->ws = b->ws;
    g->cfg_index = index;
    memset(b, 0, sizeof *b);
}

/* Builds a plan for one engine config and times it; keeps it in g when it
 * beats *best_t. Returns non-zero (with err) when the config cannot run. */
static int dn_try_cfg(kg_dn_plan *g, cudnnBackendDescriptor_t cfg, int index, kgate_stream s, double *best_t,
                      kg_err *err)
{
    dn_built b;
    if (dn_build(g, cfg, &b, err) == 0) {
        kg_dn_plan trial = *g;
        kg_timer_cfg tc;
        kg_timing tm;
        trial.plan = b.plan;
        trial.pack = b.pack;
        kg_timer_defaults(&tc);
        tc.stop.min_samples = 5;
        tc.stop.min_gpu_s = 0.01;
        tc.stop.max_wall_s = 1.0;
        tc.stop.max_samples = 200;
        tc.warmup = 1;
        tc.batch_below_s = 0;
        if (kg_time(&tc, dn_cb, &trial, s, &tm, err) == 0 && tm.st.median < *best_t) {
            *best_t = tm.st.median;
            dn_keep(g, &b, index);
        }
    }
    dn_built_free(&b);
    return err->code;
}

int kg_dn_pick(kg_dn_plan *g, const cudnnBackendDescriptor_t *ops, int n_ops, int max_try, const char *what,
               kgate_stream s, kg_err *err)
{
    dn_offer o;
    double best_t = 1e30;
    int best = -1;
    char why[256] = "";
    if (dn_offer_get(g, ops, n_ops, &o, err))
        goto out;
    if (o.n_cfg == 0) {
        kg_err_set(err, KG_EXIT_ENV, "cuDNN heuristics offer no engine for %s", what);
        goto out;
    }
    for (int i = 0; i < o.n_cfg && i < max_try; i++) {
        kg_err e2 = {0, ""};
        if (dn_try_cfg(g, o.cfgs[i], i, s, &best_t, &e2) == 0)
            best = g->cfg_index, g->n_tried++;
        else if (!why[0])
            snprintf(why, sizeof why, "%.250s", e2.msg);
    }
    if (best < 0)
        kg_err_set(err, KG_EXIT_ENV, "no cuDNN %s engine config ran (%lld offered): %s", what,
                   (long long)o.n_cfg, why);
out:
    dn_offer_free(&o);
    return err->code;
}

int kg_dn_pick_among(kg_dn_plan *g, const cudnnBackendDescriptor_t *ops, int n_ops, const int *indices, int n,
                     const char *what, kgate_stream s, kg_err *err)
{
    dn_offer o;
    double best_t = 1e30;
    int best = -1;
    char why[256] = "";
    if (dn_offer_get(g, ops, n_ops, &o, err))
        goto out;
    for (int i = 0; i < n; i++) {
        kg_err e2 = {0, ""};
        int dup = 0;
        for (int j = 0; j < i; j++)
            dup |= indices[j] == indices[i];
        if (dup || indices[i] < 0 || indices[i] >= o.n_cfg)
            continue;
        if (dn_try_cfg(g, o.cfgs[indices[i]], indices[i], s, &best_t, &e2) == 0)
            best = g->cfg_index;
        else if (!why[0])
            snprintf(why, sizeof why, "%.250s", e2.msg);
    }
    if (best < 0)
        kg_err_set(err, KG_EXIT_ENV, "none of the %d chosen cuDNN %s engine configs ran (%lld offered)%s%s", n, what,
                   (long long)o.n_cfg, why[0] ? ": " : "", why);
out:
    dn_offer_free(&o);
    return err->code;
}
