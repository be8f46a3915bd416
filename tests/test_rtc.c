/* CUDA source candidates without a GPU: the launch description's rule
 * (catalog/rtc_desc.h) and NVRTC compiling the test sources for sm_90 (NVRTC
 * needs no GPU): a good source gives a cubin, a broken one NVRTC's error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "catalog/rtc_desc.h"
#include "gpu/provider_rtc.h"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = malloc(1 << 20);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

static void the_test_source_parses(void **state)
{
    (void)state;
    size_t len;
    char *src = slurp(KG_TEST_SRC "/rtc/relu.cu", &len);
    kg_rtc_kernel k[KG_RTC_MAX_KERNELS];
    int n = 0;
    kg_err e = {0, ""};
    assert_int_equal(kg_rtc_parse(src, len, k, &n, &e), 0);
    assert_int_equal(n, 2);
    assert_string_equal(k[0].name, "rtc_relu_fp16");
    assert_string_equal(k[0].function, "relu_fp16");
    assert_int_equal(k[0].block, 256);
    assert_int_equal(k[0].grid_mode, 1);
    assert_int_equal(k[0].n_args, 3);
    assert_int_equal(k[0].args[0].kind, KG_RTC_IN);
    assert_int_equal(k[0].args[1].kind, KG_RTC_OUT);
    assert_int_equal(k[0].args[2].kind, KG_RTC_NUMEL);
    unsigned g[3];
    assert_int_equal(kg_rtc_grid(&k[0], 1000, 1, g), 0);
    assert_true(g[0] == 4 && g[1] == 1 && g[2] == 1); /* ceil(1000 / 256) */
    assert_int_equal(kg_rtc_grid(&k[1], 1000, 1, g), 0);
    assert_true(g[0] == 1024);
    free(src);
}

