/* Worker supervision on the CPU, with tests/fake_worker.sh standing in for
 * the worker: events become results, a crash keeps what was measured, a
 * hang is killed at the budget, a bad candidate stops the command, and
 * nothing a worker (or candidate code inside it) writes can crash the
 * supervisor or forge a result. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "supervise/job.h"
#include "judge/judge.h"
#include "catalog/plugin_check.h"
#include "report/report.h"
#include "base/text.h"

/* A softmax job of kernel k in x.so, for the fake worker. */
static void fake_job(kg_job *job, kg_job_mode jm)
{
    kg_job_defaults(job);
    job->mode = jm;
    snprintf(job->plugin, sizeof job->plugin, "x.so");
    snprintf(job->kernel, sizeof job->kernel, "k");
    job->op = kg_op_find("softmax");
    job->types.data = KG_FP16;
    job->shape = job->op->presets[0].shape;
    kg_scalars_default(job->op, &job->scalars);
}

static int run_mode(const char *mode, kg_job_mode jm, double timeout, kg_result *r, kg_libref *lib,
                    kg_err *e)
{
    kg_job job;
    fake_job(&job, jm);
    job.trials = 1;
    setenv("KG_FAKE", mode, 1);
    memset(r, 0, sizeof *r);
    memset(lib, 0, sizeof *lib);
    memset(e, 0, sizeof *e);
    return kg_job_run(KG_TEST_SRC "/fake_worker.sh", &job, timeout, r, lib, NULL, NULL, e);
}

static int run(const char *mode, double timeout, kg_result *r, kg_libref *lib, kg_err *e)
{
    return run_mode(mode, KG_JOB_KERNEL, timeout, r, lib, e);
}

/* kg_job_watch: while set, the caller is called about every period with
 * the running worker's pid, at jittered times (here every 0.05 s or so of
 * a worker that hangs until the 1.2 s deadline: about 24 ticks, half to one
 * and a half periods apart, some closer than the 100 ms of the event loop's
 * poll would give); once cleared, never. */
static int ticks;
static long ticked_pid;
static double last_tick, gap_min = 1e9, gap_max;
static void count_tick(void *ud, long pid)
{
    (void)ud;
    double now = kg_mono();
    if (ticks++) {
        gap_min = now - last_tick < gap_min ? now - last_tick : gap_min;
        gap_max = now - last_tick > gap_max ? now - last_tick : gap_max;
    }
    last_tick = now;
    ticked_pid = pid;
}

static void a_watch_is_called_while_the_worker_runs(void **state)
{
    (void)state;
    kg_result r;
    kg_libref lib;
    kg_err e;
    ticks = 0;
    kg_job_watch(count_tick, NULL, 0.05);
    run("hang", 1.2, &r, &lib, &e);
    kg_job_watch(NULL, NULL, 0);
    print_message("ticks %d, gaps %.3f to %.3f s\n", ticks, gap_min, gap_max);
    /* a busy machine delays ticks (never brings them early): the count has
     * room below, and the jitter shows as gaps spread over more than 0.02 s
     * (draws over 0.05 s; without it they would be alike) */
    assert_true(ticks >= 8 && ticks <= 50);
    assert_true(gap_min < 0.06 && gap_max - gap_min > 0.02);
    assert_true(ticked_pid > 1 && ticked_pid != (long)getpid());
    ticks = 0;
    run("ok", 10, &r, &lib, &e);
    assert_int_equal(ticks, 0);
}

/* A worker run under a tool (--memcheck's compute-sanitizer) is told so
 * (--under-tool); a plain one is not. */
static void a_wrapped_worker_is_told_it_runs_under_a_tool(void **state)
{
    (void)state;
    kg_job job;
    kg_result r;
    kg_err e = {0, ""};
    double t;
    const char *const wrapper[] = {"/usr/bin/env", NULL};
    fake_job(&job, KG_JOB_KERNEL);
    setenv("KG_FAKE", "under_tool", 1);
    memset(&r, 0, sizeof r);
    assert_int_equal(kg_job_run(KG_TEST_SRC "/fake_worker.sh", &job, 10, &r, NULL, NULL, NULL, &e), 0);
    assert_true(kg_result_get(&r, "time/gpu/median", &t));
    assert_true(t == 1e-4);
    memset(&r, 0, sizeof r);
    assert_int_equal(kg_job_run_under(wrapper, KG_TEST_SRC "/fake_worker.sh", &job, 10, &r, NULL, NULL, NULL, &e), 0);
    assert_true(kg_result_get(&r, "time/gpu/median", &t));
    assert_true(t == 2e-4);
}

/* Which workers exit normally: under a tool (--under-tool, or
 * CUDA_INJECTION64_PATH as ncu sets it), and every one in a sanitizer build;
 * the others end with _exit (cli/main.c). */
static void a_worker_exits_normally_only_under_a_tool(void **state)
{
    (void)state;
    char *plain[] = {"--fd", "3", NULL}, *tool[] = {"--under-tool", "--fd", "3", NULL};
    unsetenv("CUDA_INJECTION64_PATH");
    assert_int_equal(kg_worker_exits_normally(3, tool), 1);
#ifdef KG_SANITIZED
    assert_int_equal(kg_worker_exits_normally(2, plain), 1);
#else
    assert_int_equal(kg_worker_exits_normally(2, plain), 0);
    setenv("CUDA_INJECTION64_PATH", "/opt/ncu/libInjection.so", 1);
    assert_int_equal(kg_worker_exits_normally(2, plain), 1);
    unsetenv("CUDA_INJECTION64_PATH");
#endif
}

/* kg_judge of a softmax fp16 1024x4096 result against measured roofs
 * (4.3 TB/s) and the default gate; lib may be NULL. */
static void judge_softmax(kg_result *r, const kg_libref *lib)
{
    kg_roofs roofs = {"measured", 4.3e12, 0, 0, {0}, 66.9e12, 0, 0};
    kg_gate g;
    kg_gate_defaults(&g);
    kg_shape s = {2, {1024, 4096}};
    kg_types ty = {KG_FP16, KG_I64};
    kg_judge(r, kg_op_find("softmax"), ty, &s, NULL, &roofs, lib, &g);
}

