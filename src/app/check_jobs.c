/* The jobs that judge a target: a group's job and its library job (from
 * --lib-cache when it holds it), a kernel's job and its judged result, and
 * the runs --memcheck and --diagnose=auto add. */
#include "check_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cublasLt.h>

#include "../base/text.h"
#include "../catalog/problem.h"
#include "../gpu/cudnn_api.h"
#include "../judge/judge.h"
#include "../judge/worker_end.h"
#include "../store/lib_cache.h"
#include "kgate_build.h"

/* A seed nobody predicts: the extra shapes of this run. */
unsigned long long kg_check_fresh_seed(void) { return kg_random64(); }

/* The bundled candidate shipped with this executable, or "" (E_best then
 * has no bundled variant: said in the results). */
void kg_check_bundled_path(char *buf, size_t size)
{
    char exe[PATH_MAX];
    kg_self_exe(exe, sizeof exe);
    if (kg_shipped(exe, KG_SHIP_CANDIDATE, "libkgate_bundled.so", buf, size))
        buf[0] = '\0';
}

static int scalars_for(const kg_options *o, const kg_op *op, kg_scalars *sc, kg_err *err);
static void job_from_options(const kg_options *o, kg_job *j);

/* The job of one operator, dtypes and shape: the command's options, the
 * operator's scalars and, with extra shapes on (not for a problem, which
 * has one shape), three extra shapes drawn from seed. */
int kg_check_group_job(const kg_options *o, const kg_op *op, kg_types types, const kg_shape *shape,
                       unsigned long long seed, kg_job *job, kg_err *err)
{
    job_from_options(o, job);
    job->op = op;
    job->types = types;
    job->shape = *shape;
    if (scalars_for(o, op, &job->scalars, err))
        return err->code;
    kg_scalars_bind(op, shape, &job->scalars); /* the job says what its shape's calls get */
    if (o->extra && !kg_problem_of(op)) {
        kg_shape x[3];
        job->n_extra = kg_extra_shapes(op, seed ^ (uintptr_t)op, x);
        memcpy(job->extra, x, sizeof x);
    }
    return 0;
}

/* Makes `job` (its shape and extra shapes set) a kernel job of target t,
 * and r the empty result that names it. */
void kg_check_kernel_job(const kg_check_target *t, const char *summary, kg_job *job, kg_result *r)
{
    memset(r, 0, sizeof *r);
    job->mode = KG_JOB_KERNEL;
    snprintf(job->plugin, sizeof job->plugin, "%s", t->plugin);
    snprintf(job->kernel, sizeof job->kernel, "%s", t->kernel);
    snprintf(r->kernel, sizeof r->kernel, "%s", t->kernel);
    snprintf(r->summary, sizeof r->summary, "%s", summary);
    snprintf(r->source, sizeof r->source, "%s", kg_cmds_relative(t->plugin));
    snprintf(r->op, sizeof r->op, "%s", t->op->name);
    snprintf(r->dtype, sizeof r->dtype, "%s", kg_dtype_name(t->types.data));
    if (kg_op_has_index(t->op))
        snprintf(r->index_dtype, sizeof r->index_dtype, "%s", kg_dtype_name(t->types.index));
    kg_shape_format(&job->shape, r->shape, sizeof r->shape);
    size_t u = strlen(r->extra_shapes);
    for (int q = 0; q < job->n_extra; q++) {
        char xs[64];
        kg_append(r->extra_shapes, sizeof r->extra_shapes, &u, "%s%s", u ? " " : "",
                  kg_shape_format(&job->extra[q], xs, sizeof xs));
    }
}

/* The job options common to every job of a command. */
static void job_from_options(const kg_options *o, kg_job *j)
{
    kg_job_defaults(j);
    j->hot = o->hot;
    j->flush = o->memset_flush ? KG_FLUSH_MEMSET : KG_FLUSH_READ;
    j->trials = o->trials;
    j->edge = o->edge;
    j->seed = o->seed;
    j->stop = o->stop;
    j->device = o->device;
    j->verify_only = o->verify_only;
    j->sandbox = o->sandbox;
    j->diagnose = o->diagnose == KG_DIAG_ALWAYS ? 1 : o->diagnose == KG_DIAG_EXTENDED ? 2 : 0;
    j->patched_max_s = o->patched_max_s;
    j->torch = o->torch;
}

