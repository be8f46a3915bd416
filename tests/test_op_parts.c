/* Every registered operator has each part docs/adding-an-operator.md lists:
 * its descriptor file, its CPU and GPU fp64 references and worked example,
 * its bundled fast variant at every dtype kgate run measures, a library path
 * or the reason there is none, its PyTorch call (python/kgate/torch_ops.py:
 * the inputs in signature order, then every required scalar keyword-only),
 * and, for an operator whose extents constrain each other, its small shape in
 * tests/python/test_torch.py. A missing part prints one line naming the
 * operator and the part. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <cmocka.h>

#include "catalog/op.h"
#include "catalog/plugin_check.h"
#include "gpu/baseline.h"

#define ROOT KG_TEST_SRC "/.."

/* The library's CUDA runtime is not instrumented: the bundled table is not
 * loaded under AddressSanitizer (as in test_plugin). */
#include "asan.h"

static int missing;

static void miss(const kg_op *op, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("op_parts: %s: ", op->name);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    missing++;
}

/* The whole of a source file (NUL-terminated), or NULL. */
static char *slurp(const char *rel)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", ROOT, rel);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) != NULL) {
        if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        } else {
            buf[n] = '\0';
        }
    }
    fclose(f);
    return buf;
}

static void descriptor_and_references(const kg_op *op)
{
    char rel[256];
    snprintf(rel, sizeof rel, "src/ops/%s.c", op->name);
    char *text = slurp(rel);
    if (!text)
        miss(op, "no descriptor file %s (the registry names kg_op_<file name>)", rel);
    free(text);
    if (!op->cpu_reference)
        miss(op, "no CPU fp64 reference (.cpu_reference)");
    if (!op->reference)
        miss(op, "no GPU fp64 reference (.reference, in src/ops/%s.cu)", op->name);
    if (op->example.shape.n != op->n_dims)
        miss(op, "no worked example for its CPU reference (.example)");
    if (!op->edge_semantics)
        miss(op, "no edge semantics (.edge_semantics)");
}

static void library_paths(const kg_op *op)
{
    if (!op->baselines[0] && !op->no_baseline_why)
        miss(op, "no library path (.baselines) and no reason why (.no_baseline_why)");
    for (int b = 0; b < KG_MAX_BASELINES && op->baselines[b]; b++)
        if (!kg_baseline_find(op->baselines[b]))
            miss(op, "library path '%s' is defined by no src/gpu/baseline* file", op->baselines[b]);
}

static void bundled_variants(const kg_op *op, const kgate_plugin *p)
{
    if (!op->fast) {
        miss(op, "no bundled fast variant named (.fast)");
        return;
    }
    char prefix[96];
    snprintf(prefix, sizeof prefix, "%s_%s_", op->name, op->fast);
    for (int d = 0; p && d < kg_op_suite_dtypes(op); d++) {
        const char *dt = kg_dtype_name(op->dtypes[d]);
        int found = 0;
        for (uint32_t i = 0; i < p->n_kernels && !found; i++) {
            const kgate_kernel *k = kg_plugin_kernel(p, i);
            found = strncmp(k->name, prefix, strlen(prefix)) == 0 && strcmp(k->op, op->name) == 0 &&
                    strcmp(k->dtype, dt) == 0;
        }
        if (!found)
            miss(op, "no bundled fast variant %s%s in kernels/ (KG_EXPORT_VARIANTS)", prefix, dt);
    }
}

/* The parameters of torch_ops.py's `"<op>": lambda a, b, *, s: ...`: the
 * positional ones counted, the keyword-only ones into kw (comma-separated).
 * Returns -1 when the entry is missing. */
static int torch_params(const char *text, const char *op, char *kw, size_t kw_size)
{
    char key[96];
    snprintf(key, sizeof key, "\"%s\": lambda ", op);
    const char *at = strstr(text, key);
    if (!at)
        return -1;
    at += strlen(key);
    const char *end = strchr(at, ':');
    if (!end || end - at > 200)
        return -1;
    int positional = 0, star = 0;
    kw[0] = '\0';
    while (at < end) {
        while (at < end && (*at == ' ' || *at == ','))
            at++;
        const char *tok = at;
        while (at < end && *at != ',' && *at != ' ')
            at++;
        if (at == tok)
            break;
        if (at - tok == 1 && *tok == '*')
            star = 1;
        else if (!star)
            positional++;
        else if (strlen(kw) + (size_t)(at - tok) + 2 < kw_size)
            strncat(strncat(kw, *kw ? "," : "", 2), tok, (size_t)(at - tok));
    }
    return positional;
}

static void torch_call(const kg_op *op, const char *torch_ops)
{
    char kw[256];
    int positional = torch_ops ? torch_params(torch_ops, op->name, kw, sizeof kw) : -1;
    if (positional < 0) {
        miss(op, "no PyTorch call in python/kgate/torch_ops.py (\"%s\": lambda ...)", op->name);
        return;
    }
    if (positional != op->n_inputs)
        miss(op, "its PyTorch call takes %d positional inputs; the operator has %d", positional, op->n_inputs);
    for (int k = 0; k < op->n_scalars; k++)
        if (op->scalars[k].required && !kg_name_in_list(kw, op->scalars[k].name))
            miss(op, "its PyTorch call does not read required scalar %s (a keyword-only argument after *)",
                 op->scalars[k].name);
    for (const char *p = kw; *p;) {
        size_t len = strcspn(p, ",");
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)len, p);
        if (!kg_op_scalar(op, name))
            miss(op, "its PyTorch call reads %s, which is not one of its scalars", name);
        p += len + (p[len] == ',');
    }
}

/* The generic small shapes of test_torch.py do not fit an operator whose
 * extents constrain each other (check_shape): it names its own there. */
static void torch_test_shape(const kg_op *op, const char *test_torch)
{
    char key[96];
    snprintf(key, sizeof key, "\"%s\"", op->name);
    if (op->check_shape && !(test_torch && strstr(test_torch, key)))
        miss(op, "its extents have a check_shape rule, so tests/python/test_torch.py small_dims() must name "
                 "its small shape (\"%s\")", op->name);
}

static void every_operator_has_its_parts(void **state)
{
    (void)state;
    char *torch_ops = slurp("python/kgate/torch_ops.py");
    char *test_torch = slurp("tests/python/test_torch.py");
    assert_non_null(torch_ops);
    assert_non_null(test_torch);
    const kgate_plugin *p = NULL;
    void *h = NULL;
    missing = 0;
#ifndef KG_UNDER_ASAN
    kg_err e = {0, ""};
    if (kg_plugin_open(KG_TEST_BIN "/libkgate_bundled.so", &h, &p, &e)) {
        printf("op_parts: the bundled variants do not load: %s\n", e.msg);
        missing++;
    }
#endif
    int n = 0;
    for (int i = 0; kg_ops[i]; i++, n++) {
        descriptor_and_references(kg_ops[i]);
        library_paths(kg_ops[i]);
        bundled_variants(kg_ops[i], p);
        torch_call(kg_ops[i], torch_ops);
        torch_test_shape(kg_ops[i], test_torch);
    }
    if (h)
        dlclose(h);
    free(torch_ops);
    free(test_torch);
    assert_true(n > 0);
    fflush(stdout); /* the lines above before cmocka's own */
    if (missing)
        fail_msg("%d part(s) missing (docs/adding-an-operator.md)", missing);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(every_operator_has_its_parts)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
