/* The worker: reads one job (protocol/proto.h) from stdin, and checks and times
 * a kernel, or the operator's library paths and the bundled fast variant,
 * or lists a candidate's table, reporting each step as an event. */
#include "worker.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../catalog/op.h"
#include "../catalog/plugin_check.h"
#include "../catalog/problem.h"
#include "../protocol/proto.h"
#include "../catalog/tune.h"
#include "../judge/verdict.h"
#include "../judge/result.h"
#include "../supervise/sandbox.h"
#include "../measure/stats.h"
#include "device.h"
#include "baseline.h"
#include "check.h"
#include "kfacts.h"
#include "profile.h"
#include "provider.h"
#include "provider_rtc.h"
#include "tensors.h"
#include "timer.h"
#include "trace.h"

#define MAX_SETS 8

static FILE *ev_out;
static char watch_note[400]; /* why launches could not be watched (--diagnose) */
static const kg_provider *py_provider; /* set by the Python host (kg_worker_main_with) */
static const char *opening;            /* kg_worker_opening() */
static int job_unsupported;            /* the kernel does not take the job's shape (the done event) */
static int candidate_ran;              /* a kernel job has opened its candidate */
static const kg_problem *opened_problem; /* the problem the opened candidate described, if any */
static void *so_handle;                   /* the last shared library opened */
static const kgate_tunables *so_tunables; /* its configuration spaces (kgate tune), or NULL */
/* where a kernel job's time goes before its checks (time/phase/...): the
 * hello, and the seconds opening the candidate and creating the context took */
static double t_hello, phase_open_s, phase_context_s;

/* ---------------------------------------------------------------- events */

/* One event line already serialized (kg_event_to_json's). */
static void emit_line(const char *s)
{
    if (s && ev_out) {
        fprintf(ev_out, "%s\n", s);
        fflush(ev_out);
    }
}

static void emit(const kg_event *e)
{
    char *s = kg_event_to_json(e);
    emit_line(s);
    free(s);
}

static kg_event ev(kg_ev_kind kind, kg_subject who, const char *path)
{
    kg_event e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.subject = who;
    if (path)
        snprintf(e.path, sizeof e.path, "%s", path);
    return e;
}

/* ------------------------------------------------------------ the bench */

/* One job's tensors, scalars and the subject being measured. */
typedef struct bench {
    const kg_job *job;
    const kg_op *op;
    kg_types types;
    kg_shape shape; /* the job's, or one of its extra shapes */
    cudaStream_t s;
    int n_sets, n_in, n_out;
    DLTensor in[MAX_SETS][KG_MAX_TENSORS], out[MAX_SETS][KG_MAX_TENSORS];
    /* fp64 references: set 0 always, the others for re-checks. Computed
     * only after the subject's call and overwritten once compared, so that
     * no reference of the inputs a call is given exists while it runs. */
    double *ref[MAX_SETS][KG_MAX_TENSORS];
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
    double ref_scale[MAX_SETS]; /* RMS of each set's reference (tolerance scaling) */
    double max_scaled_err;      /* max |out - ref| / (1 + |ref|) over the kernel's checks */
    const kg_baseline *baseline;
    void *bctx;
} bench;

static int check_once(bench *b, const char *what, unsigned long long seed, int edge, int alt,
                      int *pass, char *desc, size_t desc_size, kg_err *err);

/* An event about the bench's current subject (a library path or the
 * bundled variant carries its name). */
static kg_event subject_ev(const bench *b, kg_ev_kind kind)
{
    return ev(kind, b->who, b->who == KG_SUBJ_KERNEL ? NULL : b->path);
}

static void set_scalars(bench *b, int alt)
{
    kg_scalars_for_trial(b->op, &b->job->scalars, alt, &b->scalars);
    kg_scalars_bind(b->op, &b->shape, &b->scalars); /* stride, padding: this shape's */
    b->params.struct_size = sizeof b->params;
    b->params.n_scalars = (uint32_t)b->scalars.n;
    b->params.scalars = b->scalars.v;
    b->params.error = b->msg;
    b->params.error_size = sizeof b->msg;
}

static const char *subject_name(const bench *b)
{
    return b->who == KG_SUBJ_KERNEL ? b->job->kernel : b->path;
}

static int launch_cb(void *p, int set, kgate_stream s, kg_err *err)
{
    bench *b = p;
    if (b->baseline)
        return b->baseline->launch(b->bctx, s, err);
    b->msg[0] = '\0';
    int rc = b->tunable ? b->tunable->launch(b->in[set], b->n_in, b->out[set], b->n_out, &b->params,
                                             b->job->config, s)
                        : b->kernel->launch(b->in[set], b->n_in, b->out[set], b->n_out, &b->params, s);
    if (rc) {
        b->msg[sizeof b->msg - 1] = '\0';
        return kg_err_set(err, KG_EXIT_FAIL, "kernel '%s' returned error %d%s%.400s", b->kernel->name,
                          rc, b->msg[0] ? ": " : "", b->msg);
    }
    return 0;
}

/* Frees one buffer and forgets it (kg_err_set keeps the first failure). */
static int free_ref(double **p, kg_err *err)
{
    double *q = *p;
    *p = NULL;
    KG_CUDA(cudaFree(q));
out:
    return err->code;
}

/* Frees the fp64 references, every one; err gets the first failure. */
static int free_refs(bench *b, kg_err *err)
{
    for (int s = 0; s < MAX_SETS; s++)
        for (int i = 0; i < KG_MAX_TENSORS; i++)
            if (b->ref[s][i])
                free_ref(&b->ref[s][i], err);
    return err->code;
}

static void free_bench(bench *b)
{
    for (int s = 0; s < b->n_sets; s++) {
        for (int i = 0; i < b->n_in; i++)
            kg_tensor_free(&b->in[s][i]);
        for (int i = 0; i < b->n_out; i++)
            kg_tensor_free(&b->out[s][i]);
    }
    kg_err ignored = {0, ""};
    free_refs(b, &ignored);
}

static int alloc_bench(bench *b, kg_err *err)
{
    int64_t ext[KG_MAX_RANK];
    const kg_op *op = b->op;
    b->n_in = op->n_inputs;
    b->n_out = op->n_outputs;
    for (int s = 0; s < b->n_sets; s++) {
        for (int i = 0; i < op->n_inputs; i++) {
            kg_tensor_extents(&op->in[i], &b->shape, ext);
            if (kg_tensor_alloc(&b->in[s][i], kg_tensor_dtype_of(&op->in[i], b->types),
                                op->in[i].rank, ext, err))
                return err->code;
            b->in[s][i].device.device_id = b->job->device;
        }
        for (int i = 0; i < op->n_outputs; i++) {
            kg_tensor_extents(&op->out[i], &b->shape, ext);
            if (kg_tensor_alloc(&b->out[s][i], kg_tensor_dtype_of(&op->out[i], b->types),
                                op->out[i].rank, ext, err))
                return err->code;
            b->out[s][i].device.device_id = b->job->device;
        }
    }
    for (int i = 0; i < op->n_outputs; i++)
        KG_CUDA(cudaMalloc((void **)&b->ref[0][i], sizeof(double) * (size_t)kg_tensor_numel(&b->out[0][i])));
    return 0;
out:
    return err->code;
}

/* Fresh inputs for a set, queued on stream s: index inputs uniform over
 * their range, input 0 from distribution `dist` (kg_dist), the other data
 * inputs uniform; deterministic in the seed. */
static int fill_on(bench *b, int set, unsigned long long seed, int dist, kgate_stream s, kg_err *err)
{
    const kg_op *op = b->op;
    int64_t rows, cols;
    if (b->problem) {
        char msg[600] = "";
        if (b->src->inputs(b->src->self, seed, b->in[set], b->n_in, s, msg, sizeof msg)) {
            msg[sizeof msg - 1] = '\0';
            return kg_err_set(err, KG_EXIT_CANDIDATE, "the problem's inputs: %s", msg[0] ? msg : "failed");
        }
        return 0;
    }
    kg_input0_matrix(op, &b->shape, &rows, &cols);
    for (int i = 0; i < op->n_inputs; i++) {
        unsigned long long sd = seed * 1000003ull + (unsigned long long)i;
        int rc = op->in[i].gen == KG_GEN_INDEX
                     ? kg_tensor_fill_index(&b->in[set][i], b->shape.d[op->in[i].range_dim], sd, s, err)
                     : kg_tensor_fill_dist(&b->in[set][i], i == 0 ? dist : KG_DIST_UNIFORM,
                                           op->in[i].lo, op->in[i].hi, i == 0 ? cols : 1, sd, s, err);
        if (rc)
            return err->code;
    }
    return 0;
}

