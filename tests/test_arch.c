/* catalog/arch.h: the code a GPU gets from a build's architecture list, the
 * refusal of a GPU with none, and which bundled variants a GPU runs (fake
 * devices of compute capability 8.0, 9.0, 10.0 against the registry). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <dirent.h>

#include "catalog/arch.h"

#define FAT "80-real;86-real;89-real;90a-real;100-real;100-virtual"

static const char *code_of(const char *archs, int cc)
{
    static char buf[64];
    char what[32];
    kg_code c = kg_arch_code(archs, cc, what, sizeof what);
    snprintf(buf, sizeof buf, "%s %s", c == KG_CODE_SASS ? "sass" : c == KG_CODE_PTX ? "ptx" : "none", what);
    return buf;
}

/* SASS within a major from its minor on, "a" targets on their own GPU
 * alone, PTX forward; the newest that runs wins, SASS before PTX. */
static void code_picked(void **state)
{
    (void)state;
    assert_string_equal(code_of(FAT, 75), "none ");        /* T4 */
    assert_string_equal(code_of(FAT, 80), "sass sm_80");   /* A100 */
    assert_string_equal(code_of(FAT, 86), "sass sm_86");   /* A10, RTX 30xx */
    assert_string_equal(code_of(FAT, 87), "sass sm_86");   /* Orin: 8.6's SASS runs */
    assert_string_equal(code_of(FAT, 89), "sass sm_89");   /* L4, L40S */
    assert_string_equal(code_of(FAT, 90), "sass sm_90a");  /* H100, H200 */
    assert_string_equal(code_of(FAT, 100), "sass sm_100"); /* B200 */
    assert_string_equal(code_of(FAT, 103), "sass sm_100"); /* B300 */
    assert_string_equal(code_of(FAT, 120), "ptx compute_100"); /* RTX 50xx: JIT */
    assert_string_equal(code_of(FAT, 121), "ptx compute_100");
    assert_string_equal(code_of("90a-real", 90), "sass sm_90a");
    assert_string_equal(code_of("90a-real", 80), "none ");
    assert_string_equal(code_of("90a-real", 100), "none ");   /* sm_90a's SASS is 9.0's alone */
    assert_string_equal(code_of("90a-virtual", 100), "none "); /* and so is its PTX */
    assert_string_equal(code_of("100a-real", 103), "none ");
    assert_string_equal(code_of("100f-real", 103), "sass sm_100f"); /* a family target */
    assert_string_equal(code_of("80", 90), "ptx compute_80");        /* plain: SASS and PTX */
    assert_string_equal(code_of("80", 80), "sass sm_80");
    assert_string_equal(code_of("90-real 90a-real", 90), "sass sm_90a");
    assert_string_equal(code_of("80-real,native,89-real", 89), "sass sm_89"); /* a bad entry is skipped */
    assert_string_equal(code_of("", 90), "none ");
}

static void list_read(void **state)
{
    (void)state;
    char buf[256];
    assert_string_equal(kg_arch_list_text(FAT, buf, sizeof buf),
                        "sm_80, sm_86, sm_89, sm_90a, sm_100 and PTX compute_100");
    assert_string_equal(kg_arch_list_text("90a-real", buf, sizeof buf), "sm_90a");
    assert_string_equal(kg_arch_list_text("80", buf, sizeof buf), "sm_80 and PTX compute_80");
    assert_string_equal(kg_arch_list_text("", buf, sizeof buf), "no architecture");
    /* the build's own list (CMake refuses one it cannot read) */
    assert_string_not_equal(kg_arch_list_text(kg_arch_build(), buf, sizeof buf), "no architecture");
}

/* A GPU the build has no code for: exit 5, one line with its arch and the list. */
static void gpu_refused(void **state)
{
    (void)state;
    kg_err err = {0, ""};
    assert_int_equal(kg_arch_check_gpu(0, "NVIDIA H100", 90, FAT, &err), 0);
    assert_int_equal(kg_arch_check_gpu(1, "NVIDIA GeForce RTX 5090", 120, FAT, &err), 0); /* PTX */
    assert_int_equal(kg_arch_check_gpu(2, "Tesla T4", 75, FAT, &err), KG_EXIT_ENV);
    assert_string_equal(err.msg, "GPU 2 (Tesla T4) is sm_75, and this build has code only for sm_80, sm_86, "
                                 "sm_89, sm_90a, sm_100 and PTX compute_100 (KG_CUDA_ARCHS)");
    kg_err e2 = {0, ""};
    assert_int_equal(kg_arch_check_gpu(0, "NVIDIA A100", 80, "90a-real", &e2), KG_EXIT_ENV);
    assert_non_null(strstr(e2.msg, "is sm_80, and this build has code only for sm_90a"));
    assert_null(strchr(e2.msg, '\n'));
}

/* The bundled kernels op offers (<op>_<v>_<dtype>, v1..v3) that a fake GPU
 * of compute capability cc cannot run from a build for archs, as
 * "op_v" words (one per variant), in registry order. */
static const char *unavailable(int cc, const char *archs, char *why, size_t why_size)
{
    static char out[1024];
    size_t u = 0;
    out[0] = '\0';
    for (int i = 0; kg_ops[i]; i++)
        for (int v = 1; v <= 3; v++) {
            int any = 0;
            for (int d = 0; d < kg_ops[i]->n_dtypes; d++) {
                char kernel[96], w[256];
                snprintf(kernel, sizeof kernel, "%s_v%d_%s", kg_ops[i]->name, v, kg_dtype_name(kg_ops[i]->dtypes[d]));
                if (kg_arch_unavailable(kg_ops[i], kernel, cc, archs, w, sizeof w)) {
                    any = 1;
                    snprintf(why, why_size, "%s", w);
                }
            }
            if (any)
                u += (size_t)snprintf(out + u, sizeof out - u, "%s%s_v%d", u ? " " : "", kg_ops[i]->name, v);
        }
    return out;
}

