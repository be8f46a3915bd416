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

#include "../catalog/arch.h"
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

#include "bench.h"

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

/* Timer hooks for the kernel: poison the outputs before every call, and
 * re-check chosen timed calls against the references of their input set. */
static int before_cb(void *p, int set, kgate_stream s, kg_err *err)
{
    kg_bench *b = p;
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
    kg_bench *b = p;
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
static unsigned long long call_seed(const kg_bench *b, long call)
{
    unsigned long long x = b->refill_seed + (unsigned long long)call * 0x9E3779B97F4A7C15ull;
    return kg_splitmix64(&x);
}

static int refill_cb(void *p, int set, long call, kgate_stream s, kg_err *err)
{
    kg_bench *b = p;
    if (kg_bench_fill_on(b, set, call_seed(b, call), KG_DIST_UNIFORM, s, err) || kg_bench_prepare_on(b, set, s, err))
        return err->code;
    return 0;
}

/* Re-checks a timed call: its inputs as it left them, then as it was given
 * them (regenerated from its call's seed): they must agree (the call did
 * not modify them), and its outputs must match the references of those
 * inputs. */
static int verify_cb(void *p, int set, long call, kg_err *err)
{
    kg_bench *b = p;
    kg_cmp cmp;
    int which = 0;
    char d[800];
    if (kg_bench_collect(b, set, err))
        return -1;
    uint64_t now = kg_bench_inputs_checksum(b, set, err);
    if (err->code || refill_cb(b, set, call, (kgate_stream)b->s, err))
        return -1;
    uint64_t given = kg_bench_inputs_checksum(b, set, err);
    if (err->code)
        return -1;
    if (now != given) {
        snprintf(b->verify_msg, sizeof b->verify_msg, "a timed call modified its inputs%s",
                 b->problem ? " (or the problem's input factory does not give the same inputs for a seed)" : "");
        return 1;
    }
    if (kg_bench_compute_refs(b, set, err) || kg_bench_compare(b, set, &cmp, &which, err) || kg_bench_hide_refs(b, set, err))
        return -1;
    if (!cmp.pass) {
        kg_bench_describe_cmp(b, &cmp, d, sizeof d);
        snprintf(b->verify_msg, sizeof b->verify_msg, "a timed call's output %s is wrong (it was right "
                 "in the checks before timing): %.700s", b->op->out[which].name, d);
        return 1;
    }
    int oob = kg_bench_check_guards(b, set, d, sizeof d, err);
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
    kg_bench *b = p; /* nothing of kgate's in the profiled call: its memsets would be ranges too */
    return kg_bench_launch(b, 0, (kgate_stream)b->s, err);
}

static int diagnose_subject(kg_bench *b, kg_err *err)
{
    kg_diagnosis *d = malloc(sizeof *d);
    if (!d)
        return kg_err_set(err, KG_EXIT_ENV, "out of memory for the diagnosis");
    const int ext = b->job->diagnose == 2;
    kg_bench_set_scalars(b, 0);
    if (kg_kf_describe(diag_launch, b, ext ? kg_prof_extended_metrics : kg_prof_default_metrics,
                       ext ? kg_prof_n_extended : kg_prof_n_default, b->job->patched_max_s, b->job->scratch, d,
                       err)) {
        free(d);
        return err->code;
    }
    /* where the diagnosis's wall time went (the profiler's parts only when
     * it ran) */
    kg_wev_sum(b, "time/phase/diagnose", d->wall_s);
    if (d->passes > 0) {
        double setup, passes, eval;
        kg_prof_last_times(&setup, &passes, &eval);
        kg_wev_sum(b, "time/diagnose/profiler-setup", setup);
        kg_wev_sum(b, "time/diagnose/passes", passes);
        kg_wev_sum(b, "time/diagnose/evaluate", eval);
    }
    kg_wev_sum(b, "time/diagnose/sass", kg_kf_last_sass_s());
    for (int i = 0; i < d->n_kernels; i++) {
        kg_event e = kg_wev_subject(b, KG_EV_KERNEL);
        e.kf = &d->kernels[i];
        kg_wev_emit(&e);
    }
    kg_event e = kg_wev_subject(b, KG_EV_DIAG);
    snprintf(e.text, sizeof e.text, "%s%s%.500s", watch_note, watch_note[0] && d->note[0] ? "; " : "", d->note);
    e.passes = d->passes;
    e.launches = d->launches;
    e.busy_s = d->busy_s;
    e.wall_s = d->wall_s;
    kg_wev_emit(&e);
    free(d);
    return 0;
}

/* Whether the kernel (and its configuration, in kgate tune) takes a shape. */
static int shape_supported(const kg_bench *b, const kg_shape *sh)
{
    if (b->tunable && b->tunable->valid && !b->tunable->valid(b->job->config, sh->d, sh->n))
        return 0;
    return !b->kernel->supports || b->kernel->supports(sh->d, sh->n);
}

/* Asks the kernel about every shape of its job once, the job's first, before
 * any call: when and how often supports() is called would otherwise tell it
 * which phase it is in (the extra shapes come between the checks and the
 * timing). Returns whether it takes the job's shape. */
static int ask_supports(kg_bench *b)
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
static int subject_trials(kg_bench *b, int *done, kg_err *err)
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
        if (kg_bench_check_dist(b, what, j->seed + (unsigned long long)t, 0, has_alt && t == 1, dist[t], &pass,
                       desc, sizeof desc, err))
            return err->code;
        if (!pass) {
            char m[1024];
            snprintf(m, sizeof m, "%s: %.990s", what, desc);
            if (b->who != KG_SUBJ_LIB) /* a wrong library path is marked by its check event */
                kg_wev_fail(b, "incorrect", m);
            *done = 1;
            return 0;
        }
    }
    if (kernel)
        kg_wev_sum(b, "check/trials", trials);
    return 0;
}