static int fill_dist(bench *b, int set, unsigned long long seed, int dist, kg_err *err)
{
    return fill_on(b, set, seed, dist, (kgate_stream)b->s, err);
}

static int fill_inputs(bench *b, int set, unsigned long long seed, kg_err *err)
{
    return fill_dist(b, set, seed, KG_DIST_UNIFORM, err);
}

static int plant_edges(bench *b, kg_err *err)
{
    const kg_op *op = b->op;
    int64_t rows, cols;
    kg_input0_matrix(op, &b->shape, &rows, &cols);
    if (op->in[0].type == KG_T_DATA &&
        kg_tensor_plant_edges(&b->in[0][0], rows, cols, (kgate_stream)b->s, err))
        return err->code;
    for (int i = 0; i < op->n_inputs; i++)
        if (op->in[i].gen == KG_GEN_INDEX &&
            kg_tensor_plant_index_edges(&b->in[0][i], b->shape.d[op->in[i].range_dim],
                                        (kgate_stream)b->s, err))
            return err->code;
    return 0;
}

static int prepare_on(bench *b, int set, kgate_stream s, kg_err *err)
{
    const kg_op *op = b->op;
    int rc = op->prepare ? op->prepare(b->in[set], b->n_in, &b->shape, &b->params, s) : 0;
    if (rc)
        return kg_err_set(err, KG_EXIT_ENV, "%s: preparing its inputs failed: %s", op->name,
                          cudaGetErrorString((cudaError_t)rc));
    return 0;
}

static int prepare_inputs(bench *b, int set, kg_err *err)
{
    return prepare_on(b, set, (kgate_stream)b->s, err);
}

static uint64_t inputs_checksum(bench *b, int set, kg_err *err)
{
    uint64_t sum = 0, one;
    for (int i = 0; i < b->n_in; i++) {
        if (kg_tensor_checksum(&b->in[set][i], &one, (kgate_stream)b->s, err))
            return 0;
        sum = sum * 31 + one;
    }
    return sum;
}

/* Computes a set's fp64 references from its inputs. Called only after the
 * subject's call on that set: a kernel that searched device memory for
 * kgate's reference (cuMemGetAddressRange walks) and copied it into its
 * output would otherwise pass without computing anything. */
static int compute_refs(bench *b, int set, kg_err *err)
{
    if (b->problem) {
        char msg[600] = "";
        KG_CUDA(cudaDeviceSynchronize());
        if (b->src->reference(b->src->self, b->in[set], b->n_in, b->ref[set], b->n_out, (kgate_stream)b->s,
                              &b->ref_scale[set], msg, sizeof msg)) {
            msg[sizeof msg - 1] = '\0';
            return kg_err_set(err, KG_EXIT_CANDIDATE, "the problem's reference: %s", msg[0] ? msg : "failed");
        }
        if (!isfinite(b->ref_scale[set]) || b->ref_scale[set] < 0)
            b->ref_scale[set] = 0;
        return 0;
    out:
        return err->code;
    }
    int rc = b->op->reference(b->in[set], b->n_in, b->ref[set], &b->params, (kgate_stream)b->s);
    if (rc)
        return kg_err_set(err, KG_EXIT_ENV, "the %s reference failed: %s", b->op->name,
                          cudaGetErrorString(rc > 0 ? (cudaError_t)rc : cudaGetLastError()));
    return 0;
}

/* Overwrites a set's references with NaN once they have been compared, so
 * that the next call finds none. */
static int hide_refs(bench *b, int set, kg_err *err)
{
    for (int o = 0; o < b->n_out; o++)
        KG_CUDA(cudaMemsetAsync(b->ref[set][o], 0xFF,
                                sizeof(double) * (size_t)kg_tensor_numel(&b->out[set][o]), b->s));
out:
    return err->code;
}

/* Results returned rather than written (a provider's collect): fetched into
 * the output buffers of `set` outside any timed call, and before the inputs'
 * checksum and the references, since the provider runs in the candidate's
 * process: whatever it runs then can neither change the inputs unseen nor
 * meet a reference in memory. Results refused as wrong in kind leave their
 * reason in b->collect_msg for compare_outputs. */
static int collect_outputs(bench *b, int set, kg_err *err)
{
    b->collect_msg[0] = '\0';
    if (!(b->kernel && b->prov && b->prov->collect))
        return 0;
    char msg[400] = "";
    int rc = b->prov->collect(b->prov->self, b->kernel, b->out[set], b->n_out, (kgate_stream)b->s, msg, sizeof msg);
    msg[sizeof msg - 1] = '\0';
    if (rc == 1)
        snprintf(b->collect_msg, sizeof b->collect_msg, "%s", msg[0] ? msg : "wrong results");
    else if (rc)
        return kg_err_set(err, KG_EXIT_FAIL, "kernel '%s': %s", b->kernel->name,
                          msg[0] ? msg : "its results could not be fetched");
    /* the whole device, as after a call: the copies, and anything else */
    cudaError_t ce = cudaDeviceSynchronize();
    if (ce == cudaSuccess)
        ce = cudaGetLastError();
    if (ce != cudaSuccess)
        return kg_err_set(err, KG_EXIT_FAIL, "kernel '%s', collecting its results: %s (%s)", b->kernel->name,
                          cudaGetErrorString(ce), cudaGetErrorName(ce));
    return 0;
}

/* Compares every output of a set with its reference; *cmp gets the first
 * failing output's comparison (or the last one), *which its index. Results
 * that collect_outputs refused compare as wrong. */
static int compare_outputs(bench *b, int set, kg_cmp *cmp, int *which, kg_err *err)
{
    const kg_op *op = b->op;
    *which = 0;
    if (b->collect_msg[0]) {
        memset(cmp, 0, sizeof *cmp);
        cmp->rel_l2 = cmp->max_abs_err = NAN;
        return 0;
    }
    for (int o = 0; o < b->n_out; o++) {
        kg_cmp c;
        int rc;
        if (op->out[o].cmp == KG_CMP_ARG) {
            rc = kg_tensor_compare_arg(&b->out[set][o], &b->in[set][0], b->ref[set][o], &c,
                                       (kgate_stream)b->s, err);
        } else {
            kg_tol tol = kg_op_tol(op, kg_tensor_dtype(&b->out[set][o]));
            if (b->problem && !kg_dtype_is_int(kg_tensor_dtype(&b->out[set][o])))
                kg_tol_scale(&tol, b->ref_scale[set]); /* outputs of large sums (catalog/problem.h) */
            rc = kg_tensor_compare(&b->out[set][o], b->ref[set][o], &tol, &c, (kgate_stream)b->s, err);
            if (!rc && !c.pass && op->tol_rms && !b->problem && kg_cmp_ref_rms(&c) > 1) {
                /* long sums: the same comparison with atol on the reference's scale */
                kg_tol_scale(&tol, kg_cmp_ref_rms(&c));
                rc = kg_tensor_compare(&b->out[set][o], b->ref[set][o], &tol, &c, (kgate_stream)b->s, err);
            }
            if (!rc && b->who == KG_SUBJ_KERNEL && !(c.max_scaled_err <= b->max_scaled_err))
                b->max_scaled_err = c.max_scaled_err;
        }
        if (rc)
            return err->code;
        if (o == 0 || !c.pass) {
            *cmp = c;
            *which = o;
        }
        if (!c.pass)
            break;
    }
    return 0;
}

