/* The worker's bench (inside src/gpu; worker.c, bench.c and wevents.c
 * share it): one job's tensors, scalars and the subject being measured, the
 * checks of its outputs against fp64 references (bench.c), and the events
 * the worker sends about it (wevents.c). */
#ifndef KG_BENCH_H
#define KG_BENCH_H

#include <cuda_runtime_api.h>
#include <dlpack/dlpack.h>
#include <stdint.h>
#include <stdio.h>

#include "../catalog/op.h"
#include "../catalog/problem.h"
#include "../catalog/tolerance.h"
#include "../protocol/proto.h"
#include "baseline.h"
#include "check.h"
#include "provider.h"
#include "timer.h"

#define KG_BENCH_SETS 8 /* input sets: one, or --hot's rotation */

/* One job's tensors, scalars and the subject being measured. */
typedef struct kg_bench {
    const kg_job *job;
    const kg_op *op;
    kg_types types;
    kg_shape shape; /* the job's, or one of its extra shapes */
    cudaStream_t s;
    int n_sets, n_in, n_out;
    DLTensor in[KG_BENCH_SETS][KG_MAX_TENSORS], out[KG_BENCH_SETS][KG_MAX_TENSORS];
    /* fp64 references: set 0 always, the others for re-checks. Computed
     * only after the subject's call and overwritten once compared, so that
     * no reference of the inputs a call is given exists while it runs. */
    double *ref[KG_BENCH_SETS][KG_MAX_TENSORS];
    char verify_msg[900];
    char collect_msg[400]; /* why returned results were refused (provider collect) */
    unsigned long long refill_seed; /* a timing's inputs: a secret per subject (refill_cb) */
    unsigned char extra_ok[KG_MAX_EXTRA]; /* the kernel's supports() of each extra shape, asked once */
    int failed; /* a fail event was sent: stop */
    kg_scalars scalars;
    kgate_params params;
    char msg[512];
    /* the subject */
    kg_subject who;
    char path[40];
    const kgate_kernel *kernel;
    const kg_provider *prov; /* the kernel's provider */
    double glue_sum;         /* host time the provider said was its glue, over a timing's samples */
    long glue_n, glue_over;  /* those samples, and those whose glue passed KG_PROVIDER_GLUE_MAX_S */
    const kgate_tunable *tunable; /* the job's configuration of it (kgate tune), or NULL */
    /* a problem outside the catalog: its provider gives inputs and references */
    const kg_problem *problem;
    const kg_provider *src;
    double ref_scale[KG_BENCH_SETS]; /* RMS of each set's reference (tolerance scaling) */
    double max_scaled_err;      /* max |out - ref| / (1 + |ref|) over the kernel's checks */
    const kg_baseline *baseline;
    void *bctx;
} kg_bench;

/* ---------------------------------------------------------------- events */

/* Where the events go: the descriptor of --fd, opened by the worker's main. */
void kg_wev_open(FILE *f);
void kg_wev_line(const char *s);
void kg_wev_emit(const kg_event *e);
kg_event kg_wev_new(kg_ev_kind kind, kg_subject who, const char *path);
kg_event kg_wev_subject(const kg_bench *b, kg_ev_kind kind);
void kg_wev_sum(const kg_bench *b, const char *name, double v);
void kg_wev_fail(const kg_bench *b, const char *kind, const char *msg);
void kg_wev_timing(const kg_bench *b, const kg_timing *t);

/* ----------------------------------------------------- inputs and checks */

void kg_bench_set_scalars(kg_bench *b, int alt);
int kg_bench_launch(void *p, int set, kgate_stream s, kg_err *err);
int kg_bench_free_refs(kg_bench *b, kg_err *err);
void kg_bench_free(kg_bench *b);
int kg_bench_alloc(kg_bench *b, kg_err *err);
int kg_bench_fill_on(kg_bench *b, int set, unsigned long long seed, int dist, kgate_stream s, kg_err *err);
int kg_bench_fill_inputs(kg_bench *b, int set, unsigned long long seed, kg_err *err);
int kg_bench_prepare_on(kg_bench *b, int set, kgate_stream s, kg_err *err);
int kg_bench_prepare_inputs(kg_bench *b, int set, kg_err *err);
uint64_t kg_bench_inputs_checksum(kg_bench *b, int set, kg_err *err);
int kg_bench_compute_refs(kg_bench *b, int set, kg_err *err);
int kg_bench_hide_refs(kg_bench *b, int set, kg_err *err);
int kg_bench_collect(kg_bench *b, int set, kg_err *err);
int kg_bench_compare(kg_bench *b, int set, kg_cmp *cmp, int *which, kg_err *err);
void kg_bench_describe_cmp(const kg_bench *b, const kg_cmp *cmp, char *d, size_t size);
int kg_bench_check_guards(kg_bench *b, int set, char *desc, size_t size, kg_err *err);
int kg_bench_check_dist(kg_bench *b, const char *what, unsigned long long seed, int edge, int alt,
                      int dist, int *pass, char *desc, size_t desc_size, kg_err *err);
int kg_bench_check_extra_shapes(kg_bench *b, kg_err *err);
int kg_bench_check_once(kg_bench *b, const char *what, unsigned long long seed, int edge, int alt,
                      int *pass, char *desc, size_t desc_size, kg_err *err);

#endif
