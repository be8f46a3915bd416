/* Run-time loaded vendor libraries: every cuDNN function kgate calls
 * resolves in the installed libcudnn.so.9 (no GPU needed to load it); the
 * generated table of library paths is well formed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "catalog/op.h"
#include "gpu/baseline.h"
#include "gpu/cudnn_api.h"

static void cudnn_resolves(void **state)
{
    (void)state;
    kg_err e = {0, ""};
    const kg_cudnn_api *dn = kg_cudnn_load(&e);
    if (!dn)
        fail_msg("%s", e.msg);
    assert_true(dn->cudnnGetVersion() >= 90000);
    assert_ptr_equal(kg_cudnn_loaded(), dn);
    assert_string_equal(dn->cudnnGetErrorString(CUDNN_STATUS_SUCCESS), "CUDNN_STATUS_SUCCESS");
}

/* Every row of the generated table has its three functions and a known
 * library, no name is used twice (kg_baseline_find would silently return the
 * first), and every path is one an operator names (a path no operator names
 * is dead code, or a name the generator picked up by mistake). That every
 * name an operator gives is in the table, tests/test_op_parts.c checks. */
static void baseline_table_well_formed(void **state)
{
    (void)state;
    int n = 0;
    for (const kg_baseline *b; (b = kg_baseline_at(n)) != NULL; n++) {
        assert_non_null(b->name);
        assert_non_null(b->setup);
        assert_non_null(b->launch);
        assert_non_null(b->teardown);
        if (strcmp(b->library, "cuDNN") && strcmp(b->library, "cuBLASLt") && strcmp(b->library, "CUB"))
            fail_msg("path %s: unknown library %s", b->name, b->library);
        for (int j = 0; j < n; j++)
            if (strcmp(kg_baseline_at(j)->name, b->name) == 0)
                fail_msg("library path %s is in the table twice", b->name);
        assert_ptr_equal(kg_baseline_find(b->name), b);
        int named = 0;
        for (int i = 0; kg_ops[i] && !named; i++)
            for (int k = 0; k < KG_MAX_BASELINES && kg_ops[i]->baselines[k]; k++)
                named |= strcmp(kg_ops[i]->baselines[k], b->name) == 0;
        if (!named)
            fail_msg("library path %s is named by no operator (op->baselines)", b->name);
    }
    assert_null(kg_baseline_at(-1));
    assert_null(kg_baseline_at(n));
    assert_null(kg_baseline_find("no-such-path"));
    assert_null(kg_baseline_find(NULL));
    assert_true(n > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(cudnn_resolves),
                                       cmocka_unit_test(baseline_table_well_formed)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