static void variants_per_gpu(void **state)
{
    (void)state;
    char why[256] = "";
    /* the Hopper variants: wgmma and TMA, sm_90a's alone */
    const char *hopper = "attention_v3 batched_matmul_v2 conv2d_v3 conv2d_nhwc_v3 linear_activation_v2 "
                         "matmul_v2 matmul_v3";
    assert_string_equal(unavailable(90, FAT, why, sizeof why), "");
    assert_string_equal(unavailable(80, FAT, why, sizeof why), hopper);
    assert_string_equal(why, "needs sm_90a (wgmma, TMA): this GPU is sm_80");
    assert_string_equal(unavailable(100, FAT, why, sizeof why), hopper); /* Blackwell has no wgmma */
    assert_string_equal(why, "needs sm_90a (wgmma, TMA): this GPU is sm_100");
    assert_string_equal(unavailable(86, FAT, why, sizeof why), hopper);
    assert_string_equal(unavailable(120, FAT, why, sizeof why), hopper);
    /* an H100 with a build that lacks sm_90a: the build says why */
    assert_string_equal(unavailable(90, "80-real;90-virtual", why, sizeof why), hopper);
    assert_string_equal(why, "needs sm_90a (wgmma, TMA): this build has no sm_90a code (KG_CUDA_ARCHS "
                             "80-real;90-virtual)");
    assert_string_equal(unavailable(90, "90a-real", why, sizeof why), "");
    /* kgate devices' line: one reason, its variants together */
    char line[1024];
    assert_string_equal(kg_arch_unavailable_text(80, FAT, line, sizeof line),
                        "attention_v3, batched_matmul_v2, conv2d_v3, conv2d_nhwc_v3, linear_activation_v2, matmul_v2, "
                        "matmul_v3 (needs sm_90a (wgmma, TMA): this GPU is sm_80)");
    assert_string_equal(kg_arch_unavailable_text(90, FAT, line, sizeof line), "");
    assert_non_null(strstr(kg_arch_unavailable_text(90, "100-real", line, sizeof line),
                           "matmul_v3 (needs sm_90a (wgmma, TMA): this build has no sm_90a code"));
    /* a name that is not a bundled variant's needs nothing */
    const kg_op *mm = kg_op_find("matmul");
    assert_non_null(mm);
    assert_null(kg_arch_need(mm, "my_matmul_v3_fp16"));
    assert_null(kg_arch_need(mm, "matmul_v1_fp16"));
    assert_non_null(kg_arch_need(mm, "matmul_v3_bf16"));
    assert_int_equal(kg_arch_unavailable(mm, "matmul_v1_fp16", 80, FAT, why, sizeof why), 0);
    assert_null(kg_arch_need(kg_op_find("conv2d"), "conv2d_nhwc_v3_fp16")); /* conv2d_nhwc's own */
}

/* Appends every "<op> <variant>" string literal of the need_sm90a(p, ...)
 * calls in text (the launch guards of the kernels/ sources) to out. */
static void guard_names(const char *text, char *out, size_t size)
{
    size_t u = strlen(out);
    for (const char *p = strstr(text, "need_sm90a(p,"); p; p = strstr(p + 1, "need_sm90a(p,")) {
        const char *end = strchr(p, ')');
        for (const char *q = strchr(p, '"'); q && end && q < end;) {
            const char *close = strchr(q + 1, '"');
            if (!close)
                break;
            u += (size_t)snprintf(out + u, size - u, "[%.*s]", (int)(close - q - 1), q + 1);
            q = strchr(close + 1, '"');
        }
    }
}

/* The registry's needs and the kernels' launch guards name the same
 * variants: a Hopper variant added to kernels/ without its need (or a need
 * without a guard) fails here. */
static void registry_matches_kernels(void **state)
{
    (void)state;
    char dir[1024], path[1200], guards[2048] = "";
    snprintf(dir, sizeof dir, "%s/../kernels", KG_TEST_SRC);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 3, ".cu") != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        static char text[1 << 20];
        size_t len = fread(text, 1, sizeof text - 1, f);
        text[len] = '\0';
        fclose(f);
        guard_names(text, guards, sizeof guards);
    }
    closedir(d);
    int n_needs = 0;
    for (int i = 0; kg_ops[i]; i++)
        for (int k = 0; k < KG_MAX_NEEDS && kg_ops[i]->needs[k].variant; k++) {
            char want[128];
            snprintf(want, sizeof want, "[%s %s]", kg_ops[i]->name, kg_ops[i]->needs[k].variant);
            assert_string_equal(kg_ops[i]->needs[k].arch, "90a");
            if (!strstr(guards, want))
                fail_msg("%s needs %s but no launch in kernels/ guards it (need_sm90a)", kg_ops[i]->name,
                         kg_ops[i]->needs[k].variant);
            n_needs++;
        }
    int n_guards = 0;
    for (const char *p = strchr(guards, '['); p; p = strchr(p + 1, '['))
        n_guards++;
    assert_int_equal(n_guards, n_needs);
    assert_int_equal(n_needs, 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(code_picked),
        cmocka_unit_test(list_read),
        cmocka_unit_test(gpu_refused),
        cmocka_unit_test(variants_per_gpu),
        cmocka_unit_test(registry_matches_kernels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
