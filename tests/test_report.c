/* Reports: JSON round trip, atomic write, the exit code of a report, and a
 * sample file that tests/validate_schema.py checks against the schema. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "diagnose/diag_json.h"
#include "report/report.h"

/* A blank result of this kernel, operator, dtype and shape. */
static void blank(kg_result *x, const char *kernel, const char *op, const char *dtype, const char *shape)
{
    memset(x, 0, sizeof *x);
    snprintf(x->kernel, sizeof x->kernel, "%s", kernel);
    snprintf(x->op, sizeof x->op, "%s", op);
    snprintf(x->dtype, sizeof x->dtype, "%s", dtype);
    snprintf(x->shape, sizeof x->shape, "%s", shape);
}

static void sample(kg_report *r)
{
    kg_report_init(r);
    snprintf(r->command, sizeof r->command, "kgate run");
    snprintf(r->commit, sizeof r->commit, "abc123");
    snprintf(r->date, sizeof r->date, "2026-11-30T17:00:00Z");
    snprintf(r->device, sizeof r->device, "NVIDIA H200");
    strcpy(r->roofs.source, "measured");
    r->roofs.bw = 4.3e12;
    r->roofs.mma[KG_FP16] = 750e12;
    kg_result a;
    blank(&a, "layer_norm_v2_bf16", "layer_norm", "bf16", "8192x8192");
    a.verdict = KG_V_OK;
    a.flags = KG_FLAG(JUDGMENT_BAND) | KG_FLAG(NOISY);
    kg_result_set(&a, "time/gpu/median", 70e-6);
    kg_result_set(&a, "roof/fraction", 0.9);
    kg_result_set(&a, "my/new/metric", 42);
    kg_result_set(&a, "best/efficiency", 0.97);
    kg_result_set(&a, "lib/efficiency", 1.02);
    snprintf(a.best, sizeof a.best, "cudnn-layernorm");
    a.n_libs = 2;
    snprintf(a.libs[0].name, sizeof a.libs[0].name, "cudnn-layernorm");
    a.libs[0].status = KG_LIB_OK;
    a.libs[0].t = 68.6e-6;
    snprintf(a.libs[1].name, sizeof a.libs[1].name, "cudnn-legacy");
    a.libs[1].status = KG_LIB_UNSUPPORTED;
    snprintf(a.libs[1].note, sizeof a.libs[1].note, "no engine");
    kg_report_add(r, &a);
    a.verdict = KG_V_SLOW;
    snprintf(a.kernel, sizeof a.kernel, "layer_norm_v1_bf16");
    snprintf(a.summary, sizeof a.summary, "serial row reduction, fp32 round trip (RC0a)");
    /* its diagnosis: one kernel with the serial-reduction signature */
    a.diag = calloc(1, sizeof *a.diag);
    kg_kfacts *k = &a.diag->kernels[a.diag->n_kernels++];
    kg_kfacts_init(k);
    snprintf(k->name, sizeof k->name, "_Z9ln_v1_rowIfEvPKfPfif");
    k->launches = 1, k->sms = 132;
    k->grid[0] = 32, k->grid[1] = k->grid[2] = 1, k->block[0] = 256, k->block[1] = k->block[2] = 1;
    kg_kfacts_set(k, "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", 15.7);
    kg_kfacts_set(k, "smsp__average_warp_latency_per_inst_issued.ratio", 18.8);
    kg_kfacts_set(k, "smsp__issue_active.avg.per_cycle_active", 0.05);
    kg_kfacts_set(k, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 0.4);
    kg_kfacts_set(k, "sm__warps_active.avg.pct_of_peak_sustained_active", 1.6);
    a.diag->passes = 3, a.diag->launches = 1;
    snprintf(a.diag->note, sizeof a.diag->note, "no SASS: cuobjdump not found");
    kg_diag_params p;
    kg_diag_params_defaults(&p);
    kg_diag_ctx c = {.reduction = 1, .rho = 0.02};
    kg_diagnose(a.diag->kernels, 1, &c, &p, a.diag->causes, KG_CAUSES_MAX, &a.diag->n_causes);
    kg_report_add(r, &a); /* the report takes the diagnosis over */
}