/* The scalars of op for this command: defaults, then --param. */
static int scalars_for(const kg_options *o, const kg_op *op, kg_scalars *sc, kg_err *err)
{
    kg_scalars_default(op, sc);
    for (int i = 0; i < o->n_params; i++) {
        const char *eq = strchr(o->params[i], '=');
        size_t len = eq ? (size_t)(eq - o->params[i]) : 0;
        int mine = 0;
        for (int k = 0; k < op->n_scalars; k++)
            mine |= strlen(op->scalars[k].name) == len && strncmp(op->scalars[k].name, o->params[i], len) == 0;
        if (mine && kg_scalars_set(op, sc, o->params[i], err))
            return err->code;
    }
    return 0;
}

/* compute-sanitizer, from PATH or the CUDA toolkit; NULL when absent. */
/* A job of one checked call of the kernel, no timing: what --memcheck and
 * --diagnose=auto run again. */
static kg_job checked_once(const kg_job *base)
{
    kg_job j = *base;
    j.verify_only = 1;
    j.trials = 1;
    j.edge = 0;
    j.n_extra = 0;
    j.diagnose = 0;
    return j;
}

/* --memcheck: one checked call of the kernel under memcheck, then racecheck.
 * Returns 0, or a CUDA-level error found (written into r as INCORRECT). */
int kg_check_memcheck(const char *exe, const kg_job *base, double timeout_s, kg_result *r, kg_err *err)
{
    static char found[PATH_MAX];
    const char *cs = kg_find_tool("compute-sanitizer", NULL, found, sizeof found);
    size_t u = strlen(r->detail);
    if (!cs) {
        kg_append(r->detail, sizeof r->detail, &u, "%s--memcheck: compute-sanitizer not found (PATH, /usr/local/cuda/bin)",
                  u ? "; " : "");
        return 0;
    }
    const char *tools[] = {"memcheck", "racecheck"};
    for (int t = 0; t < 2; t++) {
        const char *wrap[] = {cs, "--tool", tools[t], "--error-exitcode", "86", "--print-limit", "4", NULL};
        kg_job j = checked_once(base);
        kg_result x;
        memset(&x, 0, sizeof x);
        if (kg_cmds_run_locked(wrap, exe, &j, timeout_s * 10, &x, NULL, NULL, err))
            return err->code;
        if (x.wrapper_exit == 86 || (x.verdict == KG_V_CRASH && x.wrapper_exit != 0)) {
            kg_judge_sanitizer(r, tools[t], x.wrapper_tail[0] ? x.wrapper_tail : x.reason);
            return 0;
        }
    }
    kg_append(r->detail, sizeof r->detail, &u, "%scompute-sanitizer memcheck and racecheck: no errors in one checked call",
              u ? "; " : "");
    return 0;
}

/* --diagnose=auto: a SLOW kernel is described by one more worker (checks
 * once, no timing); its facts join the judged result. */
int kg_check_diagnose_again(const char *exe, const kg_job *base, double timeout_s, kg_result *r, kg_err *err)
{
    kg_job j = checked_once(base);
    kg_result x;
    memset(&x, 0, sizeof x);
    j.diagnose = 1;
    if (kg_cmds_run_locked(NULL, exe, &j, timeout_s, &x, NULL, NULL, err)) {
        free(x.diag);
        return err->code;
    }
    if (x.diag) {
        r->diag = x.diag;
    } else {
        size_t u = strlen(r->detail);
        kg_append(r->detail, sizeof r->detail, &u, "%s--diagnose=auto: the kernel was not described (%.300s)",
                  u ? "; " : "", x.reason[0] ? x.reason : "no facts came back");
    }
    return 0;
}

/* Seconds since the epoch: when a kept library time was measured. */
static double wall_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A group's library job (job: its mode LIBRARY, its plugin set): with
 * --lib-cache, from this GPU's cache when it holds a confirmed, fresh entry
 * of this very job (*age_s then its age, else -1); else run, and with
 * --lib-cache stored there unless kg_libcache_unfit says why not. A cache
 * that cannot be used is said once on stderr and the command goes on. */
