/* The profiler's metric sets against CUPTI's GH100 metric table, offline:
 * the host API needs neither a GPU nor a driver, only libcupti. Pass counts
 * are the ones measured with CUPTI 13.0 (gpu/profile.c says why the default
 * set leaves out the global-load request count). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "gpu/profile.h"

#define DEFAULT_PASSES 3   /* measured: 25 metrics */
#define EXTENDED_PASSES 12 /* measured: 32 metrics */
#define UNPATCHED_PASSES 2 /* measured: the default set less its 7 smsp__sass_ metrics */

/* The counters the diagnosis needs from the default set (the brief's list
 * and what diagnose/diagnose.c reads). */
static const char *const REQUIRED[] = {
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__t_sector_hit_rate.pct",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct",
    "smsp__sass_data_bytes_mem_global_op_ld.sum",
    "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warp_latency_per_inst_issued.ratio",
    "smsp__issue_active.avg.per_cycle_active",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__ctas_launched.sum",
    "sm__inst_executed_pipe_tensor_op_gmma.sum",
};

/* Bad names, as data: each is appended to a copy of the default set, and
 * the error must say must_say. */
static const struct {
    const char *name;
    const char *must_say;
} BAD[] = {
    {"dram__bytes_red.sum", "dram__bytes_red.sum"},                 /* misspelled */
    {"lts__t_sector_hit_rate.pcx", "lts__t_sector_hit_rate.pcx"},   /* bad rollup */
    {"launch__grid_size", "launch__grid_size"},                     /* ncu-only */
    {"sm__maximum_warps_per_active_cycle_pct", "sm__maximum_warps"}, /* ncu-only */
    {"gpu__time_duration.sum", "twice"},                            /* repeated */
};

static int in_set(const char *const *set, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(set[i], name) == 0)
            return 1;
    return 0;
}

#include "asan.h"

/* Skips (with the reason) when the CUPTI host API cannot run here at all. */
static int host_api_or_skip(void)
{
#ifdef KG_UNDER_ASAN
    /* CUPTI dlopens libnvperf_host.so with RTLD_DEEPBIND, which the ASan
     * runtime refuses by ending the process */
    print_message("skipped: CUPTI's host library cannot load under AddressSanitizer (RTLD_DEEPBIND)\n");
    return 0;
#endif
    const char *one[] = {"gpu__time_duration.sum"};
    kg_err e = {0, ""};
    int passes = 0;
    if (kg_prof_passes_offline("GH100", one, 1, &passes, &e) == KG_EXIT_ENV) {
        print_message("skipped: the CUPTI host API does not run here: %s\n", e.msg);
        return 0;
    }
    return 1;
}

static void default_set_fits_three_passes(void **state)
{
    (void)state;
    if (!host_api_or_skip())
        skip();
    kg_err e = {0, ""};
    int passes = 0;
    assert_int_equal(kg_prof_passes_offline("GH100", kg_prof_default_metrics, kg_prof_n_default, &passes, &e), 0);
    assert_true(passes <= 3);
    assert_int_equal(passes, DEFAULT_PASSES);
    assert_int_equal(kg_prof_last_passes(), 0); /* offline checks do not count as collections */
}

static void extended_set_passes(void **state)
{
    (void)state;
    if (!host_api_or_skip())
        skip();
    kg_err e = {0, ""};
    int passes = 0;
    assert_int_equal(kg_prof_passes_offline("GH100", kg_prof_extended_metrics, kg_prof_n_extended, &passes, &e), 0);
    assert_int_equal(passes, EXTENDED_PASSES);
}

static void sets_hold_what_the_diagnosis_reads(void **state)
{
    (void)state;
    assert_true(kg_prof_n_default <= KG_KMETRICS_MAX);
    assert_true(kg_prof_n_extended <= KG_KMETRICS_MAX);
    for (size_t i = 0; i < sizeof REQUIRED / sizeof REQUIRED[0]; i++)
        if (!in_set(kg_prof_default_metrics, kg_prof_n_default, REQUIRED[i]))
            fail_msg("the default set lacks %s", REQUIRED[i]);
    for (int i = 0; i < kg_prof_n_default; i++) /* extended = default + more */
        assert_true(in_set(kg_prof_extended_metrics, kg_prof_n_extended, kg_prof_default_metrics[i]));
    assert_true(in_set(kg_prof_extended_metrics, kg_prof_n_extended, "sm__throughput.avg.pct_of_peak_sustained_elapsed"));
    assert_true(in_set(kg_prof_extended_metrics, kg_prof_n_extended,
                       "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"));
}