static void round_trip(void **state)
{
    (void)state;
    kg_report r, back;
    kg_err e = {0, ""};
    char path[512];
    sample(&r);
    {
        /* a third result with every flag kgate has, so that the schema
         * check of this file (results_schema) knows each flag it writes */
        kg_result all = r.results[0];
        all.diag = NULL;
        snprintf(all.kernel, sizeof all.kernel, "every_flag");
        for (int b = 0; b < KG_FLAG_COUNT; b++)
            all.flags |= 1u << b;
        kg_report_add(&r, &all);
    }
    r.gate.host_allowance = KG_HOST_ALLOWANCE_PYTHON_S; /* the gate a Python candidate's check wrote */
    snprintf(path, sizeof path, "%s/tests/sample-report.json", KG_TEST_BIN);
    assert_int_equal(kg_report_write_json(&r, path, &e), 0);
    assert_int_equal(kg_report_read_json(path, &back, &e), 0);
    assert_int_equal(back.n, 3);
    assert_true(back.gate.host_allowance == KG_HOST_ALLOWANCE_PYTHON_S);
    assert_int_equal(back.results[2].flags, (1u << KG_FLAG_COUNT) - 1); /* every flag reads back */
    assert_string_equal(back.results[0].kernel, "layer_norm_v2_bf16");
    assert_int_equal(back.results[0].verdict, KG_V_OK);
    assert_int_equal(back.results[0].flags, KG_FLAG(JUDGMENT_BAND) | KG_FLAG(NOISY));
    double v;
    assert_true(kg_result_get(&back.results[0], "my/new/metric", &v) && v == 42);
    assert_true(kg_result_get(&back.results[0], "time/gpu/median", &v) && fabs(v - 70e-6) < 1e-15);
    assert_string_equal(back.results[0].sums[0].unit, "s");
    assert_int_equal(kg_report_exit_code(&back), 1); /* worst is SLOW */
    assert_string_equal(back.results[0].best, "cudnn-layernorm");
    assert_int_equal(back.results[0].n_libs, 2);
    assert_int_equal(back.results[0].libs[1].status, KG_LIB_UNSUPPORTED);
    assert_true(back.results[0].libs[0].t == 68.6e-6);
    /* the diagnosis comes back whole */
    assert_null(back.results[0].diag);
    const kg_diagnosis *d = back.results[1].diag;
    assert_non_null(d);
    assert_string_equal(back.results[1].summary, "serial row reduction, fp32 round trip (RC0a)");
    assert_int_equal(d->n_kernels, 1);
    assert_int_equal(d->passes, 3);
    assert_string_equal(d->note, "no SASS: cuobjdump not found");
    assert_true(d->kernels[0].grid[0] == 32);
    assert_true(kg_kfacts_metric(&d->kernels[0], "smsp__issue_active.avg.per_cycle_active") == 0.05);
    assert_true(d->n_causes >= 1);
    assert_string_equal(d->causes[0].id, "RC0a");
    assert_non_null(d->causes[0].hint);
    assert_true(fabs(d->causes[0].score - r.results[1].diag->causes[0].score) < 1e-12);
    /* printed: the top cause with evidence and fix, the kernel's short name */
    char buf[4096] = "";
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    kg_report_print_diagnosis(&back.results[1], &back.gate, f, 0);
    fclose(f);
    assert_non_null(strstr(buf, "  why: RC0a (score "));
    assert_non_null(strstr(buf, " in ln_v1_row: serial reduction"));
    assert_non_null(strstr(buf, "evidence: achieved occupancy 1.6%"));
    assert_non_null(strstr(buf, "long-scoreboard stalls 0.84"));
    assert_non_null(strstr(buf, "diagnosis: no SASS: cuobjdump not found"));
    /* the table gains a cause column: the top cause and its score, - for none */
    char table[8192] = "";
    f = fmemopen(table, sizeof table - 1, "w");
    kg_report_print(&back, f, 0);
    fclose(f);
    assert_non_null(strstr(table, " cause "));
    assert_non_null(strstr(table, "  -          judgment-band"));
    char want[32];
    snprintf(want, sizeof want, "RC0a   %.2f", back.results[1].diag->causes[0].score);
    assert_non_null(strstr(table, want));
    /* the gate line says what host time a launch call had for free */
    assert_non_null(strstr(table, "a launch call's host time is free to max(100 us, the GPU time) beyond the GPU time"));
    kg_report_free(&back);
    kg_report_free(&r);
}