/* What a comparison found, or why returned results were refused. */
static void describe_cmp(const bench *b, const kg_cmp *cmp, char *d, size_t size)
{
    if (b->collect_msg[0])
        snprintf(d, size, "%s", b->collect_msg);
    else
        kg_cmp_describe(cmp, d, size);
}

/* Checks the guard regions of every tensor of a set: 1 (and desc) when a
 * write went out of bounds. */
static int check_guards(bench *b, int set, char *desc, size_t size, kg_err *err)
{
    for (int t = 0; t < b->n_in + b->n_out; t++) {
        const DLTensor *x = t < b->n_in ? &b->in[set][t] : &b->out[set][t - b->n_in];
        const kg_tensor_spec *sp = t < b->n_in ? &b->op->in[t] : &b->op->out[t - b->n_in];
        int64_t before = 0, after = 0;
        if (kg_tensor_guard_check(x, &before, &after, (kgate_stream)b->s, err))
            return -1;
        if (before || after) {
            snprintf(desc, size, "wrote out of bounds: %lld byte(s) changed %s %s %s", (long long)(before + after),
                     before ? "before" : "after", t < b->n_in ? "input" : "output", sp->name);
            return 1;
        }
    }
    return 0;
}

/* Runs the subject once on set 0 against a fresh reference and reports a
 * check event. Returns 0 when the check ran (*pass says how it went), else
 * the error (a crash of the subject is KG_EXIT_FAIL). */
static int check_dist(bench *b, const char *what, unsigned long long seed, int edge, int alt,
                      int dist, int *pass, char *desc, size_t desc_size, kg_err *err)
{
    uint64_t before, after;
    kg_cmp cmp;
    int which = 0;
    set_scalars(b, alt);
    if (fill_dist(b, 0, seed, dist, err))
        return err->code;
    if ((edge && plant_edges(b, err)) || prepare_inputs(b, 0, err))
        return err->code;
    before = inputs_checksum(b, 0, err);
    if (err->code)
        return err->code;
    for (int i = 0; i < b->n_out; i++)
        if (kg_tensor_poison(&b->out[0][i], (kgate_stream)b->s, err))
            return err->code;
    if (launch_cb(b, 0, (kgate_stream)b->s, err))
        return err->code;
    {
        /* the whole device: work the subject left on another stream must
         * finish before its output is read and the reference is computed */
        cudaError_t rc = cudaDeviceSynchronize();
        if (rc == cudaSuccess)
            rc = cudaGetLastError();
        if (rc != cudaSuccess)
            return kg_err_set(err, KG_EXIT_FAIL, "%s, %s: %s (%s)", subject_name(b), what,
                              cudaGetErrorString(rc), cudaGetErrorName(rc));
    }
    if (collect_outputs(b, 0, err))
        return err->code;
    after = inputs_checksum(b, 0, err);
    if (err->code || compute_refs(b, 0, err) || compare_outputs(b, 0, &cmp, &which, err) ||
        hide_refs(b, 0, err))
        return err->code;
    int mutated = before != after;
    char d[800];
    describe_cmp(b, &cmp, d, sizeof d);
    if (b->n_out > 1 && !b->collect_msg[0])
        snprintf(desc, desc_size, "output %s: %s", b->op->out[which].name, d);
    else
        snprintf(desc, desc_size, "%s", d);
    if (mutated)
        snprintf(desc, desc_size, "the kernel modified its inputs");
    int oob = check_guards(b, 0, d, sizeof d, err);
    if (oob < 0)
        return err->code;
    if (oob) {
        cmp.pass = 0;
        snprintf(desc, desc_size, "%s", d);
    }
    if (alt) {
        size_t u = strlen(desc);
        for (int i = 0; i < b->scalars.n && u < desc_size; i++)
            if (b->scalars.v[i].value != b->job->scalars.v[i].value &&
                kg_op_scalar_extent(b->op, b->scalars.v[i].name) < 0) /* not a shape's stride */
                u += (size_t)snprintf(desc + u, desc_size - u, " [with %s = %g]",
                                      b->scalars.v[i].name, b->scalars.v[i].value);
    }
    *pass = cmp.pass && !mutated;
    kg_event e = subject_ev(b, KG_EV_CHECK);
    snprintf(e.what, sizeof e.what, "%s", what);
    e.pass = *pass;
    e.rel_l2 = cmp.rel_l2;
    e.max_abs_err = cmp.max_abs_err;
    e.mutated = mutated;
    snprintf(e.text, sizeof e.text, "%s", desc);
    emit(&e);
    return 0;
}

static void emit_sum(const bench *b, const char *name, double v)
{
    if (!isfinite(v)) /* e.g. the statistics of no kept sample: absent, not NaN */
        return;
    kg_event e = subject_ev(b, KG_EV_SUM);
    snprintf(e.name, sizeof e.name, "%s", name);
    snprintf(e.unit, sizeof e.unit, "%s", kg_summary_unit(name));
    e.value = v;
    emit(&e);
}

static void emit_fail(const bench *b, const char *kind, const char *msg)
{
    kg_event e = subject_ev(b, KG_EV_FAIL);
    snprintf(e.fail_kind, sizeof e.fail_kind, "%s", kind);
    snprintf(e.text, sizeof e.text, "%s", msg);
    emit(&e);
}

static void emit_timing(const bench *b, const kg_timing *t)
{
    emit_sum(b, "time/gpu/median", t->st.median);
    emit_sum(b, "time/gpu/ci_lo", t->st.ci_lo);
    emit_sum(b, "time/gpu/ci_hi", t->st.ci_hi);
    if (b->who != KG_SUBJ_KERNEL) {
        /* what disturbed a library path's timing: such a time is not kept (store/lib_cache.h),
         * and work of its process beside it (a trace without kgate's own records counts as
         * such) is not used */
        emit_sum(b, "time/throttled", t->n_throttled);
        emit_sum(b, "time/foreign", t->n_foreign + t->n_deferred + t->trace_lost);
    } else {
        emit_sum(b, "time/gpu/min", t->st.min);
        emit_sum(b, "time/gpu/p10", t->st.p10);
        emit_sum(b, "time/gpu/p90", t->st.p90);
        emit_sum(b, "time/gpu/relstd", t->st.relstd);
        emit_sum(b, "time/gpu/spread", t->st.spread);
        emit_sum(b, "time/samples", t->st.n);
        emit_sum(b, "time/throttled", t->n_throttled);
        emit_sum(b, "time/wall", t->wall_s);
        emit_sum(b, "time/event/median", t->event_median_s);
        emit_sum(b, "time/traced", t->n_traced);
        if (t->clock_mhz > 0)
            emit_sum(b, "time/clock", t->clock_mhz);
        if (t->batched)
            emit_sum(b, "time/batch/mean", t->batch_mean_s);
        if (t->escaped)
            emit_sum(b, "time/escaped", t->escaped_s);
        emit_sum(b, "time/foreign", t->n_foreign);
        if (t->n_deferred)
            emit_sum(b, "time/deferred", t->n_deferred);
        if (t->trace_lost)
            emit_sum(b, "time/trace_lost", 1);
        emit_sum(b, "time/host/median", t->host_median_s);
        if (b->glue_n) {
            emit_sum(b, "time/host/glue", b->glue_sum / (double)b->glue_n);
            emit_sum(b, "time/host/glue_over", b->glue_over / (double)b->glue_n);
        }
        if (t->span_median_s > 0)
            emit_sum(b, "time/span/median", t->span_median_s);
        if (t->n_blocker_timeouts)
            emit_sum(b, "time/blocking", t->n_blocker_timeouts);
        emit_sum(b, "time/verified", t->n_verified);
        if (t->n_persist_reset)
            emit_sum(b, "time/persist_reset", t->n_persist_reset);
        if (t->vendor_seen) { /* always, so that a result says how much was the library's */
            emit_sum(b, "time/vendor", t->n_vendor);
            emit_sum(b, "time/vendor_share", t->vendor_share);
            emit_sum(b, "time/vendor_compute_share", t->vendor_compute_share);
        }
    }
    kg_event e = subject_ev(b, KG_EV_TIMING);
    snprintf(e.stop, sizeof e.stop, "%s", kg_stop_name(t->stop));
    e.escaped = t->escaped;
    e.throttled = t->n_throttled;
    snprintf(e.text, sizeof e.text, "%s", t->note);
    emit(&e);
}