/* A package's version as an interpreter finds it (the --lib-cache key of
 * --torch paths): a package there, one that is not, an interpreter that is
 * not, and an answer that is not a version (a fake interpreter's). */
static void a_python_package_version(void **state)
{
    (void)state;
    char v[64], fake[] = "/tmp/kgate-fakepy-XXXXXX";
    if (access("/usr/bin/python3", X_OK) == 0) { /* Debian's, with python3-jsonschema (scripts/deps.sh) */
        assert_int_equal(kg_python_package_version("/usr/bin/python3", "jsonschema", v, sizeof v), 0);
        assert_true(v[0] >= '0' && v[0] <= '9');
        assert_int_equal(kg_python_package_version("/usr/bin/python3", "no-such-package-kg", v, sizeof v), -1);
        assert_string_equal(v, "");
    }
    assert_int_equal(kg_python_package_version("/no/such/python3", "torch", v, sizeof v), -1);
    int fd = mkstemp(fake);
    assert_true(fd >= 0);
    const char *script = "#!/bin/sh\necho '2.11.0; rm -rf /' >&$3\n";
    assert_int_equal(write(fd, script, strlen(script)), (ssize_t)strlen(script));
    close(fd);
    chmod(fake, 0755);
    assert_int_equal(kg_python_package_version(fake, "torch", v, sizeof v), -1);
    assert_string_equal(v, "");
    unlink(fake);
}

static void ok_events_become_a_result(void **state)
{
    (void)state;
    kg_result r, dummy;
    kg_libref lib;
    kg_err e;
    assert_int_equal(run_mode("library", KG_JOB_LIBRARY, 10, &dummy, &lib, &e), 0);
    assert_true(lib.measured && lib.n == 2 && lib.have_best);
    assert_string_equal(lib.paths[0].name, "cudnn-softmax");
    assert_int_equal(lib.paths[0].status, KG_LIB_OK);
    assert_int_equal(lib.paths[1].status, KG_LIB_UNSUPPORTED);
    assert_string_equal(lib.best_name, "softmax_v2_fp16");
    /* the worker's own time: spawn to hello within spawn to exit */
    assert_true(lib.job_wall_s > 0 && lib.job_startup_s > 0 && lib.job_startup_s <= lib.job_wall_s);
    assert_true(lib.disturbed == 0);
    /* throttled samples, a path timed again and work on other streams in the
     * library's timing are counted (store/lib_cache.h keeps no such time);
     * the times stand */
    kg_libref other;
    assert_int_equal(run_mode("lib_disturbed", KG_JOB_LIBRARY, 10, &dummy, &other, &e), 0);
    assert_true(other.disturbed == 6); /* 2 throttled, 1 timed again, 3 on other streams */
    assert_true(other.foreign == 3); /* of them, work on other streams: that library is not used */
    /* the note of the timing that saw it, for baseline_note; not the one before,
     * whose second timing was clean */
    assert_string_equal(other.timing_note, "3 record(s) on other streams, the first _Z4side");
    assert_true(other.paths[0].t == 2e-4 && other.best_t == 5e-5);
    assert_int_equal(run_mode("lib_negative_foreign", KG_JOB_LIBRARY, 10, &dummy, &other, &e), KG_EXIT_ENV);
    assert_non_null(strstr(e.msg, "a negative or missing value for 'time/foreign'"));
    kg_libref lib2;
    assert_int_equal(run("ok", 10, &r, &lib2, &e), 0);
    assert_int_equal(r.verdict, KG_V_SKIPPED); /* measured, not judged yet */
    double wall = 0, startup = 0;
    assert_true(kg_result_get(&r, "job/wall", &wall) && kg_result_get(&r, "job/startup", &startup));
    assert_true(wall > 0 && startup > 0 && startup <= wall);
    double t;
    assert_true(kg_result_get(&r, "time/gpu/median", &t) && t == 1e-4);
    assert_string_equal(r.stop, "noise");
    judge_softmax(&r, &lib);
    /* E_lib = 2e-4 / 1e-4; E_best = 5e-5 / 1e-4 = 0.5 decides: rho is
     * 16.8 MB / 1e-4 s / 4.3 TB/s = 0.039: SLOW despite beating cuDNN 2x */
    assert_true(kg_result_get(&r, "lib/efficiency", &t) && fabs(t - 2.0) < 1e-12);
    assert_true(kg_result_get(&r, "best/efficiency", &t) && fabs(t - 0.5) < 1e-12);
    assert_int_equal(r.verdict, KG_V_SLOW);
    assert_string_equal(r.baseline, "cudnn-softmax");
    assert_string_equal(r.best, "softmax_v2_fp16");
    /* the library's own rho is 0.0195 < 0.5: flagged baseline-weak */
    assert_true(r.flags & KG_FLAG(BASELINE_WEAK));
    assert_int_equal(r.n_libs, 2);
}

/* A full summary table fails loudly: flagged truncated, and said. (A worker
 * cannot fill it: it may send only known names, each once, and they all fit;
 * kgate's own code adding names of its own could.) */
static void full_summary_table_is_said(void **state)
{
    (void)state;
    kg_result r;
    memset(&r, 0, sizeof r);
    kg_result_set(&r, "time/gpu/median", 1e-4);
    for (int i = 0; i < 100; i++) {
        char name[32];
        snprintf(name, sizeof name, "time/extra/%d", i);
        kg_result_set(&r, name, i);
    }
    assert_int_equal(r.n_sums, KG_MAX_SUMMARIES);
    assert_true(r.sums_dropped > 0);
    judge_softmax(&r, NULL);
    assert_true(r.flags & KG_FLAG(TRUNCATED));
    assert_non_null(strstr(r.detail, "summaries did not fit in the result"));
}

/* An escaped timing is IMPOSSIBLE whatever the times say, and the reason
 * tells which evidence: deferred work, a trace without kgate's own records,
 * or the device busy after the end event. */