/* The kernel's edge rows, where the operator has them. *done = 1 when they
 * failed (the fail event sent). */
static int subject_edge(kg_bench *b, int *done, kg_err *err)
{
    const kg_job *j = b->job;
    int64_t rows, cols;
    int pass = 0;
    char desc[1024];
    kg_input0_matrix(b->op, &b->shape, &rows, &cols);
    if (!(j->edge && !b->problem && rows >= b->op->min_rows && b->op->in[0].type == KG_T_DATA))
        return 0;
    if (kg_bench_check_once(b, "edge cases", j->seed + 7777, 1, 0, &pass, desc, sizeof desc, err))
        return err->code;
    kg_wev_sum(b, "check/edge", pass);
    if (!pass) {
        char m[1024];
        snprintf(m, sizeof m, "edge cases (%.200s): %.780s", b->op->edge_semantics, desc);
        kg_wev_fail(b, "incorrect", m);
        *done = 1;
    }
    return 0;
}

/* The timer's configuration for the subject: fresh inputs every call
 * (refill_cb), and for the kernel the re-checks of timed calls, with room
 * for the references of every input set. */
static int subject_timer_cfg(kg_bench *b, kg_timer_cfg *tc, kg_err *err)
{
    const kg_job *j = b->job;
    int kernel = b->who == KG_SUBJ_KERNEL;
    kg_timer_defaults(tc);
    tc->stop = j->stop;
    tc->flush = j->hot ? KG_FLUSH_NONE : j->flush;
    tc->n_sets = kernel ? b->n_sets : 1;
    kg_bench_set_scalars(b, 0);
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
static int subject_time(kg_bench *b, int *done, kg_err *err)
{
    int kernel = b->who == KG_SUBJ_KERNEL;
    kg_timer_cfg tc;
    kg_timing tm;
    if (subject_timer_cfg(b, &tc, err))
        return err->code;
    char again[230] = ""; /* what the first timing saw, when there was a second */
    for (int tries = kernel ? 1 : 2;; tries--) {
        if (kg_time(&tc, kg_bench_launch, b, (kgate_stream)b->s, &tm, err)) {
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
        kg_wev_sum(b, "time/retimed", 1);
    }
    if (kernel && tm.n_vendor) /* a library path's are the library's own */
        kg_timing_note(&tm, "%d kernel(s) named like %s's (%.0f%% of its kernel time, %.0f%% computing, the "
                       "rest fills, copies or casts), the first %s",
                       tm.n_vendor, tm.vendor_lib ? tm.vendor_lib : "a library", 100 * tm.vendor_share,
                       100 * tm.vendor_compute_share, tm.vendor_first);
    kg_wev_timing(b, &tm);
    if (kernel && tm.verify_failed) {
        kg_wev_fail(b, "incorrect", b->verify_msg);
        *done = 1;
    }
    return 0;
}

/* A kernel that caches results by pointer would pass the trials and then
 * time a no-op: the kernel is checked again on fresh inputs after timing.
 * *done = 1 when that failed (the fail event sent). */
static int subject_recheck(kg_bench *b, int *done, kg_err *err)
{
    int pass = 0;
    char desc[1024];
    double t_recheck = kg_mono();
    if (kg_bench_check_once(b, "after timing", b->job->seed + 4242, 0, 0, &pass, desc, sizeof desc, err))
        return err->code;
    if (!pass) {
        kg_wev_fail(b, "incorrect", desc);
        *done = 1;
        return 0;
    }
    kg_wev_sum(b, "check/max_scaled_err", isfinite(b->max_scaled_err) ? b->max_scaled_err : 1e300);
    kg_wev_sum(b, "time/phase/recheck", kg_mono() - t_recheck);
    return 0;
}

/* Checks and times the current subject. The kernel gets `trials` random
 * trials (the second with the required scalars at their alt values), the
 * edge rows, timing, and a check after timing; a library path or the
 * bundled variant one trial and timing. Returns non-zero on an error (a
 * crash of the subject is KG_EXIT_FAIL); a wrong result is a fail event. */
static int run_subject(kg_bench *b, kg_err *err)
{
    const kg_job *j = b->job;
    int kernel = b->who == KG_SUBJ_KERNEL, done = 0;
    double t_checks = kg_mono(); /* where a kernel job's time goes: time/phase/... */
    if (kernel) {
        kg_wev_sum(b, "time/phase/setup", t_checks - t_hello);
        kg_wev_sum(b, "time/phase/open", phase_open_s);
        kg_wev_sum(b, "time/phase/context", phase_context_s);
    }
    if (subject_trials(b, &done, err) || done)
        return err->code;
    if (kernel && (subject_edge(b, &done, err) || done))
        return err->code;
    if (kernel && kg_bench_check_extra_shapes(b, err))
        return err->code;
    if (b->failed)
        return 0;
    if (kernel)
        kg_wev_sum(b, "time/phase/checks", kg_mono() - t_checks);
    if (j->verify_only && kernel) /* checks only; a diagnosis still describes the kernel */
        return j->diagnose ? diagnose_subject(b, err) : 0;
    double t_timing = kg_mono();
    if (subject_time(b, &done, err) || done)
        return err->code;
    if (kernel) {
        kg_wev_sum(b, "time/phase/timing", kg_mono() - t_timing);
        if (subject_recheck(b, &done, err) || done)
            return err->code;
    }
    if (kernel && j->diagnose) {
        /* the references are done with: the profiler's kernel replay saves
         * and restores device memory, so less of it is less time (conv2d's
         * fp64 output reference alone is 1 GB at its large preset) */
        if (kg_bench_free_refs(b, err))
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
    kg_event e = kg_wev_new(KG_EV_TABLE, KG_SUBJ_NONE, NULL);
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
    kg_wev_line(line); /* serialized once */
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
static int time_library_table(kg_bench *b, const kgate_plugin *lib, const kg_provider *pv, kg_err *err)
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
        kg_bench_set_scalars(b, 0);
        kg_event e = kg_wev_new(KG_EV_SUBJECT, KG_SUBJ_LIB, b->path);
        snprintf(e.text, sizeof e.text, "%.1000s", k->summary ? k->summary : "");
        kg_wev_emit(&e);
        if (run_subject(b, err))
            return err->code;
    }
    b->kernel = NULL;
    b->prov = NULL;
    return 0;
}

/* A problem's library paths: the table its provider offers. */
static int problem_library(kg_bench *b, kg_err *err)
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

static int do_library(kg_bench *b, kg_err *err)
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
        if (bl->dtypes && !(bl->dtypes & (1u << b->types.data)))
            continue; /* a path of other dtypes (TF32: fp32's) */
        char note[320] = "";
        kg_err serr = {0, ""};
        b->who = KG_SUBJ_LIB;
        snprintf(b->path, sizeof b->path, "%s", bl->name);
        b->baseline = NULL;
        b->kernel = NULL;
        kg_bench_set_scalars(b, 0);
        if (kg_bench_fill_inputs(b, 0, j->seed, err) || kg_bench_prepare_inputs(b, 0, err))
            return err->code;
        if (bl->setup(op, b->in[0], b->out[0], &b->params, (kgate_stream)b->s, &b->bctx, note,
                      sizeof note, &serr)) {
            kg_event e = kg_wev_new(KG_EV_UNSUPPORTED, KG_SUBJ_LIB, bl->name);
            snprintf(e.text, sizeof e.text, "%s", serr.msg[0] ? serr.msg : "unsupported");
            kg_wev_emit(&e);
            cudaGetLastError(); /* a refused setup leaves no sticky error behind */
            continue;
        }
        b->baseline = bl;
        kg_event e = kg_wev_new(KG_EV_SUBJECT, KG_SUBJ_LIB, bl->name);
        snprintf(e.text, sizeof e.text, "%s", note);
        kg_wev_emit(&e);
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
            kg_event e = kg_wev_new(KG_EV_UNSUPPORTED, KG_SUBJ_LIB, "torch");
            snprintf(e.text, sizeof e.text, "%s", msg[0] ? msg : "PyTorch could not be loaded");
            kg_wev_emit(&e);
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
    kg_event e = kg_wev_new(KG_EV_SUBJECT, KG_SUBJ_BEST, NULL);
    if (open_source(j->plugin, &p, &pv, &perr)) {
        snprintf(e.text, sizeof e.text, KG_BUNDLED_UNLOADED ": %.900s", perr.msg);
        kg_wev_emit(&e);
        return 0;
    }
    b->kernel = find_fast(p, op, b->types);
    b->prov = pv;
    if (!b->kernel) {
        snprintf(e.text, sizeof e.text, "no bundled %s_%s kernel for %s", op->name,
                 op->fast ? op->fast : "(none)", kg_dtype_name(b->types.data));
        kg_wev_emit(&e);
        return 0;
    }
    int cc = 0;
    char why[300];
    if (kg_device_cc(j->device, &cc, err))
        return err->code;
    if (kg_arch_unavailable(op, b->kernel->name, cc, kg_arch_build(), why, sizeof why)) {
        snprintf(e.text, sizeof e.text, "bundled %s not on this GPU: %s", b->kernel->name, why);
        kg_wev_emit(&e);
        b->kernel = NULL;
        return 0;
    }
    snprintf(b->path, sizeof b->path, "%s", b->kernel->name);
    snprintf(e.path, sizeof e.path, "%s", b->kernel->name);
    snprintf(e.text, sizeof e.text, "bundled %s: %s", b->kernel->name,
             b->kernel->summary ? b->kernel->summary : "");
    kg_wev_emit(&e);
    return run_subject(b, err);
}

static int do_measure(const kg_job *j, kg_err *err)
{
    kg_bench b;
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
        b.n_sets = b.n_sets < 1 ? 1 : b.n_sets > KG_BENCH_SETS ? KG_BENCH_SETS : b.n_sets;
    }
    /* a guard byte the candidate cannot count on (never 0x00 or 0xFF) */
    kg_tensor_guard_pattern((unsigned char)(1 + secret_seed() % 254));
    if (kg_bench_alloc(&b, err))
        goto out;
    if (j->mode == KG_JOB_LIBRARY)
        do_library(&b, err);
    else
        run_subject(&b, err);
out:
    if (err->code == KG_EXIT_FAIL) /* the subject crashed: say which */
        kg_wev_fail(&b, "crash", err->msg);
    if (b.baseline)
        b.baseline->teardown(b.bctx);
    kg_bench_free(&b);
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
    FILE *events = NULL;
    for (int i = 0; i + 1 < argc; i++)
        if (strcmp(argv[i], "--fd") == 0) {
            char *end;
            long fd = strtol(argv[i + 1], &end, 10);
            if (*end == '\0' && fd > 2 && fd < 65536)
                events = fdopen((int)fd, "w");
        }
    kg_wev_open(events);
    if (!events) {
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
        kg_event e = kg_wev_new(KG_EV_HELLO, KG_SUBJ_NONE, NULL);
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
        kg_wev_emit(&e);
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
            e = kg_wev_new(KG_EV_FAIL, KG_SUBJ_KERNEL, NULL);
            snprintf(e.fail_kind, sizeof e.fail_kind, "crash");
            err.code = KG_EXIT_FAIL;
        } else {
            e = kg_wev_new(KG_EV_ERROR, KG_SUBJ_NONE, NULL);
            e.code = err.code;
            snprintf(e.nonce, sizeof e.nonce, "%s", have_job ? j.nonce : "");
        }
        snprintf(e.text, sizeof e.text, "%s", err.msg);
        kg_wev_emit(&e);
    }
    kg_event e = kg_wev_new(KG_EV_DONE, KG_SUBJ_NONE, NULL);
    e.code = err.code;
    e.unsupported = job_unsupported && !err.code;
    snprintf(e.nonce, sizeof e.nonce, "%s", have_job ? j.nonce : "");
    kg_wev_emit(&e);
    return err.code ? 3 : 0;
}
