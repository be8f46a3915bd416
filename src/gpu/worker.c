/* Worker process: checks and times one kernel and/or one baseline. */
#include "worker.h"

#include <cjson/cJSON.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/op.h"
#include "../core/plugin_check.h"
#include "../core/stats.h"
#include "baseline.h"
#include "check.h"
#include "tensors.h"
#include "timer.h"

static FILE *ev_out;
static const char *cur_subject = "kernel"; /* what a failure is blamed on */

static void emit(cJSON *o)
{
    char *s = cJSON_PrintUnformatted(o);
    if (s && ev_out) {
        fprintf(ev_out, "%s\n", s);
        fflush(ev_out);
    }
    free(s);
    cJSON_Delete(o);
}

static cJSON *ev(const char *kind)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "ev", kind);
    return o;
}

static void emit_sum(const char *subject, const char *name, double v)
{
    cJSON *o = ev("sum");
    cJSON_AddStringToObject(o, "subject", subject);
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddNumberToObject(o, "value", v);
    emit(o);
}

static void emit_error(const kg_err *e)
{
    cJSON *o = ev("error");
    cJSON_AddNumberToObject(o, "code", e->code);
    cJSON_AddStringToObject(o, "msg", e->msg);
    emit(o);
}

static void emit_fail(const char *kind, const char *msg)
{
    cJSON *o = ev("fail");
    cJSON_AddStringToObject(o, "subject", cur_subject);
    cJSON_AddStringToObject(o, "kind", kind);
    cJSON_AddStringToObject(o, "msg", msg);
    emit(o);
}

typedef struct job {
    const char *plugin, *kernel, *op_name, *dtype_name, *shape_text;
    int list, baseline, device, hot, memset_flush, trials, edge;
    unsigned long long seed;
    kg_stop_cfg stop;
} job;

#define MAX_SETS 8

/* What the timing engine launches: a candidate kernel or a baseline. */
typedef struct subject {
    const kgate_kernel *kernel;   /* candidate or fallback */
    const kg_baseline *baseline;  /* else a library call */
    void *bctx;
    DLTensor in[MAX_SETS][KG_MAX_TENSORS], out[MAX_SETS][KG_MAX_TENSORS];
    int n_in, n_out;
    kgate_params params;
    char msg[512];
} subject;

static int subject_launch(void *p, int set, kgate_stream s, kg_err *err)
{
    subject *sj = p;
    if (sj->baseline)
        return sj->baseline->launch(sj->bctx, s, err);
    sj->msg[0] = '\0';
    int rc = sj->kernel->launch(sj->in[set], sj->n_in, sj->out[set], sj->n_out, &sj->params, s);
    if (rc)
        return kg_err_set(err, KG_EXIT_FAIL, "kernel '%s' returned error %d%s%s", sj->kernel->name,
                          rc, sj->msg[0] ? ": " : "", sj->msg);
    return 0;
}

static void free_sets(subject *sj, int n_sets)
{
    for (int s = 0; s < n_sets; s++) {
        for (int i = 0; i < sj->n_in; i++)
            kg_tensor_free(&sj->in[s][i]);
        for (int i = 0; i < sj->n_out; i++)
            kg_tensor_free(&sj->out[s][i]);
    }
}

static int alloc_sets(subject *sj, const kg_op *op, kg_dtype dt, const kg_shape *shape, int n_sets,
                      kg_err *err)
{
    int64_t ext[3];
    sj->n_in = op->n_inputs;
    sj->n_out = op->n_outputs;
    for (int s = 0; s < n_sets; s++) {
        for (int i = 0; i < op->n_inputs; i++) {
            kg_tensor_extents(&op->in[i], shape, ext);
            if (kg_tensor_alloc(&sj->in[s][i], dt, op->in[i].rank, ext, err))
                return err->code;
        }
        for (int i = 0; i < op->n_outputs; i++) {
            kg_tensor_extents(&op->out[i], shape, ext);
            if (kg_tensor_alloc(&sj->out[s][i], dt, op->out[i].rank, ext, err))
                return err->code;
        }
    }
    return 0;
}