static void escaped_timings_say_why(void **state)
{
    (void)state;
    struct {
        const char *sum;
        const char *says;
    } cases[] = {
        {"time/deferred", "on the timing stream that no sample timed"},
        {"time/trace_lost", "lacked kgate's own records"},
        {"time/foreign", "1 kernel(s) or copies on other streams"},
        {NULL, "still busy after the end event"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kg_result r;
        memset(&r, 0, sizeof r);
        kg_result_set(&r, "time/gpu/median", 5e-6); /* fast: OK on its times */
        kg_result_set(&r, "time/foreign", 0); /* the worker sends it with every timing */
        if (cases[i].sum)
            kg_result_set(&r, cases[i].sum, 1);
        r.flags |= KG_FLAG(ESCAPED);
        judge_softmax(&r, NULL);
        assert_int_equal(r.verdict, KG_V_IMPOSSIBLE);
        assert_non_null(strstr(r.reason, cases[i].says));
    }
}

/* A kernel that ran a library's kernels keeps the verdict its times give
 * and is flagged library-kernels; without time/vendor it is not. */
static void library_kernels_are_flagged_not_judged(void **state)
{
    (void)state;
    /* count, share and computing share (-1: absent, an older worker), flagged */
    const struct {
        double count, share, compute;
        int flagged;
    } cases[] = {{0, 0, -1, 0},    {12, -1, -1, 1},     {12, 0.5, -1, 1},  {56, 0.05, -1, 0},
                 {3, 0.2, -1, 1},  {0, 0, 0, 0},
                 {1904, 0.31, 0, 0},       /* ViperBench mul: torch.zeros_like's fill beside its kernel */
                 {11169, 0.09, 0.09, 1},   /* ViperBench logsumexp: torch.logsumexp over partial sums */
                 {40, 0.6, 0, 1},          /* a transpose by .contiguous(): copies are its work */
                 {6, 0.04, 0.04, 0}};      /* a cast beside a Triton kernel */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kg_result r;
        memset(&r, 0, sizeof r);
        kg_result_set(&r, "time/gpu/median", 4.5e-6); /* fast: OK on its times (rho 0.87) */
        if (cases[i].count > 0)
            kg_result_set(&r, "time/vendor", cases[i].count);
        if (cases[i].share >= 0)
            kg_result_set(&r, "time/vendor_share", cases[i].share);
        if (cases[i].compute >= 0)
            kg_result_set(&r, "time/vendor_compute_share", cases[i].compute);
        judge_softmax(&r, NULL);
        assert_int_equal(r.verdict, KG_V_OK);
        if (!!(r.flags & KG_FLAG(LIBRARY_KERNELS)) != cases[i].flagged)
            fail_msg("case %zu: %g kernels, share %g: flagged %d", i, cases[i].count, cases[i].share,
                     !!(r.flags & KG_FLAG(LIBRARY_KERNELS)));
    }
    assert_string_equal(kg_flag_name(KG_FB_LIBRARY_KERNELS), "library-kernels");
    assert_int_equal(kg_flag_parse("library-kernels"), KG_FB_LIBRARY_KERNELS);
}

/* kg_judge hands the call's scalars to the work model: a causal attention
 * is judged on half the FLOPs of a full one (NULL: the defaults). */
static void judge_uses_the_calls_scalars(void **state)
{
    (void)state;
    const kg_op *at = kg_op_find("attention");
    kg_shape s = kg_preset_find(at, "small")->shape;
    kg_types ty = {KG_FP16, KG_I64};
    kg_roofs roofs = {"measured", 4.3e12, 0, 0, {0}, 66.9e12, 0, 0};
    kg_gate g;
    kg_scalars sc;
    kg_err e = {0, ""};
    kg_result r;
    double full = 0, half = 0, rate = 0;
    kg_gate_defaults(&g);
    memset(&r, 0, sizeof r);
    r.verdict = KG_V_SKIPPED;
    kg_result_set(&r, "time/gpu/median", 1e-3);
    kg_judge(&r, at, ty, &s, NULL, &roofs, NULL, &g);
    assert_true(kg_result_get(&r, "work/flops", &full) && full == 4.0 * 2 * 4 * 256 * 256 * 64);
    kg_scalars_default(at, &sc);
    assert_int_equal(kg_scalars_set(at, &sc, "causal=1", &e), 0);
    memset(&r, 0, sizeof r);
    r.verdict = KG_V_SKIPPED;
    kg_result_set(&r, "time/gpu/median", 1e-3);
    kg_judge(&r, at, ty, &s, &sc, &roofs, NULL, &g);
    assert_true(kg_result_get(&r, "work/flops", &half) && half == full / 2);
    assert_true(kg_result_get(&r, "rate/flops", &rate) && fabs(rate - half / 1e-3) < 1e-6 * rate);
}

static void incorrect_is_a_verdict(void **state)
{
    (void)state;
    kg_result r;
    kg_libref lib;
    kg_err e;
    assert_int_equal(run("incorrect", 10, &r, &lib, &e), 0);
    assert_int_equal(r.verdict, KG_V_INCORRECT);
    /* the check that fired is the reason, what went wrong the detail */
    assert_string_equal(r.reason, "trial 1 (uniform)");
    assert_string_equal(r.detail, "3 of 100 elements wrong");
}

static void crash_keeps_what_was_measured(void **state)
{
    (void)state;
    kg_result r;
    kg_libref lib;
    kg_err e;
    assert_int_equal(run("crash_after_timing", 10, &r, &lib, &e), 0);
    assert_int_equal(r.verdict, KG_V_CRASH);
    assert_non_null(strstr(r.reason, "signal 11"));
    assert_true(kg_result_get(&r, "time/gpu/median", NULL));
}

static double since(const struct timespec *a)
{
    struct timespec b;
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (double)(b.tv_sec - a->tv_sec) + (b.tv_nsec - a->tv_nsec) * 1e-9;
}

