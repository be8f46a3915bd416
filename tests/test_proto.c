/* The worker protocol (docs/worker.md): jobs and events survive a round
 * trip through JSON, and malformed or forged input is refused with a
 * message naming the field. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "protocol/proto.h"

static void job_round_trip(void **state)
{
    (void)state;
    kg_job a, b;
    kg_err e = {0, ""};
    kg_job_defaults(&a);
    a.mode = KG_JOB_KERNEL;
    strcpy(a.plugin, "/tmp/cand.so");
    strcpy(a.kernel, "layer_norm_v2_bf16");
    a.op = kg_op_find("layer_norm");
    a.types.data = KG_BF16;
    a.types.index = KG_I32;
    a.shape = (kg_shape){2, {8192, 4096}};
    a.extra[0] = (kg_shape){2, {37, 1029}};
    a.extra[1] = (kg_shape){2, {1, 3}};
    a.n_extra = 2;
    kg_scalars_default(a.op, &a.scalars);
    a.scalars.v[0].value = 1e-6;
    a.flush = KG_FLUSH_MEMSET;
    a.hot = 1;
    a.trials = 7;
    a.edge = 0;
    a.device = 1;
    a.verify_only = 1;
    a.sandbox = 1;
    strcpy(a.scratch, "/tmp/kgate-worker-abc");
    a.budget_s = 120;
    assert_true(a.patched_max_s == KG_PATCHED_MAX_DEFAULT);
    a.patched_max_s = 0.25;
    a.seed = 18446744073709551615ull; /* beyond 2^53: must not round */
    a.stop.max_noise = 0.01;
    a.stop.min_samples = 12;
    a.stop.max_samples = 300;
    char *text = kg_job_to_json(&a);
    assert_non_null(text);
    assert_int_equal(kg_job_from_json(text, &b, &e), 0);
    free(text);
    assert_int_equal(b.mode, KG_JOB_KERNEL);
    assert_string_equal(b.plugin, a.plugin);
    assert_string_equal(b.kernel, a.kernel);
    assert_ptr_equal(b.op, a.op);
    assert_int_equal(b.types.data, KG_BF16);
    assert_int_equal(b.types.index, KG_I32);
    assert_int_equal(b.shape.n, 2);
    assert_true(b.shape.d[0] == 8192 && b.shape.d[1] == 4096);
    assert_int_equal(b.n_extra, 2);
    assert_true(b.extra[0].d[0] == 37 && b.extra[0].d[1] == 1029 && b.extra[1].d[1] == 3);
    assert_true(b.scalars.n == 1 && b.scalars.v[0].value == 1e-6);
    assert_string_equal(b.scalars.v[0].name, "eps");
    assert_int_equal(b.flush, KG_FLUSH_MEMSET);
    assert_true(b.hot && b.trials == 7 && !b.edge && b.device == 1 && b.verify_only);
    assert_true(b.sandbox && b.budget_s == 120);
    assert_true(b.patched_max_s == 0.25);
    assert_string_equal(b.scratch, "/tmp/kgate-worker-abc");
    assert_true(b.seed == a.seed);
    assert_true(b.stop.max_noise == 0.01 && b.stop.min_samples == 12 && b.stop.max_samples == 300);
    assert_true(b.stop.min_gpu_s == a.stop.min_gpu_s && b.stop.max_wall_s == a.stop.max_wall_s);
}