/* Checks the kernel, without timing, at the job's extra shapes (unaligned,
 * tiny, unnamed): one random trial each, plus the edge rows where the shape
 * has room for them. A shape the kernel declares unsupported is counted and
 * skipped. Returns non-zero on an error; a wrong result is a fail event and
 * stops the subject (the caller sees b->failed). */
static int check_extra_shapes(bench *b, kg_err *err)
{
    const kg_job *j = b->job;
    int checked = 0, skipped = 0;
    for (int k = 0; k < j->n_extra && !b->failed; k++) {
        const kg_shape *sh = &j->extra[k];
        char txt[96], what[32], desc[1024];
        int pass = 0;
        kg_shape_format(sh, txt, sizeof txt);
        if (!b->extra_ok[k]) { /* asked before any call (ask_supports) */
            skipped++;
            continue;
        }
        bench x;
        memset(&x, 0, sizeof x);
        x.job = j;
        x.op = b->op;
        x.types = b->types;
        x.shape = *sh;
        x.s = b->s;
        x.n_sets = 1;
        x.who = b->who;
        x.kernel = b->kernel;
        x.prov = b->prov;
        x.tunable = b->tunable;
        int rc = alloc_bench(&x, err);
        for (int edge = 0; edge < 2 && !rc; edge++) {
            int64_t rows, cols;
            kg_input0_matrix(x.op, sh, &rows, &cols);
            if (edge && (!j->edge || rows < x.op->min_rows || x.op->in[0].type != KG_T_DATA))
                break;
            snprintf(what, sizeof what, "shape %.20s%s", txt, edge ? " edges" : "");
            rc = check_once(&x, what, j->seed + 31 * (unsigned long long)(k + 1), edge, 0, &pass, desc,
                            sizeof desc, err);
            if (!rc && !pass) {
                char m[1024];
                snprintf(m, sizeof m, "at the extra shape %.40s%s: %.900s", txt,
                         edge ? " (edge rows)" : "", desc);
                emit_fail(b, "incorrect", m);
                b->failed = 1;
                break;
            }
        }
        free_bench(&x);
        if (rc)
            return rc;
        checked++;
    }
    emit_sum(b, "check/shapes", checked);
    emit_sum(b, "check/shapes_skipped", skipped);
    return 0;
}

static int check_once(bench *b, const char *what, unsigned long long seed, int edge, int alt,
                      int *pass, char *desc, size_t desc_size, kg_err *err)
{
    return check_dist(b, what, seed, edge, alt, KG_DIST_UNIFORM, pass, desc, desc_size, err);
}

/* Timer hooks for the kernel: poison the outputs before every call, and
 * re-check chosen timed calls against the references of their input set. */
static int before_cb(void *p, int set, kgate_stream s, kg_err *err)
{
    bench *b = p;
    for (int i = 0; i < b->n_out; i++)
        if (kg_tensor_poison(&b->out[set][i], s, err))
            return err->code;
    return 0;
}

/* The candidate's own host time of the call just made, as its provider
 * measured it (without the provider's glue): never more than measured, and
 * never less than measured less KG_PROVIDER_GLUE_MAX_S, whatever the
 * provider says (provider.h). The glue it claims (measured less its claim,
 * when the claim is one) is summed for time/host/glue, which calibrates the
 * bound: beyond it, an honest candidate is charged glue too. */
static double host_time_cb(void *p, double measured_s)
{
    bench *b = p;
    double claimed = b->prov->host_seconds(b->prov->self);
    if (claimed >= 0 && claimed <= measured_s) {
        b->glue_sum += measured_s - claimed;
        b->glue_over += measured_s - claimed > KG_PROVIDER_GLUE_MAX_S;
        b->glue_n++;
    }
    return kg_host_own(claimed, measured_s, KG_PROVIDER_GLUE_MAX_S);
}

/* Inputs no earlier call of the timing saw: each call's from its own seed,
 * drawn from a secret of the subject's timing (kg_random64, never sent), in
 * the operator's uniform distribution, as the timed inputs always were. A
 * kernel that caches its answers by the content of its inputs (a hash of
 * all of it, or of a few sampled elements) then never replays one: it is
 * timed computing, and a replayed answer is wrong where a re-check looks.
 * Library paths get the same, so that E compares like with like. */
static unsigned long long call_seed(const bench *b, long call)
{
    unsigned long long x = b->refill_seed + (unsigned long long)call * 0x9E3779B97F4A7C15ull;
    return kg_splitmix64(&x);
}

static int refill_cb(void *p, int set, long call, kgate_stream s, kg_err *err)
{
    bench *b = p;
    if (fill_on(b, set, call_seed(b, call), KG_DIST_UNIFORM, s, err) || prepare_on(b, set, s, err))
        return err->code;
    return 0;
}

/* Re-checks a timed call: its inputs as it left them, then as it was given
 * them (regenerated from its call's seed): they must agree (the call did
 * not modify them), and its outputs must match the references of those
 * inputs. */
static int verify_cb(void *p, int set, long call, kg_err *err)
{
    bench *b = p;
    kg_cmp cmp;
    int which = 0;
    char d[800];
    if (collect_outputs(b, set, err))
        return -1;
    uint64_t now = inputs_checksum(b, set, err);
    if (err->code || refill_cb(b, set, call, (kgate_stream)b->s, err))
        return -1;
    uint64_t given = inputs_checksum(b, set, err);
    if (err->code)
        return -1;
    if (now != given) {
        snprintf(b->verify_msg, sizeof b->verify_msg, "a timed call modified its inputs%s",
                 b->problem ? " (or the problem's input factory does not give the same inputs for a seed)" : "");
        return 1;
    }
    if (compute_refs(b, set, err) || compare_outputs(b, set, &cmp, &which, err) || hide_refs(b, set, err))
        return -1;
    if (!cmp.pass) {
        describe_cmp(b, &cmp, d, sizeof d);
        snprintf(b->verify_msg, sizeof b->verify_msg, "a timed call's output %s is wrong (it was right "
                 "in the checks before timing): %.700s", b->op->out[which].name, d);
        return 1;
    }
    int oob = check_guards(b, set, d, sizeof d, err);
    if (oob > 0)
        snprintf(b->verify_msg, sizeof b->verify_msg, "a timed call %s", d);
    return oob;
}

/* --diagnose: one more call of the kernel, described (gpu/kfacts.h) with
 * the Range Profiler's counters; the facts go out as kernel events, what
 * could not be collected as the diag event's note. Counters never mix with
 * timing: this call comes after it and is not timed. */
static int diag_launch(void *p, kg_err *err)
{
    bench *b = p; /* nothing of kgate's in the profiled call: its memsets would be ranges too */
    return launch_cb(b, 0, (kgate_stream)b->s, err);
}

static int diagnose_subject(bench *b, kg_err *err)
{
    kg_diagnosis *d = malloc(sizeof *d);
    if (!d)
        return kg_err_set(err, KG_EXIT_ENV, "out of memory for the diagnosis");
    const int ext = b->job->diagnose == 2;
    set_scalars(b, 0);
    if (kg_kf_describe(diag_launch, b, ext ? kg_prof_extended_metrics : kg_prof_default_metrics,
                       ext ? kg_prof_n_extended : kg_prof_n_default, b->job->patched_max_s, b->job->scratch, d,
                       err)) {
        free(d);
        return err->code;
    }
    /* where the diagnosis's wall time went (the profiler's parts only when
     * it ran) */
    emit_sum(b, "time/phase/diagnose", d->wall_s);
    if (d->passes > 0) {
        double setup, passes, eval;
        kg_prof_last_times(&setup, &passes, &eval);
        emit_sum(b, "time/diagnose/profiler-setup", setup);
        emit_sum(b, "time/diagnose/passes", passes);
        emit_sum(b, "time/diagnose/evaluate", eval);
    }
    emit_sum(b, "time/diagnose/sass", kg_kf_last_sass_s());
    for (int i = 0; i < d->n_kernels; i++) {
        kg_event e = subject_ev(b, KG_EV_KERNEL);
        e.kf = &d->kernels[i];
        emit(&e);
    }
    kg_event e = subject_ev(b, KG_EV_DIAG);
    snprintf(e.text, sizeof e.text, "%s%s%.500s", watch_note, watch_note[0] && d->note[0] ? "; " : "", d->note);
    e.passes = d->passes;
    e.launches = d->launches;
    e.busy_s = d->busy_s;
    e.wall_s = d->wall_s;
    emit(&e);
    free(d);
    return 0;
}