static void hang_is_killed_at_the_budget(void **state)
{
    (void)state;
    kg_result r;
    kg_libref lib;
    kg_err e;
    struct timespec a;
    clock_gettime(CLOCK_MONOTONIC, &a);
    assert_int_equal(run("hang", 1.0, &r, &lib, &e), 0);
    double waited = since(&a);
    assert_int_equal(r.verdict, KG_V_TIMEOUT);
    assert_true(waited >= 1.0 && waited < 10.0);
    assert_true(kg_result_get(&r, "check/trials", NULL));
}

static void on_alarm(int sig)
{
    kg_stop_request(sig == SIGALRM ? SIGTERM : sig);
}

/* A stop asked while a worker runs (SIGTERM to kgate): the worker is killed
 * at once, not at its budget, and the job says it was stopped (exit 7), not
 * that the candidate hung. */
static void stop_request_kills_the_running_worker(void **state)
{
    (void)state;
    kg_result r;
    kg_libref lib;
    kg_err e;
    struct timespec a;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    assert_int_equal(kg_stop_requested(), 0);
    clock_gettime(CLOCK_MONOTONIC, &a);
    alarm(1);
    assert_int_equal(run("hang", 60.0, &r, &lib, &e), KG_EXIT_STOPPED);
    double waited = since(&a);
    assert_true(waited >= 0.9 && waited < 5.0);
    assert_non_null(strstr(e.msg, "stopped by Terminated"));
    assert_int_equal(kg_stop_requested(), SIGTERM);
}

/* The audit's hang: a worker that closes its descriptors and waits forever
 * must not hold kgate in waitpid. */
static void closed_channel_does_not_hang(void **state)
{
    (void)state;
    kg_result r;
    kg_libref lib;
    kg_err e;
    struct timespec a;
    clock_gettime(CLOCK_MONOTONIC, &a);
    assert_int_equal(run("closes_and_waits", 60, &r, &lib, &e), 0);
    assert_true(since(&a) < 10.0);
    assert_int_equal(r.verdict, KG_V_CRASH);
}

static void bad_candidate_stops_the_command(void **state)
{
    (void)state;
    kg_result r;
    kg_libref lib;
    kg_err e;
    assert_int_equal(run("badfile", 10, &r, &lib, &e), KG_EXIT_CANDIDATE);
    assert_non_null(strstr(e.msg, "no kgate_plugin_v2 symbol"));
}

static void library_failure_is_not_the_candidates(void **state)
{
    (void)state;
    kg_result r;
    kg_libref lib;
    kg_err e;
    assert_int_equal(run_mode("libcrash", KG_JOB_LIBRARY, 10, &r, &lib, &e), KG_EXIT_ENV);
    assert_non_null(strstr(e.msg, "library path cublaslt failed"));
    assert_int_not_equal(r.verdict, KG_V_CRASH);
    /* a library time sent twice is a violation, not a second value */
    assert_int_equal(run_mode("lib_twice", KG_JOB_LIBRARY, 10, &r, &lib, &e), KG_EXIT_ENV);
    assert_non_null(strstr(e.msg, "a library time reported twice ('time/gpu/median')"));
}

/* Forged or broken lines end the job as a protocol violation: no crash of
 * the supervisor, no invented result, no exit code out of range. */
static void forged_events_are_violations(void **state)
{
    (void)state;
    const char *modes[] = {"forged_sum", "forged_judged", "flood", "forged_code", "unknown_event", "long_line",
                           "huge_line", "dup_sum", "forged_done", "forged_error", "forged_unsupported",
                           "second_timing"};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        kg_result r;
        kg_libref lib;
        kg_err e;
        assert_int_equal(run(modes[i], 20, &r, &lib, &e), 0);
        if (r.verdict != KG_V_CRASH || !strstr(r.reason, "protocol violation"))
            fail_msg("%s: verdict %s, reason '%s'", modes[i], kg_verdict_name(r.verdict), r.reason);
        assert_false(kg_result_get(&r, "lib/time/median", NULL));
    }
    /* a forged error stops nothing beyond its own job, and says what it claimed */
    {
        kg_result r;
        kg_libref lib;
        kg_err e;
        assert_int_equal(run("forged_error", 20, &r, &lib, &e), 0);
        assert_int_equal(e.code, 0);
        assert_non_null(strstr(r.reason, "error event that does not carry the job's nonce: no CUDA GPU"));
    }
    /* a forged table in a list job: a bad candidate, one line */
    kg_result r;
    kg_libref lib;
    kg_err e;
    kg_table_entry *t = NULL;
    int n = 0;
    kg_job job;
    kg_job_defaults(&job);
    job.mode = KG_JOB_LIST;
    snprintf(job.plugin, sizeof job.plugin, "x.so");
    setenv("KG_FAKE", "forged_table", 1);
    memset(&e, 0, sizeof e);
    assert_int_equal(kg_job_run(KG_TEST_SRC "/fake_worker.sh", &job, 10, NULL, NULL, &t, &n, &e),
                     KG_EXIT_CANDIDATE);
    assert_non_null(strstr(e.msg, "'name' is missing"));
    assert_null(t);
    (void)r;
    (void)lib;
}

/* A kernel's word that it does not take the job's shape comes only in the
 * done event, which carries the job's nonce: SKIPPED, exit 1 (not judged is
 * not OK). The same word as a summary, which candidate code could write on
 * the channel, is a violation (forged_events_are_violations); so is the
 * word in a library job. */
static void unsupported_comes_with_the_nonce(void **state)
{
    (void)state;
    kg_result r;
    kg_libref lib;
    kg_err e;
    double v = 0;
    assert_int_equal(run("unsupported", 20, &r, &lib, &e), 0);
    assert_int_equal(r.verdict, KG_V_SKIPPED);
    assert_true(kg_result_get(&r, "check/unsupported", &v) && v == 1);
    judge_softmax(&r, NULL);
    assert_int_equal(r.verdict, KG_V_SKIPPED);
    assert_non_null(strstr(r.reason, "does not support this shape"));
    assert_int_equal(kg_result_exit_code(&r), 1);
    /* --verify-only: correct, not timed, exit 0 */
    assert_int_equal(run("no_time", 20, &r, &lib, &e), 0);
    r.flags |= KG_FLAG(VERIFIED);
    judge_softmax(&r, NULL);
    assert_int_equal(r.verdict, KG_V_SKIPPED);
    assert_int_equal(kg_result_exit_code(&r), 0);
    kg_job job;
    fake_job(&job, KG_JOB_LIBRARY);
    setenv("KG_FAKE", "unsupported_library", 1);
    memset(&e, 0, sizeof e);
    memset(&lib, 0, sizeof lib);
    assert_int_equal(kg_job_run(KG_TEST_SRC "/fake_worker.sh", &job, 10, NULL, &lib, NULL, NULL, &e), KG_EXIT_ENV);
    assert_non_null(strstr(e.msg, "unsupported shape outside a kernel job"));
}

