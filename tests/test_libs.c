/* Run-time loaded vendor libraries: every cuDNN function kgate calls
 * resolves in the installed libcudnn.so.9 (no GPU needed to load it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(cudnn_resolves)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