/* Whether the kernel (and its configuration, in kgate tune) takes a shape. */
static int shape_supported(const bench *b, const kg_shape *sh)
{
    if (b->tunable && b->tunable->valid && !b->tunable->valid(b->job->config, sh->d, sh->n))
        return 0;
    return !b->kernel->supports || b->kernel->supports(sh->d, sh->n);
}

/* Asks the kernel about every shape of its job once, the job's first, before
 * any call: when and how often supports() is called would otherwise tell it
 * which phase it is in (the extra shapes come between the checks and the
 * timing). Returns whether it takes the job's shape. */
static int ask_supports(bench *b)
{
    int ok = shape_supported(b, &b->job->shape);
    for (int k = 0; k < b->job->n_extra && k < KG_MAX_EXTRA; k++)
        b->extra_ok[k] = (unsigned char)shape_supported(b, &b->job->extra[k]);
    return ok;
}

/* A seed the candidate cannot predict: which timed calls are re-checked. */
static unsigned long long secret_seed(void) { return kg_random64(); }

/* The subject's random trials: uniform ones (the second with the required
 * scalars at their alt values), then one for each distribution the
 * operator lists; at least `trials` in all for the kernel, one for a library
 * path or the bundled variant. *done = 1 when one failed (the kernel's fail
 * event sent; a wrong library path is marked by its check event). */
static int subject_trials(bench *b, int *done, kg_err *err)
{
    const kg_job *j = b->job;
    int kernel = b->who == KG_SUBJ_KERNEL, has_alt = 0, pass = 0;
    char desc[1024];
    for (int i = 0; i < b->op->n_scalars; i++)
        has_alt |= b->op->scalars[i].required && !isnan(b->op->scalars[i].alt);
    int dist[KG_DIST_COUNT + 1000], n_uniform = 1 + has_alt, trials = 0;
    for (int t = 0; t < n_uniform; t++)
        dist[trials++] = KG_DIST_UNIFORM;
    for (int d = 1; kernel && d < KG_DIST_COUNT; d++)
        if (b->op->dists & (1u << d))
            dist[trials++] = d;
    while (kernel && trials < j->trials && trials < (int)(sizeof dist / sizeof dist[0]))
        dist[trials++] = KG_DIST_UNIFORM;
    if (!kernel)
        trials = 1;
    for (int t = 0; t < trials; t++) {
        char what[32];
        snprintf(what, sizeof what, "trial %d (%s)", t + 1, kg_dist_name((kg_dist)dist[t]));
        if (check_dist(b, what, j->seed + (unsigned long long)t, 0, has_alt && t == 1, dist[t], &pass,
                       desc, sizeof desc, err))
            return err->code;
        if (!pass) {
            char m[1024];
            snprintf(m, sizeof m, "%s: %.990s", what, desc);
            if (b->who != KG_SUBJ_LIB) /* a wrong library path is marked by its check event */
                emit_fail(b, "incorrect", m);
            *done = 1;
            return 0;
        }
    }
    if (kernel)
        emit_sum(b, "check/trials", trials);
    return 0;
}

/* The kernel's edge rows, where the operator has them. *done = 1 when they
 * failed (the fail event sent). */
static int subject_edge(bench *b, int *done, kg_err *err)
{
    const kg_job *j = b->job;
    int64_t rows, cols;
    int pass = 0;
    char desc[1024];
    kg_input0_matrix(b->op, &b->shape, &rows, &cols);
    if (!(j->edge && !b->problem && rows >= b->op->min_rows && b->op->in[0].type == KG_T_DATA))
        return 0;
    if (check_once(b, "edge cases", j->seed + 7777, 1, 0, &pass, desc, sizeof desc, err))
        return err->code;
    emit_sum(b, "check/edge", pass);
    if (!pass) {
        char m[1024];
        snprintf(m, sizeof m, "edge cases (%.200s): %.780s", b->op->edge_semantics, desc);
        emit_fail(b, "incorrect", m);
        *done = 1;
    }
    return 0;
}

/* The timer's configuration for the subject: fresh inputs every call
 * (refill_cb), and for the kernel the re-checks of timed calls, with room
 * for the references of every input set. */
static int subject_timer_cfg(bench *b, kg_timer_cfg *tc, kg_err *err)
{
    const kg_job *j = b->job;
    int kernel = b->who == KG_SUBJ_KERNEL;
    kg_timer_defaults(tc);
    tc->stop = j->stop;
    tc->flush = j->hot ? KG_FLUSH_NONE : j->flush;
    tc->n_sets = kernel ? b->n_sets : 1;
    set_scalars(b, 0);
    /* every call, warm-up included, gets fresh inputs (refill_cb) */
    b->refill_seed = secret_seed();
    tc->refill = refill_cb;
    /* room for the references of every set, for the re-checks of timed calls */
    for (int set = 1; kernel && set < tc->n_sets; set++)
        for (int o = 0; o < b->n_out; o++)
            if (!b->ref[set][o] &&
                cudaMalloc((void **)&b->ref[set][o],
                           sizeof(double) * (size_t)kg_tensor_numel(&b->out[set][o])) != cudaSuccess)
                return kg_err_set(err, KG_EXIT_ENV, "out of device memory for the references of "
                                  "input set %d", set);
    if (b->prov && b->prov->host_seconds)
        tc->host_time = host_time_cb;
    b->glue_sum = 0;
    b->glue_n = b->glue_over = 0;
    if (kernel) {
        tc->before = before_cb;
        tc->verify = verify_cb;
        tc->verify_seed = secret_seed();
    }
    return 0;
}

/* Times the subject and sends its timing. A library path whose timing saw
 * other work in its process is timed once more before its time is given up
 * (a problem's library paths come with the candidate's file, which would
 * disturb both timings; time/retimed keeps such a time out of --lib-cache);
 * a kernel is timed once, since what it did is what is judged. *done = 1
 * when a re-check of a timed call failed (the fail event sent). */
static int subject_time(bench *b, int *done, kg_err *err)
{
    int kernel = b->who == KG_SUBJ_KERNEL;
    kg_timer_cfg tc;
    kg_timing tm;
    if (subject_timer_cfg(b, &tc, err))
        return err->code;
    char again[230] = ""; /* what the first timing saw, when there was a second */
    for (int tries = kernel ? 1 : 2;; tries--) {
        if (kg_time(&tc, launch_cb, b, (kgate_stream)b->s, &tm, err)) {
            /* a fault of the subject inside the timed loop surfaces as a
             * failed CUDA call of the timer: the context is then broken */
            if (err->code == KG_EXIT_ENV && cudaDeviceSynchronize() != cudaSuccess)
                err->code = KG_EXIT_FAIL;
            return err->code;
        }
        if (tries <= 1 || tm.n_foreign + tm.n_deferred + tm.trace_lost == 0)
            break;
        snprintf(again, sizeof again, "timed again after %.200s", tm.note);
    }
    if (again[0]) {
        kg_timing_note(&tm, "%s", again);
        emit_sum(b, "time/retimed", 1);
    }
    if (kernel && tm.n_vendor) /* a library path's are the library's own */
        kg_timing_note(&tm, "%d kernel(s) named like %s's (%.0f%% of its kernel time, %.0f%% computing, the "
                       "rest fills, copies or casts), the first %s",
                       tm.n_vendor, tm.vendor_lib ? tm.vendor_lib : "a library", 100 * tm.vendor_share,
                       100 * tm.vendor_compute_share, tm.vendor_first);
    emit_timing(b, &tm);
    if (kernel && tm.verify_failed) {
        emit_fail(b, "incorrect", b->verify_msg);
        *done = 1;
    }
    return 0;
}