/* A kernel job that ran to its end was timed: a GPU time of 0, or none, is
 * IMPOSSIBLE, never SKIPPED "no timing" (exit 0 before: a worker reporting
 * 0 ended up unjudged). */
static void a_kernel_that_ran_has_a_time(void **state)
{
    (void)state;
    const char *modes[] = {"zero_time", "no_time"};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        kg_result r;
        kg_libref lib;
        kg_err e;
        assert_int_equal(run(modes[i], 20, &r, &lib, &e), 0);
        assert_int_equal(r.verdict, KG_V_SKIPPED);
        judge_softmax(&r, NULL);
        if (r.verdict != KG_V_IMPOSSIBLE || !strstr(r.reason, i ? "missing" : "is 0"))
            fail_msg("%s: verdict %s, reason '%s'", modes[i], kg_verdict_name(r.verdict), r.reason);
        assert_int_equal(kg_result_exit_code(&r), 2);
    }
}

/* More than 4096 bytes of stderr without a newline (the audit's overflow). */
static void stderr_flood_is_bounded(void **state)
{
    (void)state;
    kg_result r;
    kg_libref lib;
    kg_err e;
    assert_int_equal(run("stderr_flood", 10, &r, &lib, &e), 0);
    assert_int_equal(r.verdict, KG_V_SKIPPED);
}

/* A crash whose last stderr line holds no UTF-8, C1 controls and escapes:
 * the reason keeps its words as one printable line of UTF-8, and the
 * results JSON loads in Python's strict decoder with no control character
 * in any string (the audit's invalid JSON). */
static void stderr_junk_becomes_printable_utf8(void **state)
{
    (void)state;
    kg_result r;
    kg_libref lib;
    kg_err e;
    assert_int_equal(run("stderr_junk", 10, &r, &lib, &e), 0);
    assert_int_equal(r.verdict, KG_V_CRASH);
    assert_non_null(strstr(r.reason, "junk-start"));
    assert_non_null(strstr(r.wrapper_tail, "junk-end"));
    assert_true(kg_text_is_clean(r.reason) && kg_text_is_clean(r.wrapper_tail));
    kg_report rep;
    kg_report_init(&rep);
    snprintf(rep.command, sizeof rep.command, "kgate check \xff\xc2\x85.so"); /* a file name of any bytes */
    assert_non_null(kg_report_add(&rep, &r));
    char *text = kg_report_to_json(&rep);
    kg_report_free(&rep);
    assert_non_null(text);
    char path[] = "/tmp/kgate-junk-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    free(text);
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json, sys, unicodedata as u\n"
             "def s(x):\n"
             "    if isinstance(x, dict): [s(k) or s(v) for k, v in x.items()]\n"
             "    elif isinstance(x, list): [s(v) for v in x]\n"
             "    elif isinstance(x, str): assert not any(u.category(c) == \"Cc\" for c in x), x\n"
             "d = json.loads(open(sys.argv[1], \"rb\").read().decode(\"utf-8\"))\n"
             "s(d); assert \"junk-end\" in d[\"results\"][0][\"reason\"]' %s",
             path);
    int rc = system(cmd);
    unlink(path);
    if (rc == -1 || WEXITSTATUS(rc) == 127)
        skip(); /* no python3 here: the C checks above stand */
    assert_int_equal(rc, 0);
}

/* Judging what kgate measured of its own: a reported time far under its
 * own device span is tampering; a launch that held the host is host work. */
static void own_clock_and_host_holds(void **state)
{
    (void)state;
    kg_result r;
    memset(&r, 0, sizeof r);
    kg_result_set(&r, "time/gpu/median", 10e-6);
    kg_result_set(&r, "time/span/median", 400e-6); /* the device saw 400 us */
    judge_softmax(&r, NULL);
    assert_int_equal(r.verdict, KG_V_IMPOSSIBLE);
    assert_true(r.flags & KG_FLAG(TIMER_MISMATCH));
    /* recorded on the H200: the adversarial timer_hook reported 5.46 us in
     * a 35.7 us span; the bundled layer_norm v2 and v1 at 1024x1024 3.30 us
     * in 9.25 and 33.3 in 40.0 */
    const double rows[][3] = {{5.462e-6, 3.5744e-5, 1}, {3.296e-6, 9.248e-6, 0}, {3.3344e-5, 3.9968e-5, 0}};
    for (int i = 0; i < 3; i++) {
        memset(&r, 0, sizeof r);
        kg_result_set(&r, "time/gpu/median", rows[i][0]);
        kg_result_set(&r, "time/span/median", rows[i][1]);
        judge_softmax(&r, NULL);
        assert_int_equal(!!(r.flags & KG_FLAG(TIMER_MISMATCH)), (int)rows[i][2]);
    }
    memset(&r, 0, sizeof r);
    kg_result_set(&r, "time/gpu/median", 1e-3);
    kg_result_set(&r, "time/blocking", 1);
    judge_softmax(&r, NULL);
    assert_true(r.flags & KG_FLAG(HOST_WORK));
}

/* The host time of a launch call beyond the launch path's allowance is
 * charged, continuously. Recorded on the H200 (docs/cli.md): the Triton JIT
 * matmul at 1024^3 fp16, 14.1 us on the GPU against cuBLASLt's 5.6 us, with
 * launch host medians from 28.4 to 51.5 us over twelve runs; the earlier
 * rule (all of the host time once over 2 t and 50 us) judged the 51.5 us
 * run at E_lib 0.11 and the rest at 0.40. */
