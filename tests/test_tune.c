/* Configuration spaces (catalog/tune.h): validation of a tunables table,
 * text and back, enumeration, budgeted samples, configuration checks, and
 * the job's configuration through the worker protocol. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "protocol/proto.h"
#include "catalog/tune.h"

static int launch(const DLTensor *i, int ni, DLTensor *o, int no, const kgate_params *p, kgate_stream s)
{
    (void)i, (void)ni, (void)o, (void)no, (void)p, (void)s;
    return 0;
}
static int launch_cfg(const DLTensor *i, int ni, DLTensor *o, int no, const kgate_params *p, const int64_t *c,
                      kgate_stream s)
{
    (void)i, (void)ni, (void)o, (void)no, (void)p, (void)c, (void)s;
    return 0;
}

static const kgate_kernel kernels[] = {{"k", "relu", "fp16", NULL, 1, 1, launch, "", NULL, NULL}};
static const kgate_plugin table = KGATE_PLUGIN(kernels);

static void validation(void **state)
{
    (void)state;
    static const int64_t a[] = {64, 128, 256}, b[] = {1, 2}, dup[] = {4, 4};
    kgate_knob good[] = {{"block_m", 3, a}, {"stages", 2, b}};
    kgate_tunable tu = {"k", 2, good, launch_cfg, NULL};
    kgate_tunables t = {1, 1, &tu};
    kg_err e = {0, ""};
    assert_int_equal(kg_tunables_validate(&t, &table, "c.so", &e), 0);
    assert_ptr_equal(kg_tunable_find(&t, "k"), &tu);
    assert_null(kg_tunable_find(&t, "other"));
    struct {
        kgate_knob k0, k1;
        const char *kernel;
        int has_launch;
        uint32_t version;
        const char *want;
    } bad[] = {
        {{"block_m", 3, a}, {"block_m", 2, b}, "k", 1, 1, "appears twice"},
        {{"Block", 3, a}, {"stages", 2, b}, "k", 1, 1, "name is not"},
        {{"block_m", 0, a}, {"stages", 2, b}, "k", 1, 1, "0 values"},
        {{"block_m", 2, dup}, {"stages", 2, b}, "k", 1, 1, "lists 4 twice"},
        {{"block_m", 3, a}, {"stages", 2, b}, "nope", 1, 1, "names no kernel"},
        {{"block_m", 3, a}, {"stages", 2, b}, "k", 0, 1, "no launch function"},
        {{"block_m", 3, a}, {"stages", 2, b}, "k", 1, 2, "version 2"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kgate_knob ks[2] = {bad[i].k0, bad[i].k1};
        kgate_tunable u = {bad[i].kernel, 2, ks, bad[i].has_launch ? launch_cfg : NULL, NULL};
        kgate_tunables tt = {bad[i].version, 1, &u};
        kg_err x = {0, ""};
        assert_int_equal(kg_tunables_validate(&tt, &table, "c.so", &x), KG_EXIT_CANDIDATE);
        if (!strstr(x.msg, bad[i].want))
            fail_msg("case %zu: '%s' lacks '%s'", i, x.msg, bad[i].want);
    }
}

static void spaces(void **state)
{
    (void)state;
    static const int64_t a[] = {64, 128, 256}, b[] = {1, 2};
    kgate_knob knobs[] = {{"block_m", 3, a}, {"stages", 2, b}};
    kgate_tunable tu = {"k", 2, knobs, launch_cfg, NULL};
    kg_space s, back;
    kg_err e = {0, ""};
    char txt[256];
    kg_space_of(&tu, &s);
    assert_int_equal(kg_space_format(&s, txt, sizeof txt), 0);
    assert_string_equal(txt, "block_m=64|128|256;stages=1|2");
    assert_int_equal(kg_space_parse(txt, &back, &e), 0);
    assert_memory_equal(&s, &back, sizeof s);
    assert_true(kg_space_size(&s) == 6);
    /* mixed radix, the last knob fastest */
    int64_t cfg[2];
    kg_space_config(&s, 0, cfg);
    assert_true(cfg[0] == 64 && cfg[1] == 1);
    kg_space_config(&s, 1, cfg);
    assert_true(cfg[0] == 64 && cfg[1] == 2);
    kg_space_config(&s, 5, cfg);
    assert_true(cfg[0] == 256 && cfg[1] == 2);
    assert_int_equal(kg_config_format(&s, cfg, txt, sizeof txt), 0);
    assert_string_equal(txt, "block_m=256,stages=2");
    char why[100];
    assert_true(kg_config_check(&s, cfg, 2, why, sizeof why));
    int64_t wrong[2] = {100, 1};
    assert_false(kg_config_check(&s, wrong, 2, why, sizeof why));
    assert_string_equal(why, "knob 'block_m' = 100 is not one of its values");
    assert_false(kg_config_check(&s, cfg, 1, why, sizeof why));
    /* every configuration once: each index decodes to a distinct config */
    uint64_t *idx;
    long n;
    assert_int_equal(kg_space_pick(&s, 0, 4096, 1, &idx, &n, &e), 0);
    assert_int_equal(n, 6);
    free(idx);
    /* a budget: distinct, sorted, the same for the same seed, another for another */
    kg_space big;
    assert_int_equal(kg_space_parse("a=1|2|3|4|5|6|7|8|9|10;b=1|2|3|4|5|6|7|8|9|10;c=1|2|3|4|5|6|7|8|9|10", &big, &e), 0);
    uint64_t *i1, *i2, *i3;
    long n1, n2, n3;
    assert_int_equal(kg_space_pick(&big, 50, 4096, 7, &i1, &n1, &e), 0);
    assert_int_equal(kg_space_pick(&big, 50, 4096, 7, &i2, &n2, &e), 0);
    assert_int_equal(kg_space_pick(&big, 50, 4096, 8, &i3, &n3, &e), 0);
    assert_int_equal(n1, 50);
    assert_memory_equal(i1, i2, sizeof *i1 * 50);
    assert_memory_not_equal(i1, i3, sizeof *i1 * 50);
    for (int k = 1; k < 50; k++)
        assert_true(i1[k - 1] < i1[k] && i1[k] < 1000);
    free(i1);
    free(i2);
    free(i3);
    /* too large without a budget; bad text */
    assert_int_equal(kg_space_pick(&big, 0, 100, 1, &idx, &n, &e), KG_EXIT_USAGE);
    assert_non_null(strstr(e.msg, "--budget"));
    kg_err x = {0, ""};
    assert_int_not_equal(kg_space_parse("a=1|x", &back, &x), 0);
    assert_int_not_equal(kg_space_parse("nodelim", &back, &x), 0);
    assert_int_not_equal(kg_space_parse("a=", &back, &x), 0);
}