int kg_check_library_job(const kg_options *o, const char *exe, const kg_report *rep, const kg_job *job, kg_libref *lib,
                         double *age_s, kg_others *seen, kg_err *err)
{
    static int warned, told;
    static char torch[PATH_MAX + 96];
    char path[PATH_MAX], context[PATH_MAX + 300];
    kg_err cerr = {0, ""};
    *age_s = -1;
    memset(lib, 0, sizeof *lib);
    memset(seen, 0, sizeof *seen);
    if (!o->lib_cache)
        return kg_cmds_run_watched(exe, job, o->timeout_s * 4, NULL, lib, seen, NULL, err);
    /* what outside the job the library's times depend on (cuDNN is loaded
     * only to ask its version: 0 when it cannot be, as its paths then say) */
    kg_err derr = {0, ""};
    const kg_cudnn_api *dn = kg_cudnn_load(&derr);
    if (job->torch && !torch[0]) {
        /* the --torch paths' interpreter and its torch (read from its
         * metadata, not imported): another torch times another library */
        char python[PATH_MAX], v[64];
        kg_err perr = {0, ""};
        if (kg_python_env(exe, "--torch", python, sizeof python, &perr) == 0)
            snprintf(torch, sizeof torch, " python %s torch %s", python,
                     kg_python_package_version(python, "torch", v, sizeof v) == 0 ? v : "?");
        else
            snprintf(torch, sizeof torch, " python ? torch ?");
    }
    snprintf(context, sizeof context, "kgate %s+%s driver %s cublasLt %zu cudnn %zu%s", KG_VERSION, KG_COMMIT,
             rep->driver, cublasLtGetVersion(), dn ? dn->cudnnGetVersion() : (size_t)0, job->torch ? torch : "");
    char *key = kg_libcache_key(job, rep->device_uuid, context);
    if (key && kg_libcache_path(rep->device_uuid, path, sizeof path, &cerr) != 0) {
        if (!warned++)
            fprintf(stderr, "kgate: --lib-cache: %s (library times neither reused nor kept)\n", cerr.msg);
        free(key);
        key = NULL;
    }
    if (key && !o->sandbox && !told++)
        fprintf(stderr, "kgate: --lib-cache without --sandbox: a candidate runs as you and could rewrite the "
                        "library times later checks reuse (docs/security.md)\n");
    if (key && kg_libcache_get(path, key, o->lib_cache_age_s, wall_now(), lib, age_s) == 0) {
        free(key);
        return 0;
    }
    /* a miss left lib as it was */
    int rc = kg_cmds_run_watched(exe, job, o->timeout_s * 4, NULL, lib, seen, NULL, err);
    const char *unfit = rc || !key ? NULL : kg_libcache_unfit(lib);
    if (unfit && !o->quiet) /* else a loop never learns why each of its checks times the library again */
        fprintf(stderr, "kgate: --lib-cache: %s %s: the library times not kept: %s\n",
                job->op ? job->op->name : "?", kg_dtype_name(job->types.data), unfit);
    if (!rc && key && !unfit && kg_libcache_put(path, key, lib, wall_now(), o->lib_cache_age_s, NULL, &cerr) &&
        !warned++)
        fprintf(stderr, "kgate: --lib-cache: %s (library times not kept)\n", cerr.msg);
    free(key);
    return rc;
}

/* A kernel job's result judged against its group's library measurement
 * (kg_judge_kernel; lib_age: its age when it came from --lib-cache, else
 * -1), with what the GPU's listings saw (gpu/others) and how long the job
 * waited for the GPU's lock. */
void kg_check_judge_kernel(const kg_options *o, kg_result *r, const kg_check_target *t, const kg_shape *shape,
                           const kg_job *job, const kg_roofs *roofs, const kg_libref *lib, double lib_age,
                           const kg_others *seen, const kg_others *lib_seen, double waited)
{
    kg_judge_kernel(r, t->op, t->types, shape, &job->scalars, roofs, lib, o->verify_only, lib_seen->n, &o->gate);
    if (!o->verify_only) {
        if (lib_age >= 0)
            kg_result_set(r, "lib/cache/age", lib_age);
        kg_cmds_others_to_result(r, seen, lib_seen);
    }
    if (waited > 0.001)
        kg_result_set(r, "job/gpu_wait", waited);
    if (t->list_s > 0) { /* where a job's wall goes before its kernel's worker */
        kg_result_set(r, "list/wall", t->list_s);
        if (t->warm_s > 0.001)
            kg_result_set(r, "list/warm", t->warm_s);
    }
}
