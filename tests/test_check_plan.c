/* The plan of kgate check and run: shapes parsed once a group, kernels
 * grouped by operator and dtypes, the job count, --sizes all, and shapes
 * that fit no selected kernel refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "app/check_int.h"

static kg_check_target tv[4];

/* two layer_norm fp16 kernels, a matmul fp16, a layer_norm bf16 */
static kg_check_targets targets(void)
{
    static const char *ops[] = {"layer_norm", "layer_norm", "matmul", "layer_norm"};
    static const kg_dtype types[] = {KG_FP16, KG_FP16, KG_FP16, KG_BF16};
    memset(tv, 0, sizeof tv);
    for (int i = 0; i < 4; i++) {
        tv[i].op = kg_op_find(ops[i]);
        tv[i].types.data = types[i];
        snprintf(tv[i].kernel, sizeof tv[i].kernel, "k%d", i);
    }
    kg_check_targets tg = {4, 4, tv};
    return tg;
}

static void options(kg_options *o, const char *const *shapes, int n)
{
    memset(o, 0, sizeof *o);
    o->n_shapes = n;
    for (int i = 0; i < n; i++)
        o->shape_texts[i] = shapes[i];
}

static void groups_in_run_order(void **state)
{
    (void)state;
    kg_check_targets tg = targets();
    kg_options o;
    kg_check_plan p;
    kg_err e = {0, ""};
    const char *sh[] = {"small", "medium"};
    options(&o, sh, 2);
    assert_int_equal(kg_check_plan_build(&o, &tg, &p, &e), 0);
    assert_int_equal(p.n_groups, 6); /* (ln fp16, matmul, ln bf16) at each shape */
    assert_int_equal(p.n_members, 8);
    assert_int_equal(p.jobs, 8 + 6);
    int leads[] = {0, 2, 3, 0, 2, 3}, sizes[] = {2, 1, 1, 2, 1, 1};
    for (int g = 0; g < 6; g++) {
        assert_int_equal(p.groups[g].lead, leads[g]);
        assert_int_equal(p.groups[g].n, sizes[g]);
        assert_int_equal(p.members[p.groups[g].first], leads[g]);
    }
    assert_int_equal(p.members[1], 1); /* the second layer_norm fp16 kernel follows the first */
    assert_int_equal(p.groups[1].shape.n, 3);
    assert_int_equal(p.groups[1].shape.d[0], 1024); /* matmul small: 1024^3 */
    assert_int_equal(p.groups[3].shape.d[0], 4096); /* layer_norm medium */
    kg_check_plan_free(&p);
    o.verify_only = 1;
    assert_int_equal(kg_check_plan_build(&o, &tg, &p, &e), 0);
    assert_int_equal(p.jobs, 8); /* no library jobs */
    kg_check_plan_free(&p);
}

static void a_shape_of_one_operator(void **state)
{
    (void)state;
    kg_check_targets tg = targets();
    kg_options o;
    kg_check_plan p;
    kg_err e = {0, ""};
    const char *sh[] = {"512x256x128"};
    options(&o, sh, 1);
    assert_int_equal(kg_check_plan_build(&o, &tg, &p, &e), 0);
    assert_int_equal(p.n_groups, 1); /* three extents: only matmul's */
    assert_int_equal(p.groups[0].lead, 2);
    assert_int_equal(p.groups[0].shape.d[2], 128);
    kg_check_plan_free(&p);
}

static void a_shape_that_fits_nothing(void **state)
{
    (void)state;
    kg_check_targets tg = targets();
    kg_options o;
    kg_check_plan p;
    kg_err e = {0, ""};
    const char *sh[] = {"small", "2x3x4x5x6"};
    options(&o, sh, 2);
    assert_int_equal(kg_check_plan_build(&o, &tg, &p, &e), KG_EXIT_USAGE);
    assert_non_null(strstr(e.msg, "shape '2x3x4x5x6' fits none"));
    assert_null(p.groups);
}

static void default_and_all_presets(void **state)
{
    (void)state;
    kg_check_targets tg = targets();
    kg_options o;
    kg_check_plan p;
    kg_err e = {0, ""};
    options(&o, NULL, 0);
    assert_int_equal(kg_check_plan_build(&o, &tg, &p, &e), 0);
    assert_int_equal(p.n_shapes, 1);
    assert_string_equal(p.shapes[0], "large");
    assert_int_equal(p.n_groups, 3);
    kg_check_plan_free(&p);
    o.all_presets = 1; /* layer_norm's small, medium, large, and matmul's xl besides */
    assert_int_equal(kg_check_plan_build(&o, &tg, &p, &e), 0);
    assert_int_equal(p.n_shapes, 4);
    assert_string_equal(p.shapes[3], "xl");
    assert_int_equal(p.n_groups, 3 * 3 + 1);
    kg_check_plan_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(groups_in_run_order),
        cmocka_unit_test(a_shape_of_one_operator),
        cmocka_unit_test(a_shape_that_fits_nothing),
        cmocka_unit_test(default_and_all_presets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