static double judged_elib_with(double gpu, double host, double allowance, unsigned *flags, double *judged)
{
    kg_roofs roofs = {"measured", 4.27e12, 0, 0, {775.6e12, 805.5e12, 407.8e12}, 66.9e12, 0, 0};
    kg_gate g;
    kg_gate_defaults(&g);
    if (allowance >= 0)
        g.host_allowance = allowance;
    kg_shape s = {3, {1024, 1024, 1024}};
    kg_types ty = {KG_FP16, KG_I64};
    kg_libref lib;
    memset(&lib, 0, sizeof lib);
    lib.measured = 1;
    lib.n = 1;
    lib.chosen = 0;
    snprintf(lib.paths[0].name, sizeof lib.paths[0].name, "cublaslt");
    lib.paths[0].status = KG_LIB_OK;
    lib.paths[0].t = lib.paths[0].lo = lib.paths[0].hi = 5.6e-6;
    kg_result r;
    memset(&r, 0, sizeof r);
    kg_result_set(&r, "time/gpu/median", gpu);
    kg_result_set(&r, "time/host/median", host);
    kg_judge(&r, kg_op_find("matmul"), ty, &s, NULL, &roofs, &lib, &g);
    double e = -1;
    assert_true(kg_result_get(&r, "lib/efficiency", &e));
    assert_true(kg_result_get(&r, "time/judged", judged));
    double a = -1; /* each result says what its launch path was allowed */
    assert_true(kg_result_get(&r, "time/host/allowance", &a) && a == g.host_allowance);
    *flags = r.flags;
    return e;
}

static double judged_elib(double gpu, double host, unsigned *flags, double *judged)
{
    return judged_elib_with(gpu, host, -1, flags, judged);
}

static void host_time_is_charged_continuously(void **state)
{
    (void)state;
    unsigned flags;
    double judged;
    const double hosts[] = {28.4e-6, 36.7e-6, 48.8e-6, 51.5e-6, 64.0e-6};
    for (int i = 0; i < 5; i++) { /* the launch path's noise does not move E */
        double e = judged_elib(14.1e-6, hosts[i], &flags, &judged);
        assert_true(fabs(e - 5.6 / 14.1) < 1e-9);
        assert_false(flags & KG_FLAG(HOST_WORK));
        assert_true(fabs(judged - 14.1e-6) < 1e-15);
    }
    /* past F = 14.1 + 50 us the charge climbs at twice the host time's
     * rate, from the GPU time: no step where the flag starts */
    double e1 = judged_elib(14.1e-6, 64.2e-6, &flags, &judged);
    assert_true(flags & KG_FLAG(HOST_WORK));
    assert_true(fabs(judged - 14.3e-6) < 1e-12);
    assert_true(fabs(e1 - 5.6 / 14.3) < 1e-6);
    /* a launch that computes on the host for 1 ms beside 2 us of GPU work:
     * judged on the whole 1 ms, as the earlier rule did */
    double e2 = judged_elib(2e-6, 1e-3, &flags, &judged);
    assert_true(flags & KG_FLAG(HOST_WORK));
    assert_true(fabs(judged - 1e-3) < 1e-12);
    assert_true(fabs(e2 - 5.6 / 1000) < 1e-9);
    assert_true(kg_host_charge(3e-6, 40e-6, KG_HOST_ALLOWANCE_S) == 3e-6);
    assert_true(fabs(kg_host_charge(3e-6, 80e-6, KG_HOST_ALLOWANCE_S) - 57e-6) < 1e-15);   /* on the ramp: 3 + 2 x 27 */
    assert_true(fabs(kg_host_charge(3e-6, 103e-6, KG_HOST_ALLOWANCE_S) - 103e-6) < 1e-15); /* met the host time */
    /* a longer kernel hides host time up to its own GPU time: 100 us of GPU
     * work with 180 us on the host is judged on 100 us, with 250 us on 200
     * (the ramp), with 300 us or more on the host time */
    assert_true(kg_host_charge(100e-6, 180e-6, KG_HOST_ALLOWANCE_S) == 100e-6);
    assert_true(fabs(kg_host_charge(100e-6, 250e-6, KG_HOST_ALLOWANCE_S) - 200e-6) < 1e-15);
    assert_true(fabs(kg_host_charge(100e-6, 300e-6, KG_HOST_ALLOWANCE_S) - 300e-6) < 1e-15);
    assert_true(fabs(kg_host_charge(100e-6, 500e-6, KG_HOST_ALLOWANCE_S) - 500e-6) < 1e-15);
    for (double h = 0; h < 600e-6; h += 0.5e-6) { /* no step anywhere, never below the GPU or over the host time */
        double c = kg_host_charge(100e-6, h, KG_HOST_ALLOWANCE_S), d = kg_host_charge(100e-6, h + 0.5e-6, KG_HOST_ALLOWANCE_S);
        assert_true(d >= c && d - c <= 2 * 0.5e-6 + 1e-15);
        assert_true(c >= 100e-6 && c <= fmax(h, 100e-6));
    }
    /* a Python callable's launch path is allowed 100 us (judge/verdict.h): a
     * 2.4 us Triton kernel with the 49.7 us host median measured on the H200
     * is judged on its GPU time with either allowance, and one 60 us median
     * on 17.6 us under a C launch's 50 us but on 2.4 us under Python's */
    assert_true(kg_host_charge(2.4e-6, 49.7e-6, KG_HOST_ALLOWANCE_S) == 2.4e-6);
    assert_true(fabs(kg_host_charge(2.4e-6, 60e-6, KG_HOST_ALLOWANCE_S) - 17.6e-6) < 1e-15);
    assert_true(kg_host_charge(2.4e-6, 60e-6, KG_HOST_ALLOWANCE_PYTHON_S) == 2.4e-6);
    assert_true(fabs(kg_host_charge(2.4e-6, 112.4e-6, KG_HOST_ALLOWANCE_PYTHON_S) - 22.4e-6) < 1e-15);
    /* and kg_judge charges with the gate's allowance, not a constant */
    judged_elib_with(14.1e-6, 90e-6, KG_HOST_ALLOWANCE_PYTHON_S, &flags, &judged);
    assert_false(flags & KG_FLAG(HOST_WORK));
    assert_true(fabs(judged - 14.1e-6) < 1e-15);
    judged_elib_with(14.1e-6, 90e-6, KG_HOST_ALLOWANCE_S, &flags, &judged);
    assert_true(flags & KG_FLAG(HOST_WORK));
    assert_true(fabs(judged - 65.9e-6) < 1e-12); /* 14.1 + 2 x (90 - 64.1) */
    /* 2 ms of host work is charged in full under either */
    judged_elib_with(2e-6, 2e-3, KG_HOST_ALLOWANCE_PYTHON_S, &flags, &judged);
    assert_true(flags & KG_FLAG(HOST_WORK));
    assert_true(fabs(judged - 2e-3) < 1e-12);
}