/* kgate run's summary: per-family medians and the passes-but-slow list. */
static void family_summary(void **state)
{
    (void)state;
    kg_report r;
    kg_family_row rows[KG_FAMILY_COUNT];
    sample(&r);
    kg_report_families(&r, rows);
    assert_int_equal(rows[KG_FAMILY_NORMALIZATION].n, 2);
    assert_int_equal(rows[KG_FAMILY_NORMALIZATION].n_slow, 1);
    assert_true(fabs(rows[KG_FAMILY_NORMALIZATION].rho - 0.9) < 1e-12);
    assert_true(fabs(rows[KG_FAMILY_NORMALIZATION].e_best - 0.97) < 1e-12);
    assert_int_equal(rows[KG_FAMILY_GEMM].n, 0);
    char path[512];
    snprintf(path, sizeof path, "%s/tests/summary.txt", KG_TEST_BIN);
    FILE *f = fopen(path, "w+");
    kg_report_print(&r, f, 1);
    rewind(f);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    assert_non_null(strstr(buf, "passes-but-slow: 1 correct kernel judged SLOW"));
    assert_non_null(strstr(buf, "layer_norm_v1_bf16"));
    assert_non_null(strstr(buf, "normalization"));
    assert_non_null(strstr(buf, "cudnn-legacy unsupported (no engine)"));
    /* the legend under the table, with the report's own gate */
    char legend[160];
    snprintf(legend, sizeof legend, "\nOK: correct, and E_best >= %.2f or rho >= %.2f; IMPOSSIBLE: rho past %.2f",
             r.gate.e_ok, r.gate.rho_ok, r.gate.rho_impossible);
    assert_non_null(strstr(buf, legend));
    assert_non_null(strstr(buf, "\ncliff: the naive variant's time over this one's; cause: the top root cause"));
    kg_report_free(&r);
}

/* A kernel judged on its host work: the table and the passes-but-slow line
 * show the time the gate judged (time/judged), the one E was taken from,
 * not the GPU median beside it. */
static void host_work_shows_the_judged_time(void **state)
{
    (void)state;
    kg_report r;
    kg_report_init(&r);
    kg_result a;
    blank(&a, "relu_host", "relu", "fp16", "16384x16384");
    a.verdict = KG_V_SLOW;
    a.flags = KG_FLAG(HOST_WORK);
    kg_result_set(&a, "time/gpu/median", 270e-6);
    kg_result_set(&a, "time/judged", 2.05e-3);
    kg_result_set(&a, "best/time/median", 265e-6);
    snprintf(a.best, sizeof a.best, "torch");
    kg_report_add(&r, &a);
    assert_true(fabs(kg_result_time(&a) - 2.05e-3) < 1e-15);
    char buf[8192];
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    assert_non_null(f);
    kg_report_print(&r, f, 1);
    fclose(f);
    assert_non_null(strstr(buf, "2.050 ms"));
    assert_null(strstr(buf, "270.0 us"));
    assert_non_null(strstr(buf, "7.7x slower than torch"));
    kg_report_free(&r);
    memset(&a, 0, sizeof a); /* without time/judged: the GPU median */
    kg_result_set(&a, "time/gpu/median", 270e-6);
    assert_true(fabs(kg_result_time(&a) - 270e-6) < 1e-15);
}

/* The gap line of a SLOW kernel's diagnosis: the best known rho / E_best
 * and the library path's rho against rho_fair. */
static void gap_line(kg_result *a, const kg_gate *g, char *buf, size_t size)
{
    FILE *f = fmemopen(buf, size - 1, "w");
    assert_non_null(f);
    memset(buf, 0, size);
    kg_report_print_diagnosis(a, g, f, 0);
    fclose(f);
}