static void arguments_and_fields_are_checked(void **state)
{
    (void)state;
    static const struct {
        const char *text, *says;
    } bad[] = {
        {"no comment at all", "no /* kgate:"},
        {"/* kgate: {\"name\": 1} */", "JSON array"},
        {"/* kgate: [] */", "JSON array"},
        {"/* kgate: [{\"op\": \"relu\", \"dtype\": \"fp16\", \"function\": \"f\", \"block\": 1, \"grid\": \"rows\", "
         "\"args\": []}] */", "no \"name\""},
        {"/* kgate: [{\"name\": \"a b\", \"op\": \"relu\", \"dtype\": \"fp16\", \"function\": \"f\", \"block\": 1, "
         "\"grid\": \"rows\", \"args\": []}] */", "identifiers"},
        {"/* kgate: [{\"name\": \"a\", \"op\": \"relu\", \"dtype\": \"fp16\", \"function\": \"f\", \"block\": 2048, "
         "\"grid\": \"rows\", \"args\": []}] */", "1 to 1024"},
        {"/* kgate: [{\"name\": \"a\", \"op\": \"relu\", \"dtype\": \"fp16\", \"function\": \"f\", \"block\": 64, "
         "\"grid\": [1, 0, 1], \"args\": []}] */", "positive integers"},
        {"/* kgate: [{\"name\": \"a\", \"op\": \"relu\", \"dtype\": \"fp16\", \"function\": \"f\", \"block\": 64, "
         "\"grid\": \"everything\", \"args\": []}] */", "\"grid\" must be"},
        {"/* kgate: [{\"name\": \"a\", \"op\": \"relu\", \"dtype\": \"fp16\", \"function\": \"f\", \"block\": 64, "
         "\"grid\": \"rows\", \"args\": [\"in9\"]}] */", "argument 1"},
        {"/* kgate: [{\"name\": \"a\", \"op\": \"relu\", \"dtype\": \"fp16\", \"function\": \"f\", \"block\": 64, "
         "\"grid\": \"rows\", \"args\": [\"in0\", \"dim:in0\"]}] */", "argument 2"},
        {"/* kgate: [{\"name\": \"a\", \"op\": \"relu\", \"dtype\": \"fp16\", \"function\": \"f\", \"block\": 64, "
         "\"grid\": \"rows\", \"args\": [], \"smem\": 999999}] */", "smem"},
        {"/* kgate: [{\"name\": \"a\", \"op\": \"relu\", \"dtype\": \"fp16\", \"function\": \"f\", \"block\": 64, "
         "\"grid\": \"rows\", \"args\": []}, {\"name\": \"a\", \"op\": \"relu\", \"dtype\": \"fp16\", \"function\": "
         "\"g\", \"block\": 64, \"grid\": \"rows\", \"args\": []}] */", "two kernels"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kg_rtc_kernel k[KG_RTC_MAX_KERNELS];
        int n = 0;
        kg_err e = {0, ""};
        int rc = kg_rtc_parse(bad[i].text, strlen(bad[i].text), k, &n, &e);
        if (rc != KG_EXIT_CANDIDATE || !strstr(e.msg, bad[i].says))
            fail_msg("case %zu: rc %d, '%s' (want '%s')", i, rc, e.msg, bad[i].says);
    }
    /* every argument form */
    const char *good = "/* kgate: [{\"name\": \"a\", \"op\": \"layer_norm\", \"dtype\": \"bf16\", \"function\": \"f\", "
                       "\"block\": 128, \"grid\": \"rows\", \"args\": [\"in0\", \"in2\", \"out0\", \"rows\", \"cols\", "
                       "\"dim:in0:1\", \"dim:out0:0\", \"scalar:eps\", \"iscalar:dim\", \"numel\"], \"scalars\": \"eps\", "
                       "\"smem\": 65536}] */";
    kg_rtc_kernel k[KG_RTC_MAX_KERNELS];
    int n = 0;
    kg_err e = {0, ""};
    assert_int_equal(kg_rtc_parse(good, strlen(good), k, &n, &e), 0);
    assert_int_equal(k[0].n_args, 10);
    assert_int_equal(k[0].args[1].index, 2);
    assert_int_equal(k[0].args[5].kind, KG_RTC_DIM_IN);
    assert_int_equal(k[0].args[5].dim, 1);
    assert_int_equal(k[0].args[6].kind, KG_RTC_DIM_OUT);
    assert_string_equal(k[0].args[7].name, "eps");
    assert_int_equal(k[0].args[8].kind, KG_RTC_ISCALAR);
    unsigned g[3];
    assert_int_equal(kg_rtc_grid(&k[0], 1, 777, g), 0);
    assert_int_equal(g[0], 777);
    /* a NUL byte is not source text */
    kg_err e2 = {0, ""};
    assert_int_equal(kg_rtc_parse("ab\0cd", 5, k, &n, &e2), KG_EXIT_CANDIDATE);
}

static void nvrtc_compiles_for_sm90_without_a_gpu(void **state)
{
    (void)state;
    size_t len;
    char *src = slurp(KG_TEST_SRC "/rtc/relu.cu", &len), *cubin = NULL, msg[512] = "";
    size_t size = 0;
    int rc = kg_rtc_compile(src, "relu.cu", 9, 0, &cubin, &size, msg, sizeof msg);
    if (rc != 0 && strstr(msg, "cannot be loaded")) {
        free(src);
        skip(); /* no NVRTC on this machine */
    }
    if (rc != 0)
        fail_msg("%s", msg);
    assert_true(size > 1000 && memcmp(cubin, "\177ELF", 4) == 0); /* a cubin is an ELF file */
    free(cubin);
    free(src);
    src = slurp(KG_TEST_SRC "/rtc/broken.cu", &len);
    assert_int_equal(kg_rtc_compile(src, "broken.cu", 9, 0, &cubin, &size, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "undeclared_name"));
    free(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_test_source_parses),
        cmocka_unit_test(arguments_and_fields_are_checked),
        cmocka_unit_test(nvrtc_compiles_for_sm90_without_a_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