/* A kernel that caches results by pointer would pass the trials and then
 * time a no-op: the kernel is checked again on fresh inputs after timing.
 * *done = 1 when that failed (the fail event sent). */
static int subject_recheck(bench *b, int *done, kg_err *err)
{
    int pass = 0;
    char desc[1024];
    double t_recheck = kg_mono();
    if (check_once(b, "after timing", b->job->seed + 4242, 0, 0, &pass, desc, sizeof desc, err))
        return err->code;
    if (!pass) {
        emit_fail(b, "incorrect", desc);
        *done = 1;
        return 0;
    }
    emit_sum(b, "check/max_scaled_err", isfinite(b->max_scaled_err) ? b->max_scaled_err : 1e300);
    emit_sum(b, "time/phase/recheck", kg_mono() - t_recheck);
    return 0;
}

/* Checks and times the current subject. The kernel gets `trials` random
 * trials (the second with the required scalars at their alt values), the
 * edge rows, timing, and a check after timing; a library path or the
 * bundled variant one trial and timing. Returns non-zero on an error (a
 * crash of the subject is KG_EXIT_FAIL); a wrong result is a fail event. */
static int run_subject(bench *b, kg_err *err)
{
    const kg_job *j = b->job;
    int kernel = b->who == KG_SUBJ_KERNEL, done = 0;
    double t_checks = kg_mono(); /* where a kernel job's time goes: time/phase/... */
    if (kernel) {
        emit_sum(b, "time/phase/setup", t_checks - t_hello);
        emit_sum(b, "time/phase/open", phase_open_s);
        emit_sum(b, "time/phase/context", phase_context_s);
    }
    if (subject_trials(b, &done, err) || done)
        return err->code;
    if (kernel && (subject_edge(b, &done, err) || done))
        return err->code;
    if (kernel && check_extra_shapes(b, err))
        return err->code;
    if (b->failed)
        return 0;
    if (kernel)
        emit_sum(b, "time/phase/checks", kg_mono() - t_checks);
    if (j->verify_only && kernel) /* checks only; a diagnosis still describes the kernel */
        return j->diagnose ? diagnose_subject(b, err) : 0;
    double t_timing = kg_mono();
    if (subject_time(b, &done, err) || done)
        return err->code;
    if (kernel) {
        emit_sum(b, "time/phase/timing", kg_mono() - t_timing);
        if (subject_recheck(b, &done, err) || done)
            return err->code;
    }
    if (kernel && j->diagnose) {
        /* the references are done with: the profiler's kernel replay saves
         * and restores device memory, so less of it is less time (conv2d's
         * fp64 output reference alone is 1 GB at its large preset) */
        if (free_refs(b, err))
            return err->code;
        return diagnose_subject(b, err);
    }
    return 0;
}

/* ----------------------------------------------------------------- modes */

/* The shared-library provider: dlopen and the table's own symbol. */
static int so_open(void *self, const char *source, const kgate_plugin **table, char *msg, uint32_t size)
{
    void *handle; /* kept loaded: kernels may still be referenced by the runtime */
    kg_err e = {0, ""};
    (void)self;
    if (kg_plugin_open(source, &handle, table, &e)) {
        snprintf(msg, size, "%s", e.msg);
        return e.code;
    }
    /* an optional configuration space table, validated like the kernel table */
    kgate_tunables_entry_fn tf = (kgate_tunables_entry_fn)dlsym(handle, KGATE_TUNABLES_SYMBOL);
    so_tunables = NULL;
    if (tf && kg_tunables_validate(tf(), *table, source, &e)) {
        snprintf(msg, size, "%s", e.msg);
        return e.code;
    }
    so_tunables = tf ? tf() : NULL;
    so_handle = handle;
    return 0;
}

const kg_provider *kg_provider_so(void)
{
    static const kg_provider so = {sizeof(kg_provider), "so", NULL, so_open, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    return &so;
}

const char *kg_worker_opening(void)
{
    return opening;
}

/* Opens a candidate through its provider (a .py file: the Python host's; a
 * .cu file: NVRTC's; anything else: a shared library) and validates its
 * table. */
static int open_source(const char *source, const kgate_plugin **table, const kg_provider **prov,
                       kg_err *err)
{
    const kg_provider *pv = kg_source_is_cuda(source) ? kg_provider_rtc() : kg_provider_so();
    if (kg_source_is_python(source)) {
        if (!py_provider)
            return kg_err_set(err, KG_EXIT_CANDIDATE,
                              "%s: a Python candidate, but this worker is not the Python host "
                              "(python3 -m kgate._worker)", source);
        pv = py_provider;
    }
    char msg[900] = "";
    *table = NULL;
    int rc = pv->open(pv->self, source, table, msg, sizeof msg);
    msg[sizeof msg - 1] = '\0';
    if (rc)
        return kg_err_set(err, rc >= KG_EXIT_USAGE && rc <= KG_EXIT_IO ? rc : KG_EXIT_CANDIDATE, "%s",
                          msg[0] ? msg : "the candidate did not open");
    if (pv->describe) {
        /* a problem outside the catalog: registered before the table names it */
        static char json[8192];
        kg_problem pb;
        const kg_op *pop;
        json[0] = '\0';
        msg[0] = '\0';
        if (pv->describe(pv->self, json, sizeof json, msg, sizeof msg))
            return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: %s", source, msg[0] ? msg : "describing its problem failed");
        json[sizeof json - 1] = '\0';
        if (json[0]) {
            if (kg_problem_parse(json, &pb, err) || kg_problem_register(&pb, &pop, err))
                return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: %.900s", source, err->msg);
            if (!opened_problem)
                opened_problem = kg_problem_of(pop);
        }
    }
    if (pv != kg_provider_so() && kg_plugin_validate(*table, source, err))
        return err->code;
    *prov = pv;
    return 0;
}

static int do_list(const kg_job *j, kg_err *err)
{
    const kgate_plugin *p;
    const kg_provider *pv;
    if (open_source(j->plugin, &p, &pv, err))
        return err->code;
    kg_event e = ev(KG_EV_TABLE, KG_SUBJ_NONE, NULL);
    e.entries = calloc(p->n_kernels, sizeof *e.entries);
    if (!e.entries)
        return kg_err_set(err, KG_EXIT_ENV, "out of memory");
    for (uint32_t i = 0; i < p->n_kernels; i++) {
        const kgate_kernel *k = kg_plugin_kernel(p, i);
        kg_table_entry *t = &e.entries[e.n_entries++];
        snprintf(t->name, sizeof t->name, "%s", k->name);
        snprintf(t->op, sizeof t->op, "%s", k->op);
        snprintf(t->dtype, sizeof t->dtype, "%s", k->dtype);
        snprintf(t->index_dtype, sizeof t->index_dtype, "%s", k->index_dtype ? k->index_dtype : "int64");
        snprintf(t->summary, sizeof t->summary, "%s", k->summary ? k->summary : "");
        snprintf(t->scalars, sizeof t->scalars, "%s", k->scalars ? k->scalars : "");
        const kgate_tunable *tu = pv == kg_provider_so() ? kg_tunable_find(so_tunables, k->name) : NULL;
        kg_space sp;
        if (tu) {
            kg_space_of(tu, &sp);
            if (kg_space_format(&sp, t->space, sizeof t->space)) {
                kg_event_free(&e);
                return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: '%s': its configuration space is over %zu bytes "
                                  "as text", j->plugin, k->name, sizeof t->space - 1);
            }
        }
    }
    if (opened_problem && (e.problem = malloc(sizeof *e.problem)))
        *e.problem = *opened_problem;
    /* one line, up to KG_EVENT_MAX (protocol/proto.h): a table of KG_TABLE_MAX
     * kernels fits; a longer line would be a protocol violation */
    char *line = kg_event_to_json(&e);
    size_t len = line ? strlen(line) : 0;
    kg_event_free(&e);
    if (len > KG_EVENT_MAX) {
        free(line);
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: its table is %zu bytes as an event, over %d", j->plugin, len,
                          KG_EVENT_MAX);
    }
    emit_line(line); /* serialized once */
    free(line);
    return 0;
}

