/* kgate check: every target judged at every shape, the report printed and
 * written, and its exit code; and the steps of that which run and tune use
 * (the time budget, the checkpoint, the report's end, measure). */
#include "commands.h"
#include "check_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../catalog/arch.h"
#include "../catalog/plugin_check.h"
#include "../catalog/problem.h"
#include "../judge/judge.h"
#include "explain.h"

/* --time-budget: 1 (and rep->incomplete says so) when no further job may
 * start, `done` of `total` having run since t0. */
int kg_check_out_of_time(const kg_options *o, double t0, int done, int total, kg_report *rep)
{
    if (o->time_budget_s <= 0 || kg_mono() - t0 < o->time_budget_s)
        return 0;
    snprintf(rep->incomplete, sizeof rep->incomplete,
             "--time-budget %.0f s reached after %d of %d jobs; the rest did not run", o->time_budget_s, done,
             total);
    return 1;
}

/* With --json, the results so far written after every job (atomically),
 * marked `incomplete` until the command finishes: a run killed outright
 * (SIGKILL, a lost node) keeps what it measured. */
void kg_check_checkpoint(const kg_options *o, kg_report *rep, int done, int total)
{
    if (!o->json || strcmp(o->json, "-") == 0) /* standard output: the finished results only */
        return;
    char keep[sizeof rep->incomplete];
    kg_err e = {0, ""};
    memcpy(keep, rep->incomplete, sizeof keep);
    snprintf(rep->incomplete, sizeof rep->incomplete,
             "in progress: %d of %d jobs done (the finished command rewrites this file)", done, total);
    kg_report_write_json(rep, o->json, &e); /* a failure shows when the command writes it last */
    memcpy(rep->incomplete, keep, sizeof keep);
}

/* The cliff: stored against the first result of the same candidate,
 * operator, dtypes and shape. */
static void judge_cliff(kg_report *rep, kg_result *stored)
{
    for (int q = 0; q < rep->n - 1; q++) {
        const kg_result *first = &rep->results[q];
        if (strcmp(first->source, stored->source) == 0 && strcmp(first->op, stored->op) == 0 &&
            strcmp(first->dtype, stored->dtype) == 0 && strcmp(first->shape, stored->shape) == 0 &&
            strcmp(first->index_dtype, stored->index_dtype) == 0) {
            kg_judge_cliff(stored, first);
            return;
        }
    }
}

/* A bundled variant this GPU does not run (catalog/arch.h: the Hopper ones
 * off sm_90a): SKIPPED with why, and not started (its launch would refuse
 * it, or run code that is not its own). 1 when so. */
static int unavailable_here(const kg_check_target *t, const char *bundled, const kg_report *rep, kg_result *r)
{
    char why[300];
    if (!bundled[0] || !kg_same_file(t->plugin, bundled) ||
        !kg_arch_unavailable(t->op, t->kernel, rep->cc_major * 10 + rep->cc_minor, kg_arch_build(), why, sizeof why))
        return 0;
    kg_judge_not_here(r, why);
    return 1;
}

/* One kernel of a group judged against the group's library times; its
 * result goes to rep. */
