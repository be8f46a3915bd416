/* The launch description of a CUDA source candidate (rtc_desc.h): found in
 * the source's `kgate:` comment and validated field by field. */
#include "rtc_desc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

static int ident(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.' || s[i] == '-'))
            return 0;
    return 1;
}

/* A string field into dst (size bytes); required fields must be there. */
static int field(const cJSON *o, const char *key, char *dst, size_t size, int required, int k, kg_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    dst[0] = '\0';
    if (!v)
        return required ? kg_err_set(err, KG_EXIT_CANDIDATE, "kgate: block, kernel %d: no \"%s\"", k, key) : 0;
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= size)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "kgate: block, kernel %d: \"%s\" must be a string of at most %zu "
                          "characters", k, key, size - 1);
    snprintf(dst, size, "%s", v->valuestring);
    return 0;
}

/* "in2" -> 2 when the prefix matches and the index is 0..3. */
static int tensor_ref(const char *t, const char *prefix, int *index)
{
    size_t n = strlen(prefix);
    if (strncmp(t, prefix, n) != 0 || !isdigit((unsigned char)t[n]) || (t[n + 1] && t[n + 1] != ':'))
        return 0;
    *index = t[n] - '0';
    return *index < 4;
}

static int parse_arg(const char *t, kg_rtc_arg *a)
{
    memset(a, 0, sizeof *a);
    if (tensor_ref(t, "in", &a->index) && !t[3]) {
        a->kind = KG_RTC_IN;
        return 0;
    }
    if (tensor_ref(t, "out", &a->index) && !t[4]) {
        a->kind = KG_RTC_OUT;
        return 0;
    }
    if (strcmp(t, "numel") == 0 || strcmp(t, "rows") == 0 || strcmp(t, "cols") == 0) {
        a->kind = t[0] == 'n' ? KG_RTC_NUMEL : t[0] == 'r' ? KG_RTC_ROWS : KG_RTC_COLS;
        return 0;
    }
    if (strncmp(t, "dim:", 4) == 0) {
        const char *r = t + 4, *c;
        int out = strncmp(r, "out", 3) == 0;
        if (!(out ? tensor_ref(r, "out", &a->index) : tensor_ref(r, "in", &a->index)))
            return -1;
        c = strchr(r, ':');
        if (!c || !isdigit((unsigned char)c[1]) || c[2])
            return -1;
        a->kind = out ? KG_RTC_DIM_OUT : KG_RTC_DIM_IN;
        a->dim = c[1] - '0';
        return 0;
    }
    if (strncmp(t, "scalar:", 7) == 0 || strncmp(t, "iscalar:", 8) == 0) {
        const char *nm = strchr(t, ':') + 1;
        if (!ident(nm, sizeof a->name - 1))
            return -1;
        a->kind = t[0] == 'i' ? KG_RTC_ISCALAR : KG_RTC_SCALAR;
        snprintf(a->name, sizeof a->name, "%s", nm);
        return 0;
    }
    return -1;
}