static void bad_metric_is_usage_and_named(void **state)
{
    (void)state;
    if (!host_api_or_skip())
        skip();
    const char *set[KG_KMETRICS_MAX];
    for (size_t b = 0; b < sizeof BAD / sizeof BAD[0]; b++) {
        memcpy(set, kg_prof_default_metrics, sizeof *set * (size_t)kg_prof_n_default);
        set[kg_prof_n_default] = BAD[b].name; /* after every good one */
        kg_err e = {0, ""};
        int passes = -1;
        assert_int_equal(kg_prof_passes_offline("GH100", set, kg_prof_n_default + 1, &passes, &e), KG_EXIT_USAGE);
        if (!strstr(e.msg, BAD[b].must_say))
            fail_msg("error for %s does not say '%s': %s", BAD[b].name, BAD[b].must_say, e.msg);
        assert_int_equal(passes, 0);
    }
}

static void bad_set_shapes(void **state)
{
    (void)state;
    const char *set[KG_KMETRICS_MAX + 1];
    kg_err e = {0, ""};
    int passes = -1;
    assert_int_equal(kg_prof_passes_offline("GH100", kg_prof_default_metrics, 0, &passes, &e), KG_EXIT_USAGE);
    for (int i = 0; i <= KG_KMETRICS_MAX; i++)
        set[i] = kg_prof_extended_metrics[i % kg_prof_n_extended];
    kg_err e2 = {0, ""};
    assert_int_equal(kg_prof_passes_offline("GH100", set, KG_KMETRICS_MAX + 1, &passes, &e2), KG_EXIT_USAGE);
    const char *longname[] = {"sm__a_name_far_longer_than_the_ninety_five_bytes_a_kg_metric_keeps_for_its_name_"
                              "and_then_some.sum"};
    kg_err e3 = {0, ""};
    assert_int_equal(kg_prof_passes_offline("GH100", longname, 1, &passes, &e3), KG_EXIT_USAGE);
    assert_non_null(strstr(e3.msg, "longer"));
}

/* A long kernel's diagnosis leaves the SASS-patched metrics out
 * (--diagnose-patched-max): what is left is every other name of the set, in
 * order, and one pass fewer. */
static void unpatched_set_drops_the_sass_metrics(void **state)
{
    (void)state;
    const char *out[64];
    assert_true(kg_prof_n_extended <= 64);
    int n = kg_prof_unpatched(kg_prof_default_metrics, kg_prof_n_default, out);
    int patched = 0;
    for (int i = 0; i < kg_prof_n_default; i++)
        patched += strncmp(kg_prof_default_metrics[i], "smsp__sass_", 11) == 0;
    assert_int_equal(patched, 7);
    assert_int_equal(n, kg_prof_n_default - patched);
    for (int i = 0, k = 0; i < kg_prof_n_default; i++) {
        if (strncmp(kg_prof_default_metrics[i], "smsp__sass_", 11) == 0)
            continue;
        assert_ptr_equal(out[k], kg_prof_default_metrics[i]); /* the same names, in order */
        k++;
    }
    /* the stall and DRAM counters the rules lean on stay */
    int kept = 0;
    for (int i = 0; i < n; i++)
        kept += strcmp(out[i], "smsp__average_warp_latency_per_inst_issued.ratio") == 0 ||
                strcmp(out[i], "dram__bytes_read.sum") == 0;
    assert_int_equal(kept, 2);
    assert_int_equal(kg_prof_unpatched(kg_prof_default_metrics, 0, out), 0);
    if (!host_api_or_skip())
        skip();
    kg_err e = {0, ""};
    int passes = 0;
    assert_int_equal(kg_prof_passes_offline("GH100", out, n, &passes, &e), 0);
    assert_int_equal(passes, UNPATCHED_PASSES);
    n = kg_prof_unpatched(kg_prof_extended_metrics, kg_prof_n_extended, out);
    assert_int_equal(n, kg_prof_n_extended - patched);
}

static void unknown_chip_is_an_error(void **state)
{
    (void)state;
    if (!host_api_or_skip())
        skip();
    kg_err e = {0, ""};
    int passes = -1;
    assert_int_not_equal(kg_prof_passes_offline("GX999", kg_prof_default_metrics, kg_prof_n_default, &passes, &e), 0);
    assert_int_equal(e.code, KG_EXIT_USAGE);
    assert_non_null(strstr(e.msg, "GX999"));
    assert_non_null(strstr(e.msg, "GH100")); /* the list of chips CUPTI knows */
    assert_int_equal(passes, 0);
    kg_err e2 = {0, ""};
    assert_int_equal(kg_prof_passes_offline("", kg_prof_default_metrics, kg_prof_n_default, &passes, &e2),
                     KG_EXIT_USAGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_set_fits_three_passes),
        cmocka_unit_test(extended_set_passes),
        cmocka_unit_test(sets_hold_what_the_diagnosis_reads),
        cmocka_unit_test(bad_metric_is_usage_and_named),
        cmocka_unit_test(bad_set_shapes),
        cmocka_unit_test(unknown_chip_is_an_error),
        cmocka_unit_test(unpatched_set_drops_the_sass_metrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