static void bad_jobs(void **state)
{
    (void)state;
    struct {
        const char *text, *msg;
    } cases[] = {
        {"[]", "not a JSON object"},
        {"{\"mode\":\"kernel\"}", "missing 'proto'"},
        {"{\"proto\":\"kgate.worker/9\",\"mode\":\"list\",\"plugin\":\"x\"}", "this worker speaks"},
        {"{\"proto\":\"kgate.worker/2\",\"mode\":\"dance\"}", "unknown mode"},
        {"{\"proto\":\"kgate.worker/2\",\"mode\":\"list\"}", "missing 'plugin'"},
        {"{\"proto\":\"kgate.worker/2\",\"mode\":\"library\",\"op\":\"conv9\"}", "unknown operator"},
        {"{\"proto\":\"kgate.worker/2\",\"mode\":\"library\",\"op\":\"softmax\",\"dtype\":\"int64\"}",
         "does not take dtype"},
        {"{\"proto\":\"kgate.worker/2\",\"mode\":\"library\",\"op\":\"softmax\",\"dtype\":\"fp16\","
         "\"shape\":[1,2,3]}",
         "must hold 2 extents"},
        {"{\"proto\":\"kgate.worker/2\",\"mode\":\"library\",\"op\":\"softmax\",\"dtype\":\"fp16\","
         "\"shape\":[8,8],\"extra_shapes\":[[1,2],[3]]}",
         "must hold 2 extents"},
        {"{\"proto\":\"kgate.worker/2\",\"mode\":\"library\",\"op\":\"softmax\",\"dtype\":\"fp16\","
         "\"shape\":[1,0.5]}",
         "whole numbers"},
        {"{\"proto\":\"kgate.worker/2\",\"mode\":\"library\",\"op\":\"softmax\",\"dtype\":\"fp16\","
         "\"shape\":[8,8],\"scalars\":{\"eps\":1}}",
         "scalar 'eps'"},
        {"{\"proto\":\"kgate.worker/2\",\"mode\":\"library\",\"op\":\"softmax\",\"dtype\":\"fp16\","
         "\"shape\":[8,8],\"trials\":0}",
         "'trials' must be a number in [1, 1000]"},
        {"{\"proto\":\"kgate.worker/2\",\"mode\":\"library\",\"op\":\"softmax\",\"dtype\":\"fp16\","
         "\"shape\":[8,8],\"seed\":\"12x\"}",
         "seed '12x'"},
        {"{\"proto\":\"kgate.worker/2\",\"mode\":\"library\",\"op\":\"softmax\",\"dtype\":\"fp16\","
         "\"shape\":[8,8],\"patched_max\":-1}",
         "'patched_max' must be a number in [0, 3600]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kg_job j;
        kg_err e = {0, ""};
        int rc = kg_job_from_json(cases[i].text, &j, &e);
        if (rc != KG_EXIT_USAGE || !strstr(e.msg, cases[i].msg))
            fail_msg("case %zu: rc %d '%s', want '%s'", i, rc, e.msg, cases[i].msg);
    }
}

static kg_event rt(const kg_event *a)
{
    kg_event b;
    kg_err e = {0, ""};
    char *text = kg_event_to_json(a);
    assert_non_null(text);
    if (kg_event_parse(text, &b, &e))
        fail_msg("%s did not parse back: %s", text, e.msg);
    free(text);
    return b;
}

static void event_round_trips(void **state)
{
    (void)state;
    kg_event a, b;
    memset(&a, 0, sizeof a);
    a.kind = KG_EV_HELLO;
    strcpy(a.device, "NVIDIA H200");
    a.pid = 4242;
    b = rt(&a);
    assert_int_equal(b.kind, KG_EV_HELLO);
    assert_string_equal(b.device, "NVIDIA H200");
    assert_int_equal(b.pid, 4242);

    memset(&a, 0, sizeof a);
    a.kind = KG_EV_CHECK;
    a.subject = KG_SUBJ_LIB;
    strcpy(a.path, "cudnn-softmax");
    strcpy(a.what, "trial 1");
    a.pass = 1;
    a.rel_l2 = 1.5e-4;
    a.max_abs_err = NAN; /* not finite: travels as null */
    strcpy(a.text, "all 4 elements within tolerance");
    b = rt(&a);
    assert_int_equal(b.subject, KG_SUBJ_LIB);
    assert_string_equal(b.path, "cudnn-softmax");
    assert_true(b.pass && b.rel_l2 == 1.5e-4 && isnan(b.max_abs_err));
    assert_string_equal(b.text, a.text);

    memset(&a, 0, sizeof a);
    a.kind = KG_EV_SUM;
    a.subject = KG_SUBJ_KERNEL;
    strcpy(a.name, "time/gpu/median");
    strcpy(a.unit, "s");
    a.value = 6.758e-5;
    b = rt(&a);
    assert_string_equal(b.name, "time/gpu/median");
    assert_string_equal(b.unit, "s");
    assert_true(b.value == 6.758e-5);

    memset(&a, 0, sizeof a);
    a.kind = KG_EV_TIMING;
    a.subject = KG_SUBJ_BEST;
    strcpy(a.path, "softmax_v2_fp16");
    strcpy(a.stop, "converged");
    a.escaped = 1;
    a.throttled = 3;
    b = rt(&a);
    assert_true(b.escaped && b.throttled == 3 && b.subject == KG_SUBJ_BEST);
    assert_string_equal(b.stop, "converged");

    memset(&a, 0, sizeof a);
    a.kind = KG_EV_TABLE;
    kg_table_entry t = {"k1", "layer_norm", "bf16", "int64", "a kernel", "eps", "block=64|128;warps=4"};
    a.entries = &t;
    a.n_entries = 1;
    b = rt(&a);
    assert_int_equal(b.n_entries, 1);
    assert_string_equal(b.entries[0].scalars, "eps");
    assert_string_equal(b.entries[0].space, "block=64|128;warps=4");
    kg_event_free(&b);

    /* the kernel's unsupported shape travels in the done event, with the nonce */
    for (int u = 0; u <= 1; u++) {
        memset(&a, 0, sizeof a);
        a.kind = KG_EV_DONE;
        strcpy(a.nonce, "0123456789abcdef");
        a.unsupported = u;
        b = rt(&a);
        assert_string_equal(b.nonce, a.nonce);
        assert_int_equal(b.unsupported, u);
    }

    memset(&a, 0, sizeof a);
    a.kind = KG_EV_FAIL;
    a.subject = KG_SUBJ_KERNEL;
    strcpy(a.fail_kind, "crash");
    strcpy(a.text, "an illegal memory access");
    b = rt(&a);
    assert_string_equal(b.fail_kind, "crash");

    memset(&a, 0, sizeof a);
    a.kind = KG_EV_DONE;
    a.code = 5;
    strcpy(a.nonce, "00ff00ff00ff00ff00ff00ff00ff00ff");
    b = rt(&a);
    assert_int_equal(b.code, 5);
    assert_string_equal(b.nonce, a.nonce);

    memset(&a, 0, sizeof a);
    a.kind = KG_EV_ERROR;
    a.code = 4;
    strcpy(a.text, "x.so: not a kgate candidate");
    strcpy(a.nonce, "0123456789abcdef0123456789abcdef");
    b = rt(&a);
    assert_int_equal(b.code, 4);
    assert_string_equal(b.text, a.text);
    assert_string_equal(b.nonce, a.nonce);

    /* a text is one printable line however it was written */
    kg_event c;
    kg_err e = {0, ""};
    assert_int_equal(kg_event_parse("{\"ev\":\"fail\",\"subject\":\"kernel\",\"kind\":\"crash\","
                                     "\"msg\":\"line one\\nFAKE: line two\\t\\u001b[31m\"}", &c, &e), 0);
    assert_string_equal(c.text, "line one FAKE: line two ?[31m");
    kg_event_free(&c);
}

/* A kernel's facts and the diag summary survive the wire; bad facts are
 * refused with the field named. */
static void diag_events(void **state)
{
    (void)state;
    kg_kfacts k;
    kg_kfacts_init(&k);
    snprintf(k.name, sizeof k.name, "_Z12ln_v2_kernelI6__halfEvPKT_");
    k.launches = 2, k.regs = 40, k.static_smem = 1024, k.dyn_smem = 0, k.local_bytes = 0;
    k.grid[0] = 8192, k.grid[1] = k.grid[2] = 1, k.block[0] = 256, k.block[1] = k.block[2] = 1;
    k.occupancy = 0.75, k.waves = 7.75, k.sms = 132, k.max_blocks_per_sm = 6;
    snprintf(k.limiter, sizeof k.limiter, "registers");
    k.sass.found = 1, k.sass.ldg_128 = 3, k.sass.total = 400;
    kg_kfacts_set(&k, "dram__bytes_read.sum", 1.5e8);
    kg_kfacts_set(&k, "lts__t_sector_hit_rate.pct", 51.5);
    kg_event a, b;
    memset(&a, 0, sizeof a);
    a.kind = KG_EV_KERNEL;
    a.subject = KG_SUBJ_KERNEL;
    a.kf = &k;
    char *line = kg_event_to_json(&a);
    kg_err e = {0, ""};
    assert_int_equal(kg_event_parse(line, &b, &e), 0);
    free(line);
    assert_non_null(b.kf);
    assert_string_equal(b.kf->name, k.name);
    assert_int_equal(b.kf->launches, 2);
    assert_int_equal(b.kf->regs, 40);
    assert_true(b.kf->grid[0] == 8192 && b.kf->block[0] == 256);
    assert_string_equal(b.kf->limiter, "registers");
    assert_int_equal(b.kf->sass.ldg_128, 3);
    assert_true(kg_kfacts_metric(b.kf, "dram__bytes_read.sum") == 1.5e8);
    assert_true(kg_kfacts_metric(b.kf, "lts__t_sector_hit_rate.pct") == 51.5);
    kg_event_free(&b);

    memset(&a, 0, sizeof a);
    a.kind = KG_EV_DIAG;
    a.subject = KG_SUBJ_KERNEL;
    snprintf(a.text, sizeof a.text, "no SASS: cuobjdump not found");
    a.passes = 3, a.launches = 4, a.busy_s = 1e-4, a.wall_s = 0.8;
    line = kg_event_to_json(&a);
    assert_int_equal(kg_event_parse(line, &b, &e), 0);
    free(line);
    assert_int_equal(b.passes, 3);
    assert_int_equal(b.launches, 4);
    assert_true(b.busy_s == 1e-4 && b.wall_s == 0.8);
    assert_string_equal(b.text, a.text);

    const struct {
        const char *line, *msg;
    } bad[] = {
        {"{\"ev\":\"kernel\",\"subject\":\"lib\",\"path\":\"x\",\"facts\":{}}", "kernel under test only"},
        {"{\"ev\":\"kernel\",\"subject\":\"kernel\",\"facts\":3}", "not an object"},
        {"{\"ev\":\"kernel\",\"subject\":\"kernel\",\"facts\":{\"name\":\"k\"}}", "'launches'"},
        {"{\"ev\":\"diag\",\"subject\":\"kernel\",\"note\":\"\",\"passes\":-1,\"launches\":0,"
         "\"busy_s\":0,\"wall_s\":0}",
         "'passes'"},
        {"{\"ev\":\"diag\",\"subject\":\"kernel\",\"note\":\"\",\"passes\":1,\"launches\":0,"
         "\"busy_s\":-5,\"wall_s\":0}",
         "out of range"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kg_err e2 = {0, ""};
        int rc = kg_event_parse(bad[i].line, &b, &e2);
        if (rc != KG_EXIT_FAIL || !strstr(e2.msg, bad[i].msg))
            fail_msg("%s: rc %d '%s', want '%s'", bad[i].line, rc, e2.msg, bad[i].msg);
    }
    /* a metric name that is not one, and a value that is not finite */
    k.n_m = 0;
    kg_kfacts_set(&k, "a b", 1);
    memset(&a, 0, sizeof a);
    a.kind = KG_EV_KERNEL;
    a.subject = KG_SUBJ_KERNEL;
    a.kf = &k;
    line = kg_event_to_json(&a);
    kg_err e3 = {0, ""};
    assert_int_equal(kg_event_parse(line, &b, &e3), KG_EXIT_FAIL);
    assert_non_null(strstr(e3.msg, "not a metric name"));
    free(line);
}

static void bad_events(void **state)
{
    (void)state;
    struct {
        const char *line, *msg;
    } cases[] = {
        {"not json", "not a JSON object"},
        {"{\"ev\":\"verdict\"}", "unknown event 'verdict'"},
        {"{\"ev\":3}", "'ev' is missing or not a string"},
        {"{\"ev\":\"hello\",\"proto\":\"kgate.worker/0\",\"device\":\"x\",\"pid\":1}", "worker speaks"},
        {"{\"ev\":\"table\",\"kernels\":[{\"op\":\"softmax\"}]}", "'name' is missing"},
        {"{\"ev\":\"table\",\"kernels\":[{\"name\":\"k\",\"op\":\"conv9\",\"dtype\":\"fp16\","
         "\"index_dtype\":\"int64\",\"summary\":\"\",\"scalars\":\"\"}]}",
         "no catalog operator"},
        {"{\"ev\":\"sum\",\"subject\":\"judge\",\"name\":\"x\",\"value\":1}", "unknown subject"},
        {"{\"ev\":\"sum\",\"subject\":\"kernel\",\"name\":\"a b\",\"value\":1}", "bad summary name"},
        {"{\"ev\":\"sum\",\"subject\":\"kernel\",\"name\":\"t\",\"value\":null}", "finite number"},
        {"{\"ev\":\"sum\",\"subject\":\"lib\",\"name\":\"t\",\"value\":1}", "'path' is missing"},
        {"{\"ev\":\"sum\",\"subject\":\"kernel\",\"name\":\"t\",\"value\":1,\"unit\":\"m s\"}", "bad unit 'm s'"},
        {"{\"ev\":\"sum\",\"subject\":\"kernel\",\"name\":\"t\",\"value\":1,\"unit\":\"a-very-long-unit\"}",
         "'unit' is longer than"},
        {"{\"ev\":\"error\",\"code\":-9,\"msg\":\"x\"}", "'code' is not a whole number in [3, 6]"},
        {"{\"ev\":\"fail\",\"subject\":\"kernel\",\"kind\":\"meh\",\"msg\":\"x\"}", "unknown failure kind"},
        {"{\"ev\":\"unsupported\",\"subject\":\"kernel\",\"msg\":\"x\"}", "only a library path"},
        {"{\"ev\":\"done\",\"code\":1.5}", "whole number"},
        /* fuzz_event's first find: a pid no long holds (undefined behaviour) */
        {"{\"ev\":\"hello\",\"proto\":\"kgate.worker/2\",\"device\":\"I\",\"pid\":6555555555555555555555}",
         "not a process id"},
        {"{\"ev\":\"done\",\"code\":0}", "'nonce' is missing"},
        {"{\"ev\":\"done\",\"code\":0,\"nonce\":\"ab\",\"unsupported\":1}", "'unsupported' is missing or not a boolean"},
        /* an error stops the command: only the worker's own, with the nonce */
        {"{\"ev\":\"error\",\"code\":5,\"msg\":\"no CUDA GPU\"}", "'nonce' is missing"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kg_event ev;
        kg_err e = {0, ""};
        int rc = kg_event_parse(cases[i].line, &ev, &e);
        if (rc != KG_EXIT_FAIL || !strstr(e.msg, cases[i].msg))
            fail_msg("%s: rc %d '%s', want '%s'", cases[i].line, rc, e.msg, cases[i].msg);
    }
    /* a string longer than its field is refused, not truncated */
    char line[2400];
    memset(line, 0, sizeof line);
    strcpy(line, "{\"ev\":\"fail\",\"subject\":\"kernel\",\"kind\":\"crash\",\"msg\":\"");
    memset(line + strlen(line), 'x', 1100);
    strcat(line, "\"}");
    kg_event ev;
    kg_err e = {0, ""};
    assert_int_equal(kg_event_parse(line, &ev, &e), KG_EXIT_FAIL);
    assert_non_null(strstr(e.msg, "longer than"));
}

/* A table of KG_TABLE_MAX kernels with every field the ABI lets a candidate
 * fill at its longest (names of 95 bytes, summaries of 255 quotes, each
 * escaped as two bytes) is one line past KG_EVENT_LINE_MAX but within
 * KG_EVENT_MAX, and parses back whole; a line as long that is not a table
 * is refused. */
static void largest_table(void **state)
{
    (void)state;
    kg_event a, b;
    memset(&a, 0, sizeof a);
    a.kind = KG_EV_TABLE;
    a.n_entries = KG_TABLE_MAX;
    a.entries = calloc(KG_TABLE_MAX, sizeof *a.entries);
    assert_non_null(a.entries);
    for (int i = 0; i < KG_TABLE_MAX; i++) {
        kg_table_entry *t = &a.entries[i];
        snprintf(t->name, sizeof t->name, "k%04d_", i);
        memset(t->name + 6, 'n', sizeof t->name - 7);
        strcpy(t->op, "layer_norm");
        strcpy(t->dtype, "fp16");
        strcpy(t->index_dtype, "int64");
        memset(t->summary, '"', sizeof t->summary - 1);
        memset(t->scalars, 's', sizeof t->scalars - 1);
    }
    char *text = kg_event_to_json(&a);
    assert_non_null(text);
    size_t len = strlen(text);
    if (!(len > KG_EVENT_LINE_MAX && len <= KG_EVENT_MAX))
        fail_msg("the largest table is %zu bytes, not within (%d, %d]", len, KG_EVENT_LINE_MAX, KG_EVENT_MAX);
    b = rt(&a);
    assert_int_equal(b.n_entries, KG_TABLE_MAX);
    assert_string_equal(b.entries[KG_TABLE_MAX - 1].name, a.entries[KG_TABLE_MAX - 1].name);
    assert_string_equal(b.entries[7].summary, a.entries[7].summary);
    kg_event_free(&b);
    /* the same length as another event: refused */
    char *fail = malloc(len + 64);
    assert_non_null(fail);
    int k = snprintf(fail, len + 64, "{\"ev\":\"fail\",\"subject\":\"kernel\",\"kind\":\"crash\",\"msg\":\"");
    memset(fail + k, 'x', len - (size_t)k);
    strcpy(fail + len, "\"}");
    kg_err e = {0, ""};
    assert_int_equal(kg_event_parse(fail, &b, &e), KG_EXIT_FAIL);
    assert_non_null(strstr(e.msg, "only a table may be"));
    free(fail);
    free(text);
    kg_event_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(job_round_trip),
        cmocka_unit_test(bad_jobs),
        cmocka_unit_test(event_round_trips),
        cmocka_unit_test(bad_events),
        cmocka_unit_test(diag_events),
        cmocka_unit_test(largest_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
