/* Problems outside the catalog (catalog/problem.h): a description is
 * validated field by field, registers an operator that kg_op_find finds,
 * with fixed extents, the one shape its presets name and the work it says;
 * the table event and the job carry it through the worker protocol, a long
 * problem name included; a problem that changes between list and run is
 * refused. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "catalog/problem.h"
#include "protocol/proto.h"

#define SQUARE                                                                                          \
    "{\"name\":\"kb.1_Square_matrix_multiplication_\",\"family\":\"gemm\","                             \
    "\"inputs\":[{\"shape\":[4096,4096],\"dtype\":\"fp32\"},{\"shape\":[4096,4096],\"dtype\":\"fp32\"}]," \
    "\"outputs\":[{\"shape\":[4096,4096],\"dtype\":\"fp32\"}],\"flops\":137438953472,"                  \
    "\"bytes_read\":134217728,\"bytes_written\":67108864,\"roof\":\"fp32\",\"note\":\"KernelBench\"}"

static void registers_an_operator(void **state)
{
    (void)state;
    kg_problem p;
    kg_err e = {0, ""};
    const kg_op *op = NULL;
    assert_int_equal(kg_problem_parse(SQUARE, &p, &e), 0);
    assert_int_equal(kg_problem_register(&p, &op, &e), 0);
    assert_ptr_equal(kg_op_find("kb.1_Square_matrix_multiplication_"), op);
    assert_ptr_equal(kg_problem_of(op), kg_problem_of(kg_op_find(p.name)));
    assert_null(kg_problem_of(kg_op_find("softmax")));
    assert_int_equal(op->n_inputs, 2);
    assert_int_equal(op->n_outputs, 1);
    assert_true(kg_op_has_dtype(op, KG_FP32));
    assert_false(kg_op_has_dtype(op, KG_FP16));
    assert_int_equal(op->family, KG_FAMILY_GEMM);
    assert_int_equal(op->unit, KG_UNIT_FP32);
    /* every preset names the problem's one shape: its output's extents */
    kg_shape s;
    char txt[64];
    assert_int_equal(kg_shape_parse(op, "large", &s, &e), 0);
    assert_string_equal(kg_shape_format(&s, txt, sizeof txt), "4096x4096");
    assert_int_equal(kg_shape_parse(op, "small", &s, &e), 0);
    assert_string_equal(kg_shape_format(&s, txt, sizeof txt), "4096x4096");
    /* fixed extents, whatever the shape */
    int64_t ext[KG_MAX_RANK];
    kg_shape other = {2, {7, 9}};
    assert_int_equal(kg_tensor_extents(&op->in[1], &other, ext), 4096 * 4096);
    kg_work w;
    kg_types t = {KG_FP32, KG_I64};
    kg_op_work(op, &s, t, &w);
    assert_true(w.flops == 137438953472.0);
    assert_true(w.bytes == 134217728.0 + 67108864.0);
    /* the same description again: the same operator */
    const kg_op *again = NULL;
    assert_int_equal(kg_problem_register(&p, &again, &e), 0);
    assert_ptr_equal(again, op);
    /* the same name, other work: refused */
    p.flops *= 2;
    assert_int_not_equal(kg_problem_register(&p, &again, &e), 0);
    assert_int_equal(e.code, KG_EXIT_CANDIDATE);
    assert_non_null(strstr(e.msg, "changed"));
}