/* The bundled fast variant of the job's operator and types, or NULL. */
static const kgate_kernel *find_fast(const kgate_plugin *p, const kg_op *op, kg_types t)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s_%s_", op->name, op->fast ? op->fast : "");
    for (uint32_t i = 0; op->fast && i < p->n_kernels; i++) {
        const kgate_kernel *k = kg_plugin_kernel(p, i);
        kg_dtype d, x = KG_I64;
        if (strncmp(k->name, prefix, strlen(prefix)) != 0 || strcmp(k->op, op->name) != 0 ||
            kg_dtype_parse(k->dtype, &d) || d != t.data)
            continue;
        if (k->index_dtype && kg_dtype_parse(k->index_dtype, &x))
            continue;
        if (!kg_op_has_index(op) || x == t.index)
            return k;
    }
    return NULL;
}

/* Library paths a provider offers as a kernel table (a problem's, or
 * PyTorch's): each checked and timed as a vendor path is. At most 16. */
static int time_library_table(bench *b, const kgate_plugin *lib, const kg_provider *pv, kg_err *err)
{
    if (lib->abi_version != KGATE_ABI_VERSION || lib->kernel_size < sizeof(kgate_kernel) || lib->n_kernels > 16)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: a malformed table of library paths", b->op->name);
    for (uint32_t i = 0; i < lib->n_kernels; i++) {
        const kgate_kernel *k = kg_plugin_kernel(lib, i);
        b->who = KG_SUBJ_LIB;
        b->kernel = k;
        b->prov = pv;
        b->baseline = NULL;
        snprintf(b->path, sizeof b->path, "%.39s", k->name ? k->name : "?");
        set_scalars(b, 0);
        kg_event e = ev(KG_EV_SUBJECT, KG_SUBJ_LIB, b->path);
        snprintf(e.text, sizeof e.text, "%.1000s", k->summary ? k->summary : "");
        emit(&e);
        if (run_subject(b, err))
            return err->code;
    }
    b->kernel = NULL;
    b->prov = NULL;
    return 0;
}

/* A problem's library paths: the table its provider offers. */
static int problem_library(bench *b, kg_err *err)
{
    const kgate_plugin *lib = NULL;
    char msg[600] = "";
    if (!b->src->library || b->src->library(b->src->self, &lib, msg, sizeof msg) || !lib) {
        msg[sizeof msg - 1] = '\0';
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: no library paths: %s", b->op->name,
                          msg[0] ? msg : "its provider offers none");
    }
    return time_library_table(b, lib, b->src, err);
}

static int do_library(bench *b, kg_err *err)
{
    const kg_job *j = b->job;
    const kg_op *op = b->op;
    if (b->problem)
        return problem_library(b, err);
    for (int i = 0; i < KG_MAX_BASELINES && op->baselines[i]; i++) {
        const kg_baseline *bl = kg_baseline_find(op->baselines[i]);
        if (!bl)
            return kg_err_set(err, KG_EXIT_ENV, "%s names library path '%s', which kgate lacks",
                              op->name, op->baselines[i]);
        char note[320] = "";
        kg_err serr = {0, ""};
        b->who = KG_SUBJ_LIB;
        snprintf(b->path, sizeof b->path, "%s", bl->name);
        b->baseline = NULL;
        b->kernel = NULL;
        set_scalars(b, 0);
        if (fill_inputs(b, 0, j->seed, err) || prepare_inputs(b, 0, err))
            return err->code;
        if (bl->setup(op, b->in[0], b->out[0], &b->params, (kgate_stream)b->s, &b->bctx, note,
                      sizeof note, &serr)) {
            kg_event e = ev(KG_EV_UNSUPPORTED, KG_SUBJ_LIB, bl->name);
            snprintf(e.text, sizeof e.text, "%s", serr.msg[0] ? serr.msg : "unsupported");
            emit(&e);
            cudaGetLastError(); /* a refused setup leaves no sticky error behind */
            continue;
        }
        b->baseline = bl;
        kg_event e = ev(KG_EV_SUBJECT, KG_SUBJ_LIB, bl->name);
        snprintf(e.text, sizeof e.text, "%s", note);
        emit(&e);
        int rc = run_subject(b, err);
        bl->teardown(b->bctx);
        b->baseline = NULL;
        b->bctx = NULL;
        if (rc)
            return rc;
    }
    if (j->torch) {
        /* PyTorch's paths (kgate check --torch): timed like the vendor ones */
        const kgate_plugin *tl = NULL;
        char msg[600] = "";
        if (!py_provider || !py_provider->torch_library)
            return kg_err_set(err, KG_EXIT_ENV, "--torch: this worker is not the Python host");
        if (py_provider->torch_library(py_provider->self, op->name, kg_dtype_name(b->types.data),
                                       kg_dtype_name(b->types.index), j->torch > 1, &tl, msg, sizeof msg) ||
            !tl) {
            msg[sizeof msg - 1] = '\0';
            kg_event e = ev(KG_EV_UNSUPPORTED, KG_SUBJ_LIB, "torch");
            snprintf(e.text, sizeof e.text, "%s", msg[0] ? msg : "PyTorch could not be loaded");
            emit(&e);
        } else if (time_library_table(b, tl, py_provider, err)) {
            return err->code;
        }
    }
    if (!j->plugin[0])
        return 0;
    const kgate_plugin *p;
    const kg_provider *pv;
    kg_err perr = {0, ""};
    b->who = KG_SUBJ_BEST;
    b->path[0] = '\0';
    kg_event e = ev(KG_EV_SUBJECT, KG_SUBJ_BEST, NULL);
    if (open_source(j->plugin, &p, &pv, &perr)) {
        snprintf(e.text, sizeof e.text, KG_BUNDLED_UNLOADED ": %.900s", perr.msg);
        emit(&e);
        return 0;
    }
    b->kernel = find_fast(p, op, b->types);
    b->prov = pv;
    if (!b->kernel) {
        snprintf(e.text, sizeof e.text, "no bundled %s_%s kernel for %s", op->name,
                 op->fast ? op->fast : "(none)", kg_dtype_name(b->types.data));
        emit(&e);
        return 0;
    }
    snprintf(b->path, sizeof b->path, "%s", b->kernel->name);
    snprintf(e.path, sizeof e.path, "%s", b->kernel->name);
    snprintf(e.text, sizeof e.text, "bundled %s: %s", b->kernel->name,
             b->kernel->summary ? b->kernel->summary : "");
    emit(&e);
    return run_subject(b, err);
}