/* A provider's claim of the candidate's own host time (gpu/provider.h) is
 * believed between the measured time and that less the glue it may take
 * off: a Python callable that rebinds the host's clock to claim 0 of a 2 ms
 * call is charged 2 ms less 25 us at most. */
static void provider_claims_are_bounded(void **state)
{
    (void)state;
    assert_true(kg_host_own(30e-6, 45e-6, 25e-6) == 30e-6);                 /* 15 us of glue: believed */
    assert_true(fabs(kg_host_own(0, 2e-3, 25e-6) - 1.975e-3) < 1e-15);       /* a faked 0 */
    assert_true(fabs(kg_host_own(10e-6, 50e-6, 25e-6) - 25e-6) < 1e-15);     /* 40 us "glue": 25 believed */
    assert_true(kg_host_own(0, 20e-6, 25e-6) == 0);                          /* a call shorter than the bound */
    assert_true(kg_host_own(60e-6, 50e-6, 25e-6) == 50e-6);                  /* more than measured */
    assert_true(kg_host_own(-1, 50e-6, 25e-6) == 50e-6);                     /* unknown */
    assert_true(kg_host_own(-2e-3, 2e-3, 25e-6) == 2e-3);                    /* a clock rebound to 0 */
    assert_true(kg_host_own(NAN, 50e-6, 25e-6) == 50e-6);
}

/* A candidate's launch path's allowance comes from its file's name; the
 * name is split from FILE[:KERNEL] as kgate check splits it. */
static void host_allowance_follows_the_candidate(void **state)
{
    (void)state;
    assert_true(kg_host_allowance_for(NULL) == KG_HOST_ALLOWANCE_S);
    assert_true(kg_host_allowance_for("build/libkgate_bundled.so") == KG_HOST_ALLOWANCE_S);
    assert_true(kg_host_allowance_for("k.cu") == KG_HOST_ALLOWANCE_S);
    assert_true(kg_host_allowance_for("tests/python/triton_jit.py") == KG_HOST_ALLOWANCE_PYTHON_S);
    assert_true(kg_host_allowance_for(".py") == KG_HOST_ALLOWANCE_S); /* no file name before it */
    assert_true(kg_host_allowance_for("cand.pyc") == KG_HOST_ALLOWANCE_S);
    char path[64], kernel[16];
    kg_candidate_split("tests/python/triton_jit.py:jit_matmul_fp16", path, sizeof path, kernel, sizeof kernel);
    assert_string_equal(path, "tests/python/triton_jit.py");
    assert_string_equal(kernel, "jit_matmul_fp16");
    kg_candidate_split("/tmp/a:b/cand.py", path, sizeof path, kernel, sizeof kernel); /* a colon in a directory */
    assert_string_equal(path, "/tmp/a:b/cand.py");
    assert_string_equal(kernel, "");
    kg_candidate_split("/tmp/a.py:b/cand.so:k", path, sizeof path, kernel, sizeof kernel);
    assert_string_equal(path, "/tmp/a.py:b/cand.so");
    assert_string_equal(kernel, "k");
    /* too long: bounded, and said (a prefix could name another kernel or file) */
    assert_int_equal(kg_candidate_split("x.so:a_kernel_name_too_long", path, sizeof path, kernel, sizeof kernel), -1);
    assert_string_equal(path, "x.so");
    assert_string_equal(kernel, "a_kernel_name_t");
    assert_int_equal(kg_candidate_split("0123456789012345678901234567890123456789012345678901234567890123456789.py:k",
                                        path, sizeof path, kernel, sizeof kernel),
                     -1);
    assert_int_equal(strlen(path), sizeof path - 1);
    assert_string_equal(kernel, "k");
    assert_int_equal(kg_candidate_split("x.py:", path, sizeof path, kernel, sizeof kernel), 0); /* every kernel */
    assert_string_equal(path, "x.py");
    assert_string_equal(kernel, "");
    /* CAND.so:A,B: the named kernels, whole names only */
    assert_true(kg_name_in_list("relu_v2_fp16,add_v2_fp16", "add_v2_fp16"));
    assert_true(kg_name_in_list("relu_v2_fp16,add_v2_fp16", "relu_v2_fp16"));
    assert_false(kg_name_in_list("relu_v2_fp16,add_v2_fp16", "add_v2"));
    assert_false(kg_name_in_list("relu_v2_fp16,add_v2_fp16", "relu_v2_fp16,add_v2_fp16"));
    assert_false(kg_name_in_list("relu_v2_fp16,", ""));
    assert_false(kg_name_in_list("", "relu"));
}

/* The variables kgate batch hands a fork server over with (supervise/job.h). */
static void hand(const char *fd_pid)
{
    setenv("KGATE_ZYGOTE_HANDED", fd_pid, 1);
    setenv("KGATE_ZYGOTE_PYTHON", "/usr/bin/python3", 1);
    setenv("KGATE_ZYGOTE_PYTHONPATH", "", 1);
}