static int judge_one(const kg_options *o, const char *exe, const char *bundled, const kg_check_target *t,
                     const kg_check_group *g, kg_job *job, const kg_libref *lib, double lib_age,
                     const kg_others *lib_seen, kg_report *rep, int *done, int total, kg_err *err)
{
    kg_result r;
    kg_others seen;
    char what[160];
    memset(&seen, 0, sizeof seen);
    kg_check_kernel_job(t, t->summary, job, &r);
    snprintf(what, sizeof what, "%s %s", r.kernel, r.shape);
    kg_cmds_progress((*done)++, total, what);
    if (unavailable_here(t, bundled, rep, &r)) {
        if (!kg_report_add(rep, &r))
            return kg_err_set(err, KG_EXIT_ENV, "out of memory for the results");
        kg_check_checkpoint(o, rep, *done, total);
        return 0;
    }
    double waited = 0;
    if (kg_cmds_run_watched(exe, job, o->timeout_s, &r, NULL, &seen, &waited, err)) {
        kg_result *kept = err->code == KG_EXIT_ENV && r.n_sums ? kg_report_add(rep, &r) : NULL;
        if (kept) /* what was measured is kept: the check stops here */
            kg_check_event_result(kept);
        kg_cmds_progress(total, total, NULL);
        return err->code;
    }
    if (o->memcheck && r.verdict == KG_V_SKIPPED && kg_check_memcheck(exe, job, o->timeout_s, &r, err))
        return err->code;
    kg_check_judge_kernel(o, &r, t, &g->shape, job, &rep->roofs, lib, lib_age, &seen, lib_seen, waited);
    if (o->diagnose == KG_DIAG_AUTO && r.verdict == KG_V_SLOW && !r.diag &&
        kg_check_diagnose_again(exe, job, o->timeout_s, &r, err))
        return err->code;
    kg_explain_result(&r, &o->diag);
    kg_result *stored = kg_report_add(rep, &r);
    if (!stored)
        return kg_err_set(err, KG_EXIT_ENV, "out of memory for the results");
    kg_check_checkpoint(o, rep, *done, total);
    judge_cliff(rep, stored);
    kg_check_event_result(stored);
    return 0;
}

/* Runs the plan: each group's library job, then its kernels; results go
 * to rep in order. */
static int judge_all(const kg_options *o, const char *exe, const char *bundled, const kg_check_targets *tg,
                     const kg_check_plan *plan, kg_report *rep, kg_err *err)
{
    double t0 = kg_mono();
    int total = plan->jobs, done = 0;
    rep->shapes_seed = kg_check_fresh_seed();
    for (int gi = 0; gi < plan->n_groups; gi++) {
        const kg_check_group *g = &plan->groups[gi];
        const kg_check_target *lead = &tg->v[g->lead];
        kg_job job;
        kg_libref lib;
        kg_others lib_seen;
        double lib_age = -1;
        char shp[96], what[160];
        memset(&lib, 0, sizeof lib);
        memset(&lib_seen, 0, sizeof lib_seen);
        if (kg_check_group_job(o, lead->op, lead->types, &g->shape, rep->shapes_seed, &job, err))
            return err->code;
        kg_shape_format(&g->shape, shp, sizeof shp);
        if (kg_check_out_of_time(o, t0, done, total, rep))
            goto stop;
        if (!o->verify_only) {
            job.mode = KG_JOB_LIBRARY;
            /* a problem's library paths come with its candidate */
            snprintf(job.plugin, sizeof job.plugin, "%s", kg_problem_of(job.op) ? lead->plugin : bundled);
            snprintf(what, sizeof what, "%s %s %s: library paths", job.op->name, kg_dtype_name(job.types.data),
                     shp);
            kg_cmds_progress(done++, total, what);
            if (kg_check_library_job(o, exe, rep, &job, &lib, &lib_age, &lib_seen, err))
                return err->code;
        }
        for (int m = g->first; m < g->first + g->n; m++) {
            if (kg_check_out_of_time(o, t0, done, total, rep))
                goto stop;
            if (judge_one(o, exe, bundled, &tg->v[plan->members[m]], g, &job, &lib, lib_age, &lib_seen, rep, &done,
                          total, err))
                return err->code;
        }
    }
stop:
    kg_cmds_progress(total, total, NULL);
    return 0;
}

/* The end of a measuring command, in two steps so that tune can print its
 * summary between them: the report (and why it is incomplete), then the
 * JSON, the error line and the exit code. */
void kg_check_finish_print(const kg_options *o, kg_report *rep, int rc, const kg_err *err)
{
    if (rc == KG_EXIT_STOPPED && !rep->incomplete[0])
        snprintf(rep->incomplete, sizeof rep->incomplete, "%s", err->msg);
    if (!o->quiet)
        kg_report_print(rep, stdout, o->suite);
}