static int fill_inputs(subject *sj, const kg_op *op, int set, unsigned long long seed,
                       cudaStream_t s, kg_err *err)
{
    for (int i = 0; i < op->n_inputs; i++)
        if (kg_tensor_fill_uniform(&sj->in[set][i], op->in[i].lo, op->in[i].hi,
                                   seed * 1000003ull + (unsigned long long)i, (kgate_stream)s, err))
            return err->code;
    return 0;
}

static uint64_t inputs_checksum(subject *sj, int set, cudaStream_t s, kg_err *err)
{
    uint64_t sum = 0, one;
    for (int i = 0; i < sj->n_in; i++) {
        if (kg_tensor_checksum(&sj->in[set][i], &one, (kgate_stream)s, err))
            return 0;
        sum = sum * 31 + one;
    }
    return sum;
}

/* Runs the subject once on set 0 against a fresh reference. Returns 0 when
 * the check ran (pass or not in *cmp), else an error (crash) in err. */
static int check_once(subject *sj, const kg_op *op, const char *subj_name, const char *what,
                      unsigned long long seed, int edge, double *ref, const kg_tol *tol,
                      cudaStream_t s, kg_cmp *cmp, int *mutated, kg_err *err)
{
    int64_t rows, cols;
    uint64_t before, after;
    char desc[768];
    if (fill_inputs(sj, op, 0, seed, s, err))
        return err->code;
    if (edge) {
        cols = sj->in[0][0].shape[sj->in[0][0].ndim - 1];
        rows = kg_tensor_numel(&sj->in[0][0]) / cols;
        if (kg_tensor_plant_edges(&sj->in[0][0], rows, cols, (kgate_stream)s, err))
            return err->code;
    }
    {
        kgate_params p = sj->params;
        if (op->reference(sj->in[0], sj->n_in, ref, &p, (kgate_stream)s)) {
            kg_err_set(err, KG_EXIT_ENV, "the %s reference failed: %s", op->name,
                       cudaGetErrorString(cudaGetLastError()));
            return err->code;
        }
    }
    before = inputs_checksum(sj, 0, s, err);
    if (err->code)
        return err->code;
    for (int i = 0; i < sj->n_out; i++)
        if (kg_tensor_poison(&sj->out[0][i], (kgate_stream)s, err))
            return err->code;
    if (subject_launch(sj, 0, (kgate_stream)s, err))
        return err->code;
    {
        cudaError_t rc = cudaStreamSynchronize(s);
        if (rc == cudaSuccess)
            rc = cudaGetLastError();
        if (rc != cudaSuccess)
            return kg_err_set(err, KG_EXIT_FAIL, "%s %s: %s (%s)", subj_name, what,
                              cudaGetErrorString(rc), cudaGetErrorName(rc));
    }
    after = inputs_checksum(sj, 0, s, err);
    if (err->code)
        return err->code;
    *mutated = before != after;
    if (kg_tensor_compare(&sj->out[0][0], ref, tol, cmp, (kgate_stream)s, err))
        return err->code;
    kg_cmp_describe(cmp, desc, sizeof desc);
    cJSON *o = ev("check");
    cJSON_AddStringToObject(o, "subject", subj_name);
    cJSON_AddStringToObject(o, "what", what);
    cJSON_AddBoolToObject(o, "pass", cmp->pass && !*mutated);
    cJSON_AddNumberToObject(o, "rel_l2", cmp->rel_l2);
    cJSON_AddNumberToObject(o, "max_abs_err", cmp->max_abs_err);
    cJSON_AddBoolToObject(o, "inputs_mutated", *mutated);
    cJSON_AddStringToObject(o, "desc", desc);
    emit(o);
    return 0;
}

