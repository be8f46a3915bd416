/* The verdicts a worker's end decides, one row per way it can end (first
 * match wins), and compute-sanitizer's INCORRECT. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "judge/worker_end.h"

typedef struct row {
    const char *what;
    kg_worker_end w;
    kg_verdict want;
    const char *reason; /* a part of the reason, or NULL: left as it was */
} row;

static const row rows[] = {
    {"violation beats everything", {"a second done", 1, 9, 1, "boom", 1, 11, 0, "tail", 1, 1, 0, 0}, KG_V_CRASH,
     "worker protocol violation: a second done"},
    {"watchdog", {"", 1, 9, 1, "boom", 1, 9, 0, "", 1, 0, 0, 0}, KG_V_TIMEOUT, "no result within 9 s: killed"},
    {"crash report", {"", 0, 9, 1, "cudaErrorIllegalAddress", 1, 6, 0, "", 1, 0, 0, 0}, KG_V_CRASH,
     "cudaErrorIllegalAddress"},
    {"signal with stderr", {"", 0, 9, 0, "", 1, 11, 0, "segv here", 1, 0, 0, 0}, KG_V_CRASH,
     "worker killed by signal 11 (Segmentation fault): segv here"},
    {"failed check", {"", 0, 9, 0, "", 0, 0, 0, "", 1, 1, 0, 0}, KG_V_INCORRECT, NULL},
    {"exit before done", {"", 0, 9, 0, "", 0, 0, 3, "", 0, 0, 0, 0}, KG_V_CRASH,
     "worker exited with 3 before finishing"},
    {"finished", {"", 0, 9, 0, "", 0, 0, 0, "", 0, 1, 0, 0}, KG_V_SKIPPED, NULL},
    {"finished, unsupported", {"", 0, 9, 0, "", 0, 0, 0, "", 0, 1, 1, 1}, KG_V_SKIPPED, NULL},
    {"finished, verify-only", {"", 0, 9, 0, "", 0, 0, 0, "", 0, 1, 0, 1}, KG_V_SKIPPED, NULL},
};

static void each_way_a_worker_ends(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        kg_result r;
        memset(&r, 0, sizeof r);
        snprintf(r.reason, sizeof r.reason, "as before");
        kg_judge_worker_end(&rows[i].w, &r);
        if (r.verdict != rows[i].want || (rows[i].reason && !strstr(r.reason, rows[i].reason)) ||
            (!rows[i].reason && strcmp(r.reason, "as before") != 0))
            fail_msg("%s: got %s \"%s\"", rows[i].what, kg_verdict_name(r.verdict), r.reason);
        double v = 0;
        int unsupported = kg_result_get(&r, "check/unsupported", &v) == 1 && v == 1;
        assert_int_equal(unsupported, strcmp(rows[i].what, "finished, unsupported") == 0);
        int verified = (r.flags & KG_FLAG(VERIFIED)) != 0;
        assert_int_equal(verified, strcmp(rows[i].what, "finished, verify-only") == 0);
    }
}

static void sanitizer_error_is_incorrect(void **state)
{
    (void)state;
    kg_result r;
    memset(&r, 0, sizeof r);
    kg_judge_sanitizer(&r, "racecheck", "RACECHECK SUMMARY: 1 hazard displayed");
    assert_int_equal(r.verdict, KG_V_INCORRECT);
    assert_string_equal(r.reason, "compute-sanitizer racecheck found an error");
    assert_string_equal(r.detail, "RACECHECK SUMMARY: 1 hazard displayed");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_way_a_worker_ends),
        cmocka_unit_test(sanitizer_error_is_incorrect),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
