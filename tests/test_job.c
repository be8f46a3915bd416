/* Worker supervision on the CPU, with tests/fake_worker.sh standing in for
 * the worker: events become results, a crash keeps what was measured, a hang
 * is killed at the budget, a bad candidate stops the command. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "core/job.h"

static int run(const char *mode, double timeout, kg_result *r, kg_libref *lib, kg_err *e)
{
    kg_job_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.exe = KG_TEST_SRC "/fake_worker.sh";
    sp.plugin = "x.so";
    sp.kernel = "k";
    sp.op = kg_op_find("softmax");
    sp.dtype = KG_FP16;
    sp.shape = sp.op->presets[0].shape;
    sp.trials = 1;
    sp.timeout_s = timeout;
    kg_stop_defaults(&sp.stop);
    setenv("KG_FAKE", mode, 1);
    memset(r, 0, sizeof *r);
    memset(lib, 0, sizeof *lib);
    memset(e, 0, sizeof *e);
    return kg_job_run(&sp, r, lib, NULL, e);
}

static void ok_events_become_a_result(void **state)
{
    (void)state;
    kg_result r;
    kg_libref lib;
    kg_err e;
    assert_int_equal(run("ok", 10, &r, &lib, &e), 0);
    assert_int_equal(r.verdict, KG_V_SKIPPED); /* measured, not judged yet */
    double t;
    assert_true(kg_result_get(&r, "time/gpu/median", &t) && t == 1e-4);
    assert_true(lib.have && lib.t == 2e-4);
    assert_string_equal(lib.name, "cudnn-softmax");
    assert_string_equal(r.stop, "noise");
    kg_roofs roofs = {"measured", 4.3e12, {0}, 66.9e12};
    kg_gate g;
    kg_gate_defaults(&g);
    kg_shape s = {2, {1024, 4096}};
    kg_judge(&r, kg_op_find("softmax"), KG_FP16, &s, &roofs, &lib, &g);
    assert_int_equal(r.verdict, KG_V_OK);
    assert_true(kg_result_get(&r, "lib/efficiency", &t) && fabs(t - 2.0) < 1e-12);
}

static void incorrect_is_a_verdict(void **state)
{
    (void)state;
    kg_result r;
    kg_libref lib;
    kg_err e;
    assert_int_equal(run("incorrect", 10, &r, &lib, &e), 0);
    assert_int_equal(r.verdict, KG_V_INCORRECT);
    assert_non_null(strstr(r.detail, "3 of 100 elements wrong"));
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

static void hang_is_killed_at_the_budget(void **state)
{
    (void)state;
    kg_result r;
    kg_libref lib;
    kg_err e;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    assert_int_equal(run("hang", 1.0, &r, &lib, &e), 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double waited = (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9;
    assert_int_equal(r.verdict, KG_V_TIMEOUT);
    assert_true(waited >= 1.0 && waited < 10.0);
    assert_true(kg_result_get(&r, "check/trials", NULL));
}

static void bad_candidate_stops_the_command(void **state)
{
    (void)state;
    kg_result r;
    kg_libref lib;
    kg_err e;
    assert_int_equal(run("badfile", 10, &r, &lib, &e), KG_EXIT_CANDIDATE);
    assert_non_null(strstr(e.msg, "no kgate_plugin_v1 symbol"));
}

static void library_failure_is_not_the_candidates(void **state)
{
    (void)state;
    kg_result r;
    kg_libref lib;
    kg_err e;
    assert_int_equal(run("libcrash", 10, &r, &lib, &e), KG_EXIT_ENV);
    assert_non_null(strstr(e.msg, "library baseline cublaslt failed"));
    assert_int_not_equal(r.verdict, KG_V_CRASH);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ok_events_become_a_result),
        cmocka_unit_test(incorrect_is_a_verdict),
        cmocka_unit_test(crash_keeps_what_was_measured),
        cmocka_unit_test(hang_is_killed_at_the_budget),
        cmocka_unit_test(bad_candidate_stops_the_command),
        cmocka_unit_test(library_failure_is_not_the_candidates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