static void emit_timing(const char *who, const kg_timing *t)
{
    const char *p = strcmp(who, "lib") == 0 ? "lib/time/" : "time/gpu/";
    char name[48];
#define S(suffix, v)                                         \
    do {                                                     \
        snprintf(name, sizeof name, "%s%s", p, suffix);      \
        emit_sum(who, name, v);                              \
    } while (0)
    S("median", t->st.median);
    S("ci_lo", t->st.ci_lo);
    S("ci_hi", t->st.ci_hi);
    if (strcmp(who, "kernel") == 0) {
        S("min", t->st.min);
        S("p10", t->st.p10);
        S("p90", t->st.p90);
        S("relstd", t->st.relstd);
        S("spread", t->st.spread);
        emit_sum(who, "time/samples", t->st.n);
        emit_sum(who, "time/throttled", t->n_throttled);
        emit_sum(who, "time/wall", t->wall_s);
        emit_sum(who, "time/event/median", t->event_median_s);
        emit_sum(who, "time/traced", t->n_traced);
        if (t->clock_mhz > 0)
            emit_sum(who, "time/clock", t->clock_mhz);
        if (t->batched)
            emit_sum(who, "time/batch/mean", t->batch_mean_s);
        if (t->escaped)
            emit_sum(who, "time/escaped", t->escaped_s);
    }
#undef S
    cJSON *o = ev("timing");
    cJSON_AddStringToObject(o, "subject", who);
    cJSON_AddStringToObject(o, "stop", kg_stop_name(t->stop));
    cJSON_AddBoolToObject(o, "escaped", t->escaped);
    cJSON_AddNumberToObject(o, "throttled", t->n_throttled);
    cJSON_AddStringToObject(o, "note", t->note);
    emit(o);
}

static int parse_job(int argc, char **argv, job *j, kg_err *err)
{
    memset(j, 0, sizeof *j);
    j->trials = 3;
    j->edge = 1;
    j->seed = 1;
    kg_stop_defaults(&j->stop);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(flag) (strcmp(a, flag) == 0 && v && (i++, 1))
        if (OPT("--fd")) {
            int fd = atoi(v);
            ev_out = fdopen(fd, "w");
        } else if (OPT("--plugin")) j->plugin = v;
        else if (OPT("--kernel")) j->kernel = v;
        else if (OPT("--op")) j->op_name = v;
        else if (OPT("--dtype")) j->dtype_name = v;
        else if (OPT("--shape")) j->shape_text = v;
        else if (OPT("--device")) j->device = atoi(v);
        else if (OPT("--trials")) j->trials = atoi(v);
        else if (OPT("--seed")) j->seed = strtoull(v, NULL, 10);
        else if (OPT("--max-noise")) j->stop.max_noise = atof(v);
        else if (OPT("--min-time")) j->stop.min_gpu_s = atof(v);
        else if (OPT("--max-time")) j->stop.max_wall_s = atof(v);
        else if (OPT("--min-samples")) j->stop.min_samples = atoi(v);
        else if (strcmp(a, "--list") == 0) j->list = 1;
        else if (strcmp(a, "--baseline") == 0) j->baseline = 1;
        else if (strcmp(a, "--hot") == 0) j->hot = 1;
        else if (strcmp(a, "--memset-flush") == 0) j->memset_flush = 1;
        else if (strcmp(a, "--no-edge") == 0) j->edge = 0;
        else
            return kg_err_set(err, KG_EXIT_USAGE, "worker: unknown argument '%s'", a);
#undef OPT
    }
    return 0;
}