static void bad_descriptions(void **state)
{
    (void)state;
    static const struct {
        const char *json, *want;
    } cases[] = {
        {"[]", "not an object"},
        {"{\"name\":\"softmax\"}", "catalog operator"},
        {"{\"name\":\"has space\"}", "'name'"},
        {"{\"name\":\"p\",\"inputs\":[],\"outputs\":[]}", "inputs"},
        {"{\"name\":\"p\",\"inputs\":[{\"shape\":[0],\"dtype\":\"fp32\"}],\"outputs\":[]}", "extent 0"},
        {"{\"name\":\"p\",\"inputs\":[{\"shape\":[4],\"dtype\":\"fp64\"}],\"outputs\":[]}", "dtype 'fp64'"},
        {"{\"name\":\"p\",\"inputs\":[{\"shape\":[1,1,1,1,1,1,1],\"dtype\":\"fp32\"}],\"outputs\":[]}", "rank 7"},
        {"{\"name\":\"p\",\"inputs\":[{\"shape\":[4],\"dtype\":\"fp32\"}],\"outputs\":[{\"shape\":[4],"
         "\"dtype\":\"fp16\"}],\"flops\":0,\"bytes_read\":1,\"bytes_written\":1,\"roof\":\"fp32\"}",
         "share one dtype"},
        {"{\"name\":\"p\",\"inputs\":[{\"shape\":[4],\"dtype\":\"fp32\"}],\"outputs\":[{\"shape\":[4],"
         "\"dtype\":\"fp32\"}],\"flops\":-1,\"bytes_read\":1,\"bytes_written\":1,\"roof\":\"fp32\"}",
         "'flops'"},
        {"{\"name\":\"p\",\"inputs\":[{\"shape\":[4],\"dtype\":\"fp32\"}],\"outputs\":[{\"shape\":[4],"
         "\"dtype\":\"fp32\"}],\"flops\":1,\"bytes_read\":0,\"bytes_written\":0,\"roof\":\"fp32\"}",
         "no essential bytes"},
        {"{\"name\":\"p\",\"inputs\":[{\"shape\":[4],\"dtype\":\"fp32\"}],\"outputs\":[{\"shape\":[4],"
         "\"dtype\":\"fp32\"}],\"flops\":1,\"bytes_read\":1,\"bytes_written\":1,\"roof\":\"gpu\"}",
         "'roof'"},
        {"{\"name\":\"p\",\"inputs\":[{\"shape\":[4],\"dtype\":\"fp32\"}],\"outputs\":[{\"shape\":[4],"
         "\"dtype\":\"fp32\"}],\"flops\":1,\"bytes_read\":16,\"bytes_written\":17,\"roof\":\"fp32\"}",
         "more than the outputs hold (16 bytes)"},
        {"{\"name\":\"p\",\"family\":\"other\",\"inputs\":[{\"shape\":[4],\"dtype\":\"fp32\"}],\"outputs\":[]}",
         "'family'"},
        {"{\"name\":\"p\",\"inputs\":[{\"shape\":[4],\"dtype\":\"int64\"}],\"outputs\":[{\"shape\":[4],"
         "\"dtype\":\"int64\"}],\"flops\":1,\"bytes_read\":1,\"bytes_written\":1,\"roof\":\"fp32\"}",
         "no float tensor"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kg_problem p;
        kg_err e = {0, ""};
        assert_int_equal(kg_problem_parse(cases[i].json, &p, &e), KG_EXIT_CANDIDATE);
        if (!strstr(e.msg, cases[i].want))
            fail_msg("case %zu: '%s' lacks '%s'", i, e.msg, cases[i].want);
    }
}

/* The table event brings the problem to the supervisor, which registers it
 * before it checks the kernels' operator (a 35-character name once failed:
 * the table's operator field was 32 bytes). */
static void table_event_carries_the_problem(void **state)
{
    (void)state;
    char line[4096];
    snprintf(line, sizeof line,
             "{\"ev\":\"table\",\"problem\":%s,\"kernels\":[{\"name\":\"ModelNew\",\"op\":"
             "\"kb.1_Square_matrix_multiplication_\",\"dtype\":\"fp32\",\"index_dtype\":\"int64\","
             "\"summary\":\"s\",\"scalars\":\"\"}]}",
             SQUARE);
    kg_event ev;
    kg_err e = {0, ""};
    memset(&ev, 0, sizeof ev);
    assert_int_equal(kg_event_parse(line, &ev, &e), 0);
    assert_non_null(ev.problem);
    assert_string_equal(ev.entries[0].op, "kb.1_Square_matrix_multiplication_");
    char *back = kg_event_to_json(&ev);
    assert_non_null(strstr(back, "\"problem\""));
    free(back);
    kg_event_free(&ev);
    /* a kernel of a problem the event does not bring names no operator */
    memset(&ev, 0, sizeof ev);
    assert_int_not_equal(kg_event_parse("{\"ev\":\"table\",\"kernels\":[{\"name\":\"k\",\"op\":\"kb.nope\","
                                        "\"dtype\":\"fp32\",\"index_dtype\":\"int64\",\"summary\":\"\","
                                        "\"scalars\":\"\"}]}",
                                        &ev, &e),
                         0);
    kg_event_free(&ev);
}

static void job_carries_the_problem(void **state)
{
    (void)state;
    kg_problem p;
    kg_err e = {0, ""};
    const kg_op *op;
    assert_int_equal(kg_problem_parse(SQUARE, &p, &e), 0);
    assert_int_equal(kg_problem_register(&p, &op, &e), 0);
    kg_job a, b;
    kg_job_defaults(&a);
    a.mode = KG_JOB_KERNEL;
    strcpy(a.plugin, "/tmp/cand.py");
    strcpy(a.kernel, "ModelNew");
    a.op = op;
    a.types = (kg_types){KG_FP32, KG_I64};
    assert_int_equal(kg_shape_parse(op, "large", &a.shape, &e), 0);
    char *text = kg_job_to_json(&a);
    assert_non_null(strstr(text, "\"problem\""));
    assert_int_equal(kg_job_from_json(text, &b, &e), 0);
    assert_ptr_equal(b.op, op);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registers_an_operator),
        cmocka_unit_test(bad_descriptions),
        cmocka_unit_test(table_event_carries_the_problem),
        cmocka_unit_test(job_carries_the_problem),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