/* --knob: a subspace keeps the named values in the knob's own order, every
 * configuration of it is one of the whole space's; each bad spec is named. */
static void restrict_space(void **state)
{
    (void)state;
    kg_space s, orig;
    kg_err e = {0, ""};
    assert_int_equal(kg_space_parse("block_m=64|128|256;group=1|8;warps=4|8", &s, &e), 0);
    orig = s;
    const char *ok[] = {"group=1", "block_m=256,64"};
    assert_int_equal(kg_space_restrict(&s, ok, 2, &e), 0);
    assert_true(kg_space_size(&s) == 4);
    assert_int_equal(s.n_values[0], 2);
    assert_true(s.values[0][0] == 64 && s.values[0][1] == 256); /* the knob's order, not the spec's */
    assert_true(s.n_values[1] == 1 && s.values[1][0] == 1);
    assert_int_equal(s.n_values[2], 2);
    char why[100];
    for (uint64_t i = 0; i < 4; i++) {
        int64_t cfg[3];
        kg_space_config(&s, i, cfg);
        assert_true(kg_config_check(&orig, cfg, 3, why, sizeof why));
        assert_true(cfg[1] == 1 && cfg[0] != 128);
    }
    struct {
        const char *spec, *msg;
    } bad[] = {
        {"warps", "expected KNOB=V[,V...]"},
        {"warps=", "expected KNOB=V[,V...]"},
        {"warps=,", "expected KNOB=V[,V...]"},
        {"=4", "expected KNOB=V[,V...]"},
        {"stages=3", "the space has no knob 'stages' (its knobs: block_m, group, warps)"},
        {"warps=2", "knob 'warps' does not take 2 (its values: 4,8)"},
        {"warps=4,x", "'x' is not an integer"},
        {"warps=4,4", "4 given twice"},
        {"warps=4,,8", "expected KNOB=V[,V...]"},
        {"warps=4,", "expected KNOB=V[,V...]"},
        {"warps=+4", "'+4' is not an integer"},
        {"warps= 4", "' 4' is not an integer"},
        {"warps=99999999999999999999", "is not an integer"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kg_space t = orig;
        kg_err x = {0, ""};
        if (kg_space_restrict(&t, &bad[i].spec, 1, &x) != KG_EXIT_USAGE || !strstr(x.msg, bad[i].msg))
            fail_msg("%s: '%s', want '%s'", bad[i].spec, x.msg, bad[i].msg);
    }
    /* a spec longer than the parser holds is refused, not cut */
    char longspec[600];
    memset(longspec, '0', sizeof longspec);
    memcpy(longspec, "warps=", 6);
    longspec[sizeof longspec - 2] = '8';
    longspec[sizeof longspec - 1] = '\0';
    {
        kg_space t = orig;
        kg_err x = {0, ""};
        const char *one = longspec;
        assert_int_equal(kg_space_restrict(&t, &one, 1, &x), KG_EXIT_USAGE);
        assert_non_null(strstr(x.msg, "longer than 511 bytes"));
    }
    kg_space t = orig;
    kg_err x = {0, ""};
    const char *twice[] = {"warps=4", "warps=8"};
    assert_int_equal(kg_space_restrict(&t, twice, 2, &x), KG_EXIT_USAGE);
    assert_non_null(strstr(x.msg, "knob 'warps' given twice"));
}

static void job_config(void **state)
{
    (void)state;
    kg_job a, b;
    kg_err e = {0, ""};
    kg_job_defaults(&a);
    a.mode = KG_JOB_KERNEL;
    strcpy(a.plugin, "/tmp/c.so");
    strcpy(a.kernel, "k");
    a.op = kg_op_find("relu");
    a.types = (kg_types){KG_FP16, KG_I64};
    a.shape = (kg_shape){2, {64, 1024}};
    a.n_config = 2;
    a.config[0] = 256;
    a.config[1] = -3;
    char *t = kg_job_to_json(&a);
    if (kg_job_from_json(t, &b, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(b.n_config, 2);
    assert_true(b.config[0] == 256 && b.config[1] == -3);
    free(t);
    const char *bad = "{\"proto\":\"kgate.worker/2\",\"mode\":\"kernel\",\"plugin\":\"/c.so\",\"kernel\":\"k\","
                      "\"op\":\"relu\",\"dtype\":\"fp16\",\"shape\":[4,4],\"config\":[1.5]}";
    assert_int_equal(kg_job_from_json(bad, &b, &e), KG_EXIT_USAGE);
    assert_non_null(strstr(e.msg, "config"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(validation),
        cmocka_unit_test(spaces),
        cmocka_unit_test(restrict_space),
        cmocka_unit_test(job_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