/* Checks and times one subject; `who` is "kernel" or "lib". */
static int run_subject(subject *sj, const job *j, const kg_op *op, kg_dtype dt,
                       const kg_shape *shape, const char *who, int n_sets, cudaStream_t s,
                       kg_err *err)
{
    kg_tol tol = kg_tol_for(dt, op->reduction);
    double *ref = NULL;
    kg_cmp cmp;
    int mutated = 0, passed = 0, trials = strcmp(who, "lib") == 0 ? 1 : j->trials;
    double worst_l2 = 0, worst_abs = 0;
    int64_t n_out = kg_tensor_numel(&sj->out[0][0]);
    int64_t rows, cols;
    cur_subject = who;
    KG_CUDA(cudaMalloc((void **)&ref, sizeof(double) * (size_t)n_out));
    for (int t = 0; t < trials; t++) {
        char what[32];
        snprintf(what, sizeof what, "trial %d", t + 1);
        if (check_once(sj, op, who, what, j->seed + (unsigned long long)t, 0, ref, &tol, s, &cmp,
                       &mutated, err))
            goto out;
        if (!cmp.pass || mutated) {
            /* a wrong library result is reported by its check event and
             * flagged baseline-incorrect; only the kernel can be INCORRECT */
            if (strcmp(who, "kernel") == 0) {
                char d[768];
                kg_cmp_describe(&cmp, d, sizeof d);
                emit_fail("incorrect", mutated ? "the kernel modified its inputs" : d);
                goto out;
            }
        } else {
            passed++;
        }
        worst_l2 = cmp.rel_l2 > worst_l2 ? cmp.rel_l2 : worst_l2;
        worst_abs = cmp.max_abs_err > worst_abs ? cmp.max_abs_err : worst_abs;
    }
    if (strcmp(who, "kernel") == 0) {
        emit_sum(who, "check/trials", passed);
        emit_sum(who, "check/rel_l2", worst_l2);
        emit_sum(who, "check/max_abs_err", worst_abs);
        kg_input0_matrix(op, shape, &rows, &cols);
        if (j->edge && rows >= op->min_rows) {
            if (check_once(sj, op, who, "edge cases", j->seed + 7777, 1, ref, &tol, s, &cmp,
                           &mutated, err))
                goto out;
            emit_sum(who, "check/edge", cmp.pass && !mutated);
            if (!cmp.pass || mutated) {
                char d[900];
                kg_cmp_describe(&cmp, d, sizeof d);
                char m[1024];
                snprintf(m, sizeof m, "edge cases (%.100s): %.880s", op->edge_semantics, d);
                emit_fail("incorrect", m);
                goto out;
            }
        }
    }
    {
        kg_timer_cfg tc;
        kg_timing tm;
        kg_timer_defaults(&tc);
        tc.stop = j->stop;
        tc.flush = j->hot ? KG_FLUSH_NONE : j->memset_flush ? KG_FLUSH_MEMSET : KG_FLUSH_READ;
        tc.n_sets = n_sets;
        for (int set = 1; set < n_sets; set++)
            if (fill_inputs(sj, op, set, j->seed + 100 + (unsigned long long)set, s, err))
                goto out;
        if (fill_inputs(sj, op, 0, j->seed + 100, s, err))
            goto out;
        if (kg_time(&tc, subject_launch, sj, (kgate_stream)s, &tm, err))
            goto out;
        emit_timing(who, &tm);
    }
    if (strcmp(who, "kernel") == 0) {
        /* A kernel that caches results by pointer would pass the trials above
         * and then time a no-op: check again on fresh inputs after timing. */
        if (check_once(sj, op, who, "after timing", j->seed + 4242, 0, ref, &tol, s, &cmp,
                       &mutated, err))
            goto out;
        if (!cmp.pass || mutated) {
            char d[768];
            kg_cmp_describe(&cmp, d, sizeof d);
            emit_fail("incorrect", d);
        }
    }
out:
    if (ref)
        cudaFree(ref);
    return err->code;
}

