/* The cuDNN graph (backend) API plumbing that every graph baseline shares:
 * tensor descriptors, a plan with its variant pack, and the engine search
 * (heuristics mode A, then each offered engine config built and timed
 * through the timing engine, the fastest kept). The baselines themselves
 * (baseline_cudnn_graph.c and the per-family files) build their operations
 * and call kg_dn_pick. Every cuDNN call is checked (KG_CUDNN). */
#ifndef KG_CUDNN_GRAPH_H
#define KG_CUDNN_GRAPH_H

#include <stdbool.h>

#include <kgate/plugin.h>

#include "cudnn_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The loaded library; every setup loads it first (kg_cudnn_load). */
#define DN kg_cudnn_loaded()

enum { KG_DN_MAX_UIDS = 16, KG_DN_MAX_CFG = 32, KG_DN_TRY_CFG = 4 };

/* A built plan: the handle, the kept plan and its variant pack. A path's
 * context starts with one, so kg_dn_launch needs nothing else. */
typedef struct kg_dn_plan {
    cudnnHandle_t h;
    cudnnBackendDescriptor_t plan, pack;
    void *ws;
    int cfg_index; /* 0-based, of the kept config */
    int64_t n_cfg; /* configs the heuristics offered */
    int n_tried;   /* configs built and timed (those that ran) */
    int64_t uids[KG_DN_MAX_UIDS];
    void *ptrs[KG_DN_MAX_UIDS];
    int n_uids;
} kg_dn_plan;

/* Frees the plan, pack and workspace (not the handle). */
void kg_dn_release(kg_dn_plan *g);
/* kg_dn_release and the handle. */
void kg_dn_close(kg_dn_plan *g);
/* A baseline's launch: executes the kept plan on s (ctx is a kg_dn_plan *,
 * or a struct that starts with one). */
int kg_dn_launch(void *ctx, kgate_stream s, kg_err *err);
/* Binds a tensor uid to a device pointer in the variant pack. */
void kg_dn_add_uid(kg_dn_plan *g, int64_t uid, void *ptr);
/* A finalized tensor descriptor of nd dimensions (by_value: a host scalar). */
int kg_dn_tensor(cudnnBackendDescriptor_t *d, int64_t uid, cudnnDataType_t dt, int nd,
                 const int64_t *dims, const int64_t *strides, bool by_value, kg_err *err);
/* Destroys the non-NULL descriptors of d[0..n). */
void kg_dn_destroy_all(cudnnBackendDescriptor_t *d, int n);
/* Makes a graph of the n_ops finalized operations, asks heuristics mode A
 * for engine configs (up to KG_DN_MAX_CFG), builds and times up to max_try
 * of them, and keeps the fastest in g (g->h, g->uids and g->ptrs must be
 * set). `what` names the operation in messages. Fails (KG_EXIT_ENV, with
 * cuDNN's reason for the first config that failed) when none runs. */
int kg_dn_pick(kg_dn_plan *g, const cudnnBackendDescriptor_t *ops, int n_ops, int max_try, const char *what,
               kgate_stream s, kg_err *err);
/* kg_dn_pick over the configs at `indices` (0-based, in the heuristics'
 * order) only: each built and timed, the fastest kept in g. Indices the
 * heuristics do not offer now are passed over; fails when none runs. */
int kg_dn_pick_among(kg_dn_plan *g, const cudnnBackendDescriptor_t *ops, int n_ops, const int *indices, int n,
                     const char *what, kgate_stream s, kg_err *err);

#ifdef __cplusplus
}
#endif
#endif