static int do_measure(const kg_job *j, kg_err *err)
{
    bench b;
    const kgate_plugin *plug = NULL;
    memset(&b, 0, sizeof b);
    b.job = j;
    b.op = j->op;
    b.types = j->types;
    b.shape = j->shape;
    b.n_sets = 1;
    if (j->sandbox) {
        /* CUDA and CUPTI up first, then the file rules, then the candidate */
        kg_err terr = {0, ""};
        KG_CUDA(cudaSetDevice(j->device));
        KG_CUDA(cudaFree(0));
        kg_trace_start(&terr);
        if (kg_sandbox_apply(0, j->scratch, KG_SANDBOX_FILES, err))
            return err->code;
    }
    b.problem = kg_problem_of(j->op);
    if (j->mode == KG_JOB_LIBRARY && b.problem) {
        /* the problem's candidate brings its inputs, reference and library paths */
        const kgate_plugin *plug0;
        if (open_source(j->plugin, &plug0, &b.src, err))
            return err->code;
    }
    if (j->mode == KG_JOB_KERNEL) {
        kg_err werr = {0, ""};
        if (j->diagnose && kg_kf_watch(&werr)) /* before the candidate loads: its modules' cubins */
            snprintf(watch_note, sizeof watch_note, "launches not watched: %.360s", werr.msg);
        double t_open = kg_mono();
        opening = j->kernel;
        int orc = open_source(j->plugin, &plug, &b.prov, err);
        opening = NULL;
        if (orc) /* a file that does not open (exit 4): its own command stops, as when listing */
            return err->code;
        candidate_ran = 1;
        phase_open_s = kg_mono() - t_open;
        if (!(b.kernel = kg_plugin_find(plug, j->kernel)))
            return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: no kernel named '%s'", j->plugin, j->kernel);
        kg_dtype d, x = KG_I64;
        if (strcmp(b.kernel->op, j->op->name) != 0 || kg_dtype_parse(b.kernel->dtype, &d) ||
            d != j->types.data || (b.kernel->index_dtype && kg_dtype_parse(b.kernel->index_dtype, &x)) ||
            (kg_op_has_index(j->op) && x != j->types.index))
            return kg_err_set(err, KG_EXIT_USAGE, "job: kernel '%s' is not %s %s", j->kernel,
                              j->op->name, kg_dtype_name(j->types.data));
        b.who = KG_SUBJ_KERNEL;
        b.src = b.prov;
        if (j->n_config) {
            /* kgate tune: the kernel's launch with this configuration */
            kg_space sp;
            char why[200];
            b.tunable = b.prov == kg_provider_so() ? kg_tunable_find(so_tunables, j->kernel) : NULL;
            if (!b.tunable)
                return kg_err_set(err, KG_EXIT_USAGE, "job: kernel '%s' has no configuration space", j->kernel);
            kg_space_of(b.tunable, &sp);
            if (!kg_config_check(&sp, j->config, j->n_config, why, sizeof why))
                return kg_err_set(err, KG_EXIT_USAGE, "job: configuration of '%s': %s", j->kernel, why);
        }
        if (!ask_supports(&b)) {
            /* SKIPPED, with the kernel's (or its configuration's) word for it: said in the
             * done event, which carries the job's nonce, never by a summary the candidate's
             * code could write on the channel too */
            job_unsupported = 1;
            return 0;
        }
    }
    if (b.problem && (!b.src || !b.src->inputs || !b.src->reference))
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: problem '%s' needs a provider with its inputs and "
                          "reference (a Python candidate's KGATE_PROBLEM)", j->plugin, b.problem->name);
    double t_context = kg_mono();
    KG_CUDA(cudaSetDevice(j->device));
    KG_CUDA(cudaStreamCreateWithFlags(&b.s, cudaStreamNonBlocking));
    phase_context_s = kg_mono() - t_context;
    if (j->hot && j->mode == KG_JOB_KERNEL) {
        struct cudaDeviceProp prop;
        kg_work w;
        KG_CUDA(cudaGetDeviceProperties(&prop, j->device));
        kg_op_work(j->op, &j->shape, j->types, &w);
        b.n_sets = (int)(2.0 * prop.l2CacheSize / w.bytes) + 1;
        b.n_sets = b.n_sets < 1 ? 1 : b.n_sets > MAX_SETS ? MAX_SETS : b.n_sets;
    }
    /* a guard byte the candidate cannot count on (never 0x00 or 0xFF) */
    kg_tensor_guard_pattern((unsigned char)(1 + secret_seed() % 254));
    if (alloc_bench(&b, err))
        goto out;
    if (j->mode == KG_JOB_LIBRARY)
        do_library(&b, err);
    else
        run_subject(&b, err);
out:
    if (err->code == KG_EXIT_FAIL) /* the subject crashed: say which */
        emit_fail(&b, "crash", err->msg);
    if (b.baseline)
        b.baseline->teardown(b.bctx);
    free_bench(&b);
    if (b.s)
        cudaStreamDestroy(b.s);
    return err->code;
}

/* Reads the job from stdin (bounded). */
static int read_job(kg_job *j, kg_err *err)
{
    static char buf[KG_JOB_MAX + 2];
    size_t n = 0;
    ssize_t k;
    while (n < sizeof buf - 1 && (k = read(0, buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)k;
    buf[n] = '\0';
    if (n > KG_JOB_MAX)
        return kg_err_set(err, KG_EXIT_USAGE, "worker: the job is longer than %d bytes", KG_JOB_MAX);
    int rc = kg_job_from_json(buf, j, err);
    memset(buf, 0, sizeof buf); /* the nonce stays only in the job */
    return rc;
}

int kg_worker_main_with(int argc, char **argv, const kg_provider *python)
{
    if (python && python->struct_size >= sizeof(kg_provider) && python->open)
        py_provider = python;
    return kg_worker_main(argc, argv);
}

int kg_worker_main(int argc, char **argv)
{
    kg_job j;
    kg_err err = {0, ""};
    for (int i = 0; i + 1 < argc; i++)
        if (strcmp(argv[i], "--fd") == 0) {
            char *end;
            long fd = strtol(argv[i + 1], &end, 10);
            if (*end == '\0' && fd > 2 && fd < 65536)
                ev_out = fdopen((int)fd, "w");
        }
    if (!ev_out) {
        fprintf(stderr, "kgate __worker: needs --fd N (N > 2), an open descriptor for its events\n");
        return KG_EXIT_USAGE;
    }
    int have_job = read_job(&j, &err) == 0;
    /* the sandbox goes up before a candidate is loaded: its process part at
     * once, its file part (Landlock) once CUDA is up (do_measure), since the
     * driver cannot initialize under it */
    if (have_job && j.sandbox)
        kg_sandbox_apply(j.budget_s > 0 ? j.budget_s + 30 : 3600, j.scratch,
                         KG_SANDBOX_PROCESS | (j.mode == KG_JOB_LIST ? KG_SANDBOX_FILES : 0), &err);
    {
        kg_event e = ev(KG_EV_HELLO, KG_SUBJ_NONE, NULL);
        e.pid = (long)getpid();
        if (have_job && j.mode != KG_JOB_LIST) {
            int n = 0;
            struct cudaDeviceProp prop;
            cudaError_t rc = cudaGetDeviceCount(&n);
            char why[256];
            if (rc != cudaSuccess || n == 0)
                kg_err_set(&err, KG_EXIT_ENV, "%s", kg_device_absent(rc, why, sizeof why));
            else if (j.device >= n)
                kg_err_set(&err, KG_EXIT_USAGE, "device %d: only %d device(s)", j.device, n);
            else if (cudaGetDeviceProperties(&prop, j.device) == cudaSuccess)
                snprintf(e.device, sizeof e.device, "%s", prop.name);
        }
        emit(&e);
        t_hello = kg_mono();
    }
    if (!err.code)
        err.code = j.mode == KG_JOB_LIST ? do_list(&j, &err) : do_measure(&j, &err);
    if (err.code && err.code != KG_EXIT_FAIL) { /* a crash was reported with its subject */
        kg_event e;
        if (candidate_ran && (err.code == KG_EXIT_CANDIDATE || err.code == KG_EXIT_USAGE)) {
            /* once the candidate is open, a candidate or job error is its
             * doing (a table that changed since the list job, a problem
             * whose inputs or reference raise, a patch found at a later
             * reference): this kernel's CRASH, not a stop of the whole
             * command or group. An environment error (5: no memory, a
             * context that cannot be made, a throttled GPU) stays one: it
             * may be the GPU's, and the command stops, as a batch then
             * checks the GPU's health */
            e = ev(KG_EV_FAIL, KG_SUBJ_KERNEL, NULL);
            snprintf(e.fail_kind, sizeof e.fail_kind, "crash");
            err.code = KG_EXIT_FAIL;
        } else {
            e = ev(KG_EV_ERROR, KG_SUBJ_NONE, NULL);
            e.code = err.code;
            snprintf(e.nonce, sizeof e.nonce, "%s", have_job ? j.nonce : "");
        }
        snprintf(e.text, sizeof e.text, "%s", err.msg);
        emit(&e);
    }
    kg_event e = ev(KG_EV_DONE, KG_SUBJ_NONE, NULL);
    e.code = err.code;
    e.unsupported = job_unsupported && !err.code;
    snprintf(e.nonce, sizeof e.nonce, "%s", have_job ? j.nonce : "");
    emit(&e);
    return err.code ? 3 : 0;
}