/* A fork server handed over by kgate batch (KGATE_ZYGOTE_HANDED=FD:PID) is
 * taken only when FD is a fork server's socket and PID this process's child;
 * the three variables leave the environment whatever happens, and a socket
 * not taken is closed (never a descriptor that is not one). */
static void handed_zygote_is_checked(void **state)
{
    (void)state;
    char v[64];
    /* stdout is no socket: refused, left open */
    hand("1:12345");
    assert_int_equal(kg_job_take_zygote(), -1);
    assert_null(getenv("KGATE_ZYGOTE_HANDED"));
    assert_null(getenv("KGATE_ZYGOTE_PYTHON"));
    assert_null(getenv("KGATE_ZYGOTE_PYTHONPATH"));
    assert_true(fcntl(1, F_GETFD) >= 0);
    /* a fork server's socket, but this process is not its own child: refused, closed */
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
    snprintf(v, sizeof v, "%d:%ld", sv[0], (long)getpid());
    hand(v);
    assert_int_equal(kg_job_take_zygote(), -1);
    assert_true(fcntl(sv[0], F_GETFD) < 0);
    /* garbage: refused */
    hand("3:x");
    assert_int_equal(kg_job_take_zygote(), -1);
    assert_null(getenv("KGATE_ZYGOTE_HANDED"));
    /* our child behind such a socket: taken, made close-on-exec; the
     * shutdown kills and reaps it */
    int sv2[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv2), 0);
    pid_t child = fork();
    if (child == 0) {
        close(sv2[0]);
        pause();
        _exit(0);
    }
    close(sv2[1]);
    snprintf(v, sizeof v, "%d:%ld", sv2[0], (long)child);
    hand(v);
    assert_int_equal(kg_job_take_zygote(), 0);
    assert_null(getenv("KGATE_ZYGOTE_HANDED"));
    assert_true(fcntl(sv2[0], F_GETFD) & FD_CLOEXEC);
    kg_job_shutdown();
    assert_true(fcntl(sv2[0], F_GETFD) < 0);
    assert_int_equal(waitpid(child, NULL, WNOHANG), -1); /* reaped already */
    close(sv[1]);
}

/* A process the candidate leaves behind, outside the worker's group. */
static void nothing_is_left_behind(void **state)
{
    (void)state;
    kg_result r;
    kg_libref lib;
    kg_err e;
    assert_int_equal(run("orphan", 10, &r, &lib, &e), 0);
    assert_int_equal(r.verdict, KG_V_SKIPPED);
    FILE *p = popen("pgrep -f 'slee[p] 61[.]25' | wc -l", "r");
    int n = -1;
    assert_non_null(p);
    assert_int_equal(fscanf(p, "%d", &n), 1);
    pclose(p);
    assert_int_equal(n, 0);
}

/* A diagnosing worker writes cubins to a scratch directory that the
 * supervisor makes and removes, even when the worker is killed mid-way;
 * a job that does not diagnose (and is not sandboxed) gets none. */
static void diagnosis_scratch_is_removed(void **state)
{
    (void)state;
    for (int diag = 1; diag >= 0; diag--) {
        char note[] = "/tmp/kgate-test-note-XXXXXX", dir[4096] = "";
        int fd = mkstemp(note);
        assert_true(fd >= 0);
        close(fd);
        setenv("KG_FAKE_NOTE", note, 1);
        kg_job job;
        fake_job(&job, KG_JOB_KERNEL);
        job.diagnose = diag;
        setenv("KG_FAKE", "scratch", 1);
        kg_result r;
        kg_err e = {0, ""};
        memset(&r, 0, sizeof r);
        kg_job_run(KG_TEST_SRC "/fake_worker.sh", &job, 10, &r, NULL, NULL, NULL, &e);
        assert_int_equal(r.verdict, KG_V_CRASH); /* killed: the kernel's crash */
        FILE *f = fopen(note, "r");
        assert_non_null(f);
        assert_non_null(fgets(dir, sizeof dir, f));
        fclose(f);
        unlink(note);
        dir[strcspn(dir, "\n")] = '\0';
        if (diag) {
            assert_non_null(strstr(dir, "kgate-worker-"));
            assert_int_not_equal(access(dir, F_OK), 0); /* removed, with the file in it */
        } else {
            assert_string_equal(dir, "none");
        }
    }
    unsetenv("KG_FAKE_NOTE");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ok_events_become_a_result),
        cmocka_unit_test(escaped_timings_say_why),
        cmocka_unit_test(library_kernels_are_flagged_not_judged),
        cmocka_unit_test(judge_uses_the_calls_scalars),
        cmocka_unit_test(incorrect_is_a_verdict),
        cmocka_unit_test(full_summary_table_is_said),
        cmocka_unit_test(crash_keeps_what_was_measured),
        cmocka_unit_test(hang_is_killed_at_the_budget),
        cmocka_unit_test(closed_channel_does_not_hang),
        cmocka_unit_test(bad_candidate_stops_the_command),
        cmocka_unit_test(library_failure_is_not_the_candidates),
        cmocka_unit_test(forged_events_are_violations),
        cmocka_unit_test(unsupported_comes_with_the_nonce),
        cmocka_unit_test(a_kernel_that_ran_has_a_time),
        cmocka_unit_test(stderr_flood_is_bounded),
        cmocka_unit_test(stderr_junk_becomes_printable_utf8),
        cmocka_unit_test(nothing_is_left_behind),
        cmocka_unit_test(diagnosis_scratch_is_removed),
        cmocka_unit_test(a_wrapped_worker_is_told_it_runs_under_a_tool),
        cmocka_unit_test(a_watch_is_called_while_the_worker_runs),
        cmocka_unit_test(a_worker_exits_normally_only_under_a_tool),
        cmocka_unit_test(a_python_package_version),
        cmocka_unit_test(own_clock_and_host_holds),
        cmocka_unit_test(host_time_is_charged_continuously),
        cmocka_unit_test(host_allowance_follows_the_candidate),
        cmocka_unit_test(provider_claims_are_bounded),
        cmocka_unit_test(handed_zygote_is_checked),
        cmocka_unit_test(stop_request_kills_the_running_worker), /* last: the stop stays requested */
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
