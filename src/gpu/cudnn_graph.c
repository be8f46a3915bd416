/* The shared cuDNN graph plumbing (cudnn_graph.h): descriptors, plans,
 * and the timed engine search. */
#include <stdio.h>
#include <stdlib.h>

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

/* Builds a plan for one engine config and times it; keeps it in g when it
 * beats *best_t. Returns non-zero (with err) when the config cannot run. */
static int kg_dn_try_cfg(kg_dn_plan *g, cudnnBackendDescriptor_t cfg, int index, kgate_stream s,
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
        kg_dn_plan trial = *g;
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
            kg_dn_release(g);
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

int kg_dn_pick(kg_dn_plan *g, const cudnnBackendDescriptor_t *ops, int n_ops, int max_try, const char *what,
               kgate_stream s, kg_err *err)
{
    cudnnBackendDescriptor_t graph = NULL, heur = NULL, cfgs[KG_DN_MAX_CFG] = {0};
    int64_t n_cfg = 0;
    double best_t = 1e30;
    int best = -1;
    char why[256] = "";
    KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph));
    KG_CUDNN(DN->cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n_ops, ops));
    KG_CUDNN(DN->cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &g->h));
    KG_CUDNN(DN->cudnnBackendFinalize(graph));
    {
        cudnnBackendHeurMode_t hm = CUDNN_HEUR_MODE_A;
        KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
        KG_CUDNN(DN->cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph));
        KG_CUDNN(DN->cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &hm));
        KG_CUDNN(DN->cudnnBackendFinalize(heur));
    }
    for (int i = 0; i < KG_DN_MAX_CFG; i++)
        KG_CUDNN(DN->cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[i]));
    KG_CUDNN(DN->cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, KG_DN_MAX_CFG, &n_cfg, cfgs));
    if (n_cfg == 0) {
        kg_err_set(err, KG_EXIT_ENV, "cuDNN heuristics offer no engine for %s", what);
        goto out;
    }
    g->n_cfg = n_cfg;
    for (int i = 0; i < n_cfg && i < max_try; i++) {
        kg_err e2 = {0, ""};
        if (kg_dn_try_cfg(g, cfgs[i], i, s, &best_t, &e2) == 0)
            best = g->cfg_index, g->n_tried++;
        else if (!why[0])
            snprintf(why, sizeof why, "%.250s", e2.msg);
    }
    if (best < 0) {
        kg_err_set(err, KG_EXIT_ENV, "no cuDNN %s engine config ran (%lld offered): %s", what,
                   (long long)n_cfg, why);
        goto out;
    }
out:
    kg_dn_destroy_all(cfgs, KG_DN_MAX_CFG);
    if (heur)
        DN->cudnnBackendDestroyDescriptor(heur);
    if (graph)
        DN->cudnnBackendDestroyDescriptor(graph);
    return err->code;
}

