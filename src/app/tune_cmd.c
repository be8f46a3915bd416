/* kgate tune: one kernel's configurations checked, timed and judged at one
 * shape beside its own launch, and the tuning's summary (docs/tune.md). */
#include "commands.h"
#include "check_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../catalog/tune.h"

static int by_time(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One configuration (or, cfg NULL, the kernel's own launch) checked, timed
 * and judged into rep; returns non-zero only for errors that stop tune. */
static int tune_one(const kg_options *o, const char *exe, const kg_check_target *t, kg_job *job, const kg_shape *shape,
                    const kg_libref *lib, const kg_others *lib_seen, double lib_age, const char *label, int done,
                    int total, kg_report *rep, kg_err *err)
{
    kg_result r;
    kg_others seen;
    memset(&seen, 0, sizeof seen);
    kg_check_kernel_job(t, label, job, &r);
    double waited = 0;
    if (kg_cmds_run_watched(exe, job, o->timeout_s, &r, NULL, &seen, &waited, err)) {
        if (err->code == KG_EXIT_ENV && r.n_sums)
            kg_check_event_result(kg_report_add(rep, &r)); /* what was measured is kept */
        return err->code;
    }
    kg_check_judge_kernel(o, &r, t, shape, job, &rep->roofs, lib, lib_age, &seen, lib_seen, waited);
    kg_result *stored = kg_report_add(rep, &r);
    if (!stored)
        return kg_err_set(err, KG_EXIT_ENV, "out of memory for the results");
    kg_check_checkpoint(o, rep, done, total);
    kg_check_event_result(stored);
    return 0;
}

/* What tune tunes: its one kernel, the configurations picked from its
 * space (idx[0..n)) and the shape. */
typedef struct tuning {
    kg_check_target t;
    kg_space sp;
    uint64_t *idx;
    long n;
    kg_shape shape;
} tuning;

/* The kernel (the candidate's one match, with a configuration space), the
 * configurations and the shape into tu: 0, or 1 with err. */
static int tune_plan(const kg_options *o, const char *exe, tuning *tu, kg_err *err)
{
    kg_check_targets tg = {0, 0, NULL};
    if (kg_check_json_path(o, err) || kg_check_collect(o, exe, o->candidate, &tg, err)) {
        free(tg.v);
        return 1;
    }
    if (tg.n != 1) {
        kg_err_set(err, KG_EXIT_USAGE, "tune: %s has %d matching kernels; name one: kgate tune CAND.so:KERNEL",
                   o->candidate, tg.n);
        free(tg.v);
        return 1;
    }
    tu->t = tg.v[0];
    free(tg.v);
    if (!tu->t.space[0]) {
        kg_err_set(err, KG_EXIT_USAGE, "tune: kernel '%s' exposes no configuration space (%s, docs/tune.md)",
                   tu->t.kernel, KGATE_TUNABLES_SYMBOL);
        return 1;
    }
    return kg_space_parse(tu->t.space, &tu->sp, err) || kg_space_restrict(&tu->sp, o->knobs, o->n_knobs, err) ||
           kg_space_pick(&tu->sp, o->budget, 4096, o->seed ^ 0x74756e65ull, &tu->idx, &tu->n, err) ||
           kg_shape_parse(tu->t.op, o->n_shapes ? o->shape_texts[0] : "large", &tu->shape, err);
}

/* The tuning's runs into rep: the roofs, the library job (not under
 * --verify-only), the kernel's own launch, then each configuration while
 * --time-budget (from t0) lasts. 0, or 1 with err. */
static int tune_runs(const kg_options *o, const char *exe, const char *bundled, const tuning *tu,
                     const kg_device_info *d, double t0, kg_report *rep, kg_err *err)
{
    kg_job job;
    kg_libref lib;
    kg_others lib_seen;
    double lib_age = -1;
    long n = tu->n;
    memset(&lib, 0, sizeof lib);
    memset(&lib_seen, 0, sizeof lib_seen);
    rep->shapes_seed = kg_check_fresh_seed();
    int rc = kg_cmds_get_roofs(o, d, &rep->roofs, err) ||
             kg_check_group_job(o, tu->t.op, tu->t.types, &tu->shape, rep->shapes_seed, &job, err);
    kg_cmds_watch_start(d);
    if (!rc && !o->verify_only) {
        job.mode = KG_JOB_LIBRARY;
        snprintf(job.plugin, sizeof job.plugin, "%s", bundled);
        rc = kg_check_library_job(o, exe, rep, &job, &lib, &lib_age, &lib_seen, err) != 0;
    }
    /* the kernel's own launch first: what the tuning is measured against */
    if (!rc)
        rc = tune_one(o, exe, &tu->t, &job, &tu->shape, &lib, &lib_seen, lib_age,
                      "default (the kernel's own launch)", 1, (int)n + 1, rep, err) != 0;
    for (long i = 0; i < n && !rc; i++) {
        char label[256], what[300];
        if (kg_check_out_of_time(o, t0, (int)i + 1, (int)n + 1, rep))
            break;
        job.n_config = tu->sp.n_knobs;
        kg_space_config(&tu->sp, tu->idx[i], job.config);
        kg_config_format(&tu->sp, job.config, label, sizeof label);
        snprintf(what, sizeof what, "%s [%s]", tu->t.kernel, label);
        kg_cmds_progress((int)i, (int)n, what);
        rc = tune_one(o, exe, &tu->t, &job, &tu->shape, &lib, &lib_seen, lib_age, label, (int)i + 2, (int)n + 1,
                      rep, err) != 0;
    }
    kg_cmds_watch_stop();
    kg_cmds_progress((int)n, (int)n, NULL);
    return rc;
}

/* The tuning's end: the report, its own summary (the best configuration,
 * the spread, the default), then the JSON and the exit code. rc: the
 * runs' (non-zero: err says why). */
static int tune_end(const kg_options *o, const tuning *tu, kg_report *rep, int rc, kg_err *err)
{
    double *times = malloc(sizeof(double) * (size_t)(rep->n + 1)), t_def = 0, t_best = 0;
    int n_ok = 0, n_skip = 0, n_bad = 0, best = -1;
    for (int i = 0; times && i < rep->n; i++) {
        const kg_result *x = &rep->results[i];
        double tt;
        if (x->verdict == KG_V_SKIPPED) {
            n_skip += i > 0;
            continue;
        }
        if (x->verdict != KG_V_OK && x->verdict != KG_V_SLOW) {
            n_bad += i > 0;
            continue;
        }
        if (!((tt = kg_result_time(x)) > 0)) /* the time judged: host work past the allowance counts */
            continue;
        if (i == 0) {
            t_def = tt;
            continue;
        }
        times[n_ok++] = tt;
        if (best < 0 || tt < t_best) {
            best = i;
            t_best = tt;
        }
    }
    char buf[3][32];
    if (!rc && n_ok == 0 && tu->n > 0)
        rc = kg_err_set(err, KG_EXIT_FAIL, "tune: no configuration of '%s' ran this shape correctly",
                        tu->t.kernel) != 0;
    kg_check_finish_print(o, rep, rc ? err->code : 0, err);
    printf("\ntune %s at %s: %ld configuration(s) of %.0f%s; %d correct and timed, %d cannot run this shape, "
           "%d wrong or failed\n",
           tu->t.kernel, rep->n ? rep->results[0].shape : "?", tu->n, kg_space_size(&tu->sp),
           o->n_knobs ? " (the subspace --knob leaves)" : "", n_ok, n_skip, n_bad);
    if (best >= 0) {
        const kg_result *b = &rep->results[best];
        double e = 0;
        qsort(times, (size_t)n_ok, sizeof *times, by_time);
        printf("best: [%s] %s, %s%s", b->summary, kg_fmt_time(t_best, buf[0], sizeof buf[0]), kg_verdict_name(b->verdict),
               kg_result_get(b, "lib/efficiency", &e) ? "" : "\n");
        if (kg_result_get(b, "lib/efficiency", &e))
            printf(", E_lib %.2f\n", e);
        printf("spread: fastest %s, median %s, slowest %s\n", kg_fmt_time(times[0], buf[0], sizeof buf[0]),
               kg_fmt_time(times[n_ok / 2], buf[1], sizeof buf[1]), kg_fmt_time(times[n_ok - 1], buf[2], sizeof buf[2]));
        if (t_def > 0)
            printf("default launch: %s (%s); the best configuration is %.2fx faster\n",
                   kg_fmt_time(t_def, buf[0], sizeof buf[0]), kg_verdict_name(rep->results[0].verdict), t_def / t_best);
    }
    free(times);
    return kg_check_finish_exit(o, rep, rc ? err->code : 0, err);
}

int kg_cmd_tune(const kg_options *o)
{
    kg_err err = {0, ""};
    char exe[PATH_MAX], bundled[PATH_MAX + 32];
    tuning tu = {.idx = NULL, .n = 0};
    kg_cmds_say_how(o);
    kg_self_exe(exe, sizeof exe);
    if (tune_plan(o, exe, &tu, &err) || kg_check_events_open(o, &err)) {
        free(tu.idx);
        return kg_cmds_fail(&err);
    }
    kg_check_bundled_path(bundled, sizeof bundled);
    kg_device_info d;
    kg_report rep;
    if (kg_cmds_open_device(o, &d, &err)) {
        free(tu.idx);
        kg_check_events_close();
        return kg_cmds_fail(&err);
    }
    double t0 = kg_mono();
    kg_report_init(&rep);
    kg_cmds_report_header(&rep, o, &d);
    int rc = tune_runs(o, exe, bundled, &tu, &d, t0, &rep, &err);
    free(tu.idx);
    rc = tune_end(o, &tu, &rep, rc, &err);
    kg_report_free(&rep);
    kg_check_events_close();
    return rc;
}