static int do_job(const job *j, kg_err *err)
{
    void *handle = NULL, *fb_handle = NULL;
    const kgate_plugin *plug = NULL, *fb_plug = NULL;
    const kg_op *op = NULL;
    kg_dtype dt = KG_FP16;
    kg_shape shape;
    subject sj;
    cudaStream_t s = NULL;
    int n_sets = 1, have_sets = 0;
    memset(&sj, 0, sizeof sj);

    if (j->plugin) {
        if (kg_plugin_open(j->plugin, &handle, &plug, err))
            return err->code;
        cJSON *o = ev("table"), *arr = cJSON_AddArrayToObject(o, "kernels");
        for (uint32_t i = 0; i < plug->n_kernels; i++) {
            cJSON *k = cJSON_CreateObject();
            cJSON_AddStringToObject(k, "name", plug->kernels[i].name);
            cJSON_AddStringToObject(k, "op", plug->kernels[i].op);
            cJSON_AddStringToObject(k, "dtype", plug->kernels[i].dtype);
            cJSON_AddStringToObject(k, "summary",
                                    plug->kernels[i].summary ? plug->kernels[i].summary : "");
            cJSON_AddItemToArray(arr, k);
        }
        emit(o);
        if (j->list)
            goto out;
    }
    op = kg_op_find(j->op_name);
    if (!op || kg_dtype_parse(j->dtype_name, &dt) || kg_shape_parse(op, j->shape_text, &shape, err)) {
        kg_err_set(err, KG_EXIT_USAGE, "worker: bad job (op, dtype or shape)");
        goto out;
    }
    {
        int n = 0;
        cudaError_t rc = cudaGetDeviceCount(&n);
        if (rc != cudaSuccess || n == 0) {
            kg_err_set(err, KG_EXIT_ENV, "no CUDA GPU: %s", rc ? cudaGetErrorString(rc) : "0 devices");
            goto out;
        }
    }
    KG_CUDA(cudaSetDevice(j->device));
    KG_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    {
        struct cudaDeviceProp prop;
        KG_CUDA(cudaGetDeviceProperties(&prop, j->device));
        cJSON *o = ev("hello");
        cJSON_AddStringToObject(o, "device", prop.name);
        emit(o);
        if (j->hot) {
            kg_work w;
            op->work(&shape, dt, &w);
            n_sets = (int)(2.0 * prop.l2CacheSize / w.bytes) + 1;
            n_sets = n_sets < 1 ? 1 : n_sets > MAX_SETS ? MAX_SETS : n_sets;
        }
    }
    if (alloc_sets(&sj, op, dt, &shape, n_sets, err))
        goto out;
    have_sets = 1;
    sj.params.struct_size = sizeof sj.params;
    sj.params.eps = op->eps;
    sj.params.error = sj.msg;
    sj.params.error_size = sizeof sj.msg;

    if (j->baseline) {
        char note[320] = "";
        int unsupported = 0;
        kg_err berr = {0, ""};
        cJSON *o = ev("baseline");
        cJSON_AddStringToObject(o, "name", op->baseline->name);
        if (op->baseline->setup(op, dt, sj.in[0], sj.out[0], &sj.params, (kgate_stream)s, &sj.bctx,
                                &unsupported, note, sizeof note, &berr) == 0) {
            sj.baseline = op->baseline;
            cJSON_AddStringToObject(o, "note", note);
            cJSON_AddBoolToObject(o, "fallback", 0);
        } else if (unsupported && op->fallback) {
            char dir[PATH_MAX], path[PATH_MAX + 32];
            kg_self_dir(dir, sizeof dir);
            snprintf(path, sizeof path, "%s/libkgate_bundled.so", dir);
            if (kg_plugin_open(path, &fb_handle, &fb_plug, err) ||
                !(sj.kernel = kg_plugin_find(fb_plug, op->fallback))) {
                cJSON_Delete(o);
                kg_err_set(err, KG_EXIT_ENV, "baseline unsupported (%s) and fallback %s missing",
                           berr.msg, op->fallback);
                goto out;
            }
            snprintf(note, sizeof note, "%s unsupported (%.160s); bundled %s stands in",
                     op->baseline->name, berr.msg, op->fallback);
            cJSON_AddStringToObject(o, "note", note);
            cJSON_AddBoolToObject(o, "fallback", 1);
        } else {
            cJSON_Delete(o);
            *err = berr;
            goto out;
        }
        emit(o);
        if (run_subject(&sj, j, op, dt, &shape, "lib", 1, s, err))
            goto out;
        if (sj.baseline)
            sj.baseline->teardown(sj.bctx);
        sj.baseline = NULL;
        sj.bctx = NULL;
    }
    if (j->kernel) {
        if (!plug || !(sj.kernel = kg_plugin_find(plug, j->kernel))) {
            kg_err_set(err, KG_EXIT_CANDIDATE, "%s: no kernel named '%s'", j->plugin, j->kernel);
            goto out;
        }
        if (run_subject(&sj, j, op, dt, &shape, "kernel", n_sets, s, err))
            goto out;
    }
out:
    if (sj.baseline)
        sj.baseline->teardown(sj.bctx);
    if (have_sets)
        free_sets(&sj, n_sets);
    if (s)
        cudaStreamDestroy(s);
    (void)handle;
    (void)fb_handle; /* kept loaded: kernels may still be referenced by the runtime */
    return err->code;
}

int kg_worker_main(int argc, char **argv)
{
    job j;
    kg_err err = {0, ""};
    if (parse_job(argc, argv, &j, &err) == 0)
        do_job(&j, &err);
    if (err.code) {
        if (err.code == KG_EXIT_FAIL)
            emit_fail("crash", err.msg);
        else
            emit_error(&err);
    }
    cJSON *o = ev("done");
    cJSON_AddNumberToObject(o, "code", err.code);
    emit(o);
    return err.code ? 3 : 0;
}