static void diagnosis_says_whose_gap_it_is(void **state)
{
    (void)state;
    kg_gate g;
    kg_gate_defaults(&g);
    kg_diagnosis d;
    memset(&d, 0, sizeof d);
    kg_result a;
    blank(&a, "ls_v1", "log_softmax", "fp16", "4096x32768");
    a.diag = &d;
    a.verdict = KG_V_SLOW;
    snprintf(a.best, sizeof a.best, "log_softmax_v2_fp16");
    snprintf(a.baseline, sizeof a.baseline, "cudnn-log-softmax");
    kg_result_set(&a, "roof/fraction", 0.01);
    kg_result_set(&a, "best/efficiency", 0.0107); /* the best at 0.01 / 0.0107 = 0.93 */
    kg_result_set(&a, "lib/roof/fraction", 0.30);
    char buf[2048];
    gap_line(&a, &g, buf, sizeof buf);
    assert_non_null(strstr(buf, "  gap: rho 0.01; the best known (log_softmax_v2_fp16) reaches 0.93, the library "
                                "path (cudnn-log-softmax) 0.30: the roof is within reach, the gap is the kernel's"));
    /* nothing known reaches rho_fair: structural */
    kg_result_set(&a, "best/efficiency", 0.04);
    gap_line(&a, &g, buf, sizeof buf);
    assert_non_null(strstr(buf, "reaches only 0.25, the library path (cudnn-log-softmax) 0.30, under rho_fair 0.50: "
                                "part of the gap is structural"));
    /* the best is the library path: named once */
    snprintf(a.best, sizeof a.best, "cudnn-log-softmax");
    gap_line(&a, &g, buf, sizeof buf);
    assert_non_null(strstr(buf, "the best known (cudnn-log-softmax) reaches only 0.25, under rho_fair"));
    /* no line for an OK kernel, nor without the gate */
    a.verdict = KG_V_OK;
    gap_line(&a, &g, buf, sizeof buf);
    assert_null(strstr(buf, "gap:"));
    a.verdict = KG_V_SLOW;
    gap_line(&a, NULL, buf, sizeof buf);
    assert_null(strstr(buf, "gap:"));
}

static void unwritable_path_leaves_nothing(void **state)
{
    (void)state;
    kg_report r;
    kg_err e = {0, ""};
    sample(&r);
    assert_int_equal(kg_report_write_json(&r, "/nonexistent-dir/x.json", &e), KG_EXIT_IO);
    assert_non_null(strstr(e.msg, "/nonexistent-dir"));
    kg_report_free(&r);
}

/* Reads a results file of the given text (written under the test's build
 * directory as NAME); returns kg_report_read_json's code. */
static int read_text(const char *name, const char *text, kg_report *r, kg_err *e)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/%s", KG_TEST_BIN, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return kg_report_read_json(path, r, e);
}

static void malformed_file_is_rejected(void **state)
{
    (void)state;
    kg_report r;
    kg_err e = {0, ""};
    assert_int_equal(read_text("malformed.json", "{\"schema\": \"something-else\"}", &r, &e), KG_EXIT_IO);
    assert_non_null(strstr(e.msg, "not a kgate.results/2 file"));
    kg_report_free(&r);
}

/* Results from a kgate before the gate carried host_allowance were judged
 * with a C launch's: that is what reads back. */
static void older_gate_reads_a_c_launchs_allowance(void **state)
{
    (void)state;
    kg_report r;
    kg_err e = {0, ""};
    assert_int_equal(read_text("older-gate.json",
                               "{\"schema\": \"kgate.results/2\", \"gate\": {\"e_ok\": 0.7, \"rho_ok\": 0.5, "
                               "\"rho_impossible\": 1.05, \"suspect_e\": 2, \"suspect_rho\": 0.8, \"band\": 0.1}, "
                               "\"results\": []}",
                               &r, &e),
                     0);
    assert_true(r.gate.e_ok == 0.7);
    assert_true(r.gate.host_allowance == KG_HOST_ALLOWANCE_S);
    kg_report_free(&r);
}

int main(void)
{
    mkdir(KG_TEST_BIN "/tests", 0755);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip),
        cmocka_unit_test(older_gate_reads_a_c_launchs_allowance),
        cmocka_unit_test(family_summary),
        cmocka_unit_test(host_work_shows_the_judged_time),
        cmocka_unit_test(diagnosis_says_whose_gap_it_is),
        cmocka_unit_test(unwritable_path_leaves_nothing),
        cmocka_unit_test(malformed_file_is_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