int kg_check_finish_exit(const kg_options *o, kg_report *rep, int rc, kg_err *err)
{
    /* stopped by a signal before any kernel was judged: the file still says so */
    if (o->json && (rep->n || rc == KG_EXIT_STOPPED)) {
        kg_err jerr = {0, ""};
        if (kg_report_write_json(rep, o->json, &jerr)) {
            kg_cmds_fail(&jerr);
            if (!rc)
                rc = jerr.code;
        }
    }
    if (rc) {
        kg_cmds_fail(err);
        return rc;
    }
    return kg_report_exit_code(rep);
}

static int finish(const kg_options *o, kg_report *rep, int rc, kg_err *err)
{
    kg_check_finish_print(o, rep, rc, err);
    return kg_check_finish_exit(o, rep, rc, err);
}

/* Plans the work (check_plan.c), opens the device, gets the roofs, checks
 * every target, prints and writes the report; returns the exit code. */
int kg_check_measure(const kg_options *o, const char *exe, const kg_check_targets *tg)
{
    kg_err err = {0, ""};
    kg_device_info d;
    kg_report rep;
    kg_check_plan plan;
    char bundled[PATH_MAX + 32];
    int rc;
    kg_check_bundled_path(bundled, sizeof bundled);
    if (kg_check_plan_build(o, tg, &plan, &err)) /* a usage error before the device opens */
        return kg_cmds_fail(&err);
    if (kg_cmds_open_device(o, &d, &err)) {
        kg_check_plan_free(&plan);
        return kg_cmds_fail(&err);
    }
    kg_report_init(&rep);
    kg_cmds_report_header(&rep, o, &d);
    if (kg_cmds_get_roofs(o, &d, &rep.roofs, &err)) {
        kg_report_free(&rep);
        kg_check_plan_free(&plan);
        return kg_cmds_fail(&err);
    }
    kg_cmds_watch_start(&d);
    rc = judge_all(o, exe, bundled, tg, &plan, &rep, &err);
    kg_cmds_watch_stop();
    rc = finish(o, &rep, rc, &err);
    kg_report_free(&rep);
    kg_check_plan_free(&plan);
    return rc;
}

/* A --json path that can be used (kg_output_path_check: not empty, not a
 * directory nor a special file, not the candidate) and written, checked
 * before anything is measured. */
int kg_check_json_path(const kg_options *o, kg_err *err)
{
    if (!o->json)
        return 0;
    char cand[PATH_MAX] = "", kernel[96];
    const char *inputs[1] = {cand};
    if (o->candidate && kg_candidate_split(o->candidate, cand, sizeof cand, kernel, sizeof kernel))
        cand[0] = '\0'; /* too long: kg_check_collect() says so */
    if (kg_output_path_check("--json", o->json, inputs, 1, err))
        return err->code;
    if (strcmp(o->json, "-") == 0)
        return 0;
    char probe[PATH_MAX + 32];
    snprintf(probe, sizeof probe, "%s.probe.%d", o->json, (int)getpid());
    FILE *f = fopen(probe, "w");
    if (!f)
        return kg_err_set(err, KG_EXIT_IO, "--json %s: cannot write there", o->json);
    fclose(f);
    unlink(probe);
    return 0;
}

int kg_cmd_check(const kg_options *o)
{
    kg_err err = {0, ""};
    char exe[PATH_MAX];
    kg_check_targets tg = {0, 0, NULL};
    kg_cmds_say_how(o);
    kg_self_exe(exe, sizeof exe);
    int served = 0;
    if (kg_check_json_path(o, &err) || kg_check_events_open(o, &err))
        return kg_cmds_fail(&err);
    int rc;
    if (o->server && kg_check_via_server(o, &served)) {
        rc = served;
    } else if (kg_check_collect(o, exe, o->candidate, &tg, &err)) {
        rc = kg_cmds_fail(&err);
    } else if (tg.n == 0) {
        kg_err_set(&err, KG_EXIT_USAGE, "%s: no kernel matches%s%s%s%s", o->candidate,
                   o->op ? " --op " : "", o->op ? o->op->name : "", o->have_dtype ? " --dtype " : "",
                   o->have_dtype ? kg_dtype_name(o->dtype) : "");
        rc = kg_cmds_fail(&err);
    } else {
        rc = kg_check_measure(o, exe, &tg);
    }
    free(tg.v);
    kg_check_events_close();
    return rc;
}