static int parse_kernel(const cJSON *o, int i, kg_rtc_kernel *k, kg_err *err)
{
    memset(k, 0, sizeof *k);
    if (!cJSON_IsObject(o))
        return kg_err_set(err, KG_EXIT_CANDIDATE, "kgate: block: kernel %d is not a JSON object", i);
    if (field(o, "name", k->name, sizeof k->name, 1, i, err) || field(o, "op", k->op, sizeof k->op, 1, i, err) ||
        field(o, "dtype", k->dtype, sizeof k->dtype, 1, i, err) ||
        field(o, "function", k->function, sizeof k->function, 1, i, err) ||
        field(o, "index_dtype", k->index_dtype, sizeof k->index_dtype, 0, i, err) ||
        field(o, "scalars", k->scalars, sizeof k->scalars, 0, i, err) ||
        field(o, "summary", k->summary, sizeof k->summary, 0, i, err))
        return err->code;
    if (!ident(k->name, 63) || !ident(k->function, 63))
        return kg_err_set(err, KG_EXIT_CANDIDATE, "kgate: block, kernel %d: name and function must be identifiers", i);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "block");
    if (!cJSON_IsNumber(b) || b->valuedouble != (int)b->valuedouble || b->valueint < 1 || b->valueint > 1024)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "kgate: block, kernel %s: \"block\" must be 1 to 1024 threads",
                          k->name);
    k->block = b->valueint;
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(o, "grid");
    if (cJSON_IsString(g) && strcmp(g->valuestring, "elements") == 0)
        k->grid_mode = 1;
    else if (cJSON_IsString(g) && strcmp(g->valuestring, "rows") == 0)
        k->grid_mode = 2;
    else if (cJSON_IsArray(g) && cJSON_GetArraySize(g) == 3) {
        for (int d = 0; d < 3; d++) {
            const cJSON *x = cJSON_GetArrayItem(g, d);
            if (!cJSON_IsNumber(x) || x->valuedouble != (int)x->valuedouble || x->valueint < 1 ||
                x->valuedouble > 2147483647.0)
                return kg_err_set(err, KG_EXIT_CANDIDATE, "kgate: block, kernel %s: \"grid\" extents must be "
                                  "positive integers", k->name);
            k->grid[d] = x->valueint;
        }
    } else
        return kg_err_set(err, KG_EXIT_CANDIDATE, "kgate: block, kernel %s: \"grid\" must be \"elements\", \"rows\" "
                          "or [x, y, z]", k->name);
    const cJSON *sm = cJSON_GetObjectItemCaseSensitive(o, "smem");
    if (sm) {
        if (!cJSON_IsNumber(sm) || sm->valuedouble != (int)sm->valuedouble || sm->valueint < 0 ||
            sm->valueint > 227 * 1024)
            return kg_err_set(err, KG_EXIT_CANDIDATE, "kgate: block, kernel %s: \"smem\" must be 0 to 232448 bytes",
                              k->name);
        k->smem = sm->valueint;
    }
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(o, "args");
    if (!cJSON_IsArray(args) || cJSON_GetArraySize(args) > KG_RTC_MAX_ARGS)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "kgate: block, kernel %s: \"args\" must be a list of at most %d",
                          k->name, KG_RTC_MAX_ARGS);
    const cJSON *a;
    cJSON_ArrayForEach(a, args)
    {
        if (!cJSON_IsString(a) || parse_arg(a->valuestring, &k->args[k->n_args]))
            return kg_err_set(err, KG_EXIT_CANDIDATE, "kgate: block, kernel %s: argument %d is not one of in<i>, "
                              "out<i>, numel, rows, cols, dim:in<i>:<d>, dim:out<i>:<d>, scalar:<name>, "
                              "iscalar:<name>", k->name, k->n_args + 1);
        k->n_args++;
    }
    return 0;
}

int kg_rtc_parse(const char *source, size_t len, kg_rtc_kernel *k, int *n, kg_err *err)
{
    *n = 0;
    if (len > KG_RTC_MAX_SOURCE)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "the source is %zu bytes, more than %u", len, KG_RTC_MAX_SOURCE);
    if (memchr(source, '\0', len))
        return kg_err_set(err, KG_EXIT_CANDIDATE, "the source holds a NUL byte: not CUDA C++ text");
    char *text = malloc(len + 1);
    if (!text)
        return kg_err_set(err, KG_EXIT_ENV, "out of memory for the source");
    memcpy(text, source, len);
    text[len] = '\0';
    char *start = strstr(text, "/* kgate:"), *end;
    if (!start || !(end = strstr(start, "*/"))) {
        free(text);
        return kg_err_set(err, KG_EXIT_CANDIDATE, "no /* kgate: [...] */ comment describing its kernels "
                          "(docs/abi.md, CUDA source candidates)");
    }
    *end = '\0';
    cJSON *root = cJSON_Parse(start + strlen("/* kgate:"));
    free(text);
    if (!cJSON_IsArray(root) || cJSON_GetArraySize(root) < 1 || cJSON_GetArraySize(root) > KG_RTC_MAX_KERNELS) {
        cJSON_Delete(root);
        return kg_err_set(err, KG_EXIT_CANDIDATE, "the kgate: comment must hold a JSON array of 1 to %d kernels",
                          KG_RTC_MAX_KERNELS);
    }
    const cJSON *o;
    cJSON_ArrayForEach(o, root)
    {
        if (parse_kernel(o, *n + 1, &k[*n], err))
            break;
        for (int j = 0; j < *n; j++)
            if (strcmp(k[j].name, k[*n].name) == 0) {
                kg_err_set(err, KG_EXIT_CANDIDATE, "kgate: block: two kernels are named %s", k[j].name);
                break;
            }
        if (err->code)
            break;
        (*n)++;
    }
    cJSON_Delete(root);
    return err->code;
}

int kg_rtc_grid(const kg_rtc_kernel *k, int64_t numel_out0, int64_t rows_in0, unsigned grid[3])
{
    if (k->grid_mode == 0) {
        for (int d = 0; d < 3; d++)
            grid[d] = (unsigned)k->grid[d];
        return 0;
    }
    int64_t x = k->grid_mode == 1 ? (numel_out0 + k->block - 1) / k->block : rows_in0;
    if (x < 1)
        x = 1;
    if (x > 2147483647)
        return -1;
    grid[0] = (unsigned)x;
    grid[1] = grid[2] = 1;
    return 0;
}
