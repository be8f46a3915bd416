/* Comparing two reports (report/compare.h). */
#include "compare.h"

#include "../base/text.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *call_names[] = {
#define X(e, s) s,
    KG_COMPARE_CALLS(X)
#undef X
};

const char *kg_compare_call_name(kg_compare_call c) { return call_names[c]; }

void kg_compare_defaults(kg_compare_cfg *c)
{
    c->same = 0.02;
    c->regress = 0.05;
}

int kg_verdict_rank(kg_verdict v)
{
    switch (v) {
    case KG_V_OK:
        return 0;
    case KG_V_SKIPPED:
        return 1;
    case KG_V_SLOW:
        return 2;
    default:
        return 3; /* INCORRECT, CRASH, TIMEOUT, IMPOSSIBLE */
    }
}

kg_compare_call kg_compare_times(double ta, double ta_lo, double ta_hi, double tb, double tb_lo, double tb_hi,
                                 double same)
{
    if (!(ta > 0) || !(tb > 0))
        return KG_COMPARE_UNTIMED;
    /* no interval: the point at the median */
    if (!(ta_lo > 0) || !(ta_hi >= ta_lo))
        ta_lo = ta_hi = ta;
    if (!(tb_lo > 0) || !(tb_hi >= tb_lo))
        tb_lo = tb_hi = tb;
    double r = tb / ta;
    if (fabs(r - 1) <= same)
        return KG_COMPARE_SAME;
    if (r < 1 && tb_hi < ta_lo)
        return KG_COMPARE_FASTER;
    if (r > 1 && tb_lo > ta_hi)
        return KG_COMPARE_SLOWER;
    return KG_COMPARE_AMBIGUOUS;
}

static int same_key(const kg_result *x, const kg_result *y)
{
    return strcmp(x->kernel, y->kernel) == 0 && strcmp(x->op, y->op) == 0 && strcmp(x->dtype, y->dtype) == 0 &&
           strcmp(x->index_dtype, y->index_dtype) == 0 && strcmp(x->shape, y->shape) == 0;
}

/* The time the verdict was judged on (kg_result_time) with the GPU
 * median's interval; where host work was charged (time/judged past the GPU
 * median), the time judged as a point, since it has no interval. */
static void times(const kg_result *r, double *t, double *lo, double *hi, int *charged)
{
    double gpu = 0;
    *t = *lo = *hi = 0;
    *charged = 0;
    /* only a judged, timed result has a time to compare */
    if (r->verdict != KG_V_OK && r->verdict != KG_V_SLOW)
        return;
    *t = kg_result_time(r);
    if (kg_result_get(r, "time/gpu/median", &gpu) && *t > gpu) {
        *charged = 1;
        return;
    }
    kg_result_get(r, "time/gpu/ci_lo", lo);
    kg_result_get(r, "time/gpu/ci_hi", hi);
}

static void fill(kg_compare_row *w, const kg_result *x)
{
    snprintf(w->kernel, sizeof w->kernel, "%s", x->kernel);
    snprintf(w->op, sizeof w->op, "%s", x->op);
    snprintf(w->dtype, sizeof w->dtype, "%s", x->dtype);
    snprintf(w->index_dtype, sizeof w->index_dtype, "%s", x->index_dtype);
    snprintf(w->shape, sizeof w->shape, "%s", x->shape);
}

int kg_compare(const kg_report *a, const kg_report *b, const kg_compare_cfg *cfg, kg_compare_row **rows, int *n,
               kg_err *err)
{
    *rows = calloc((size_t)(a->n + b->n + 1), sizeof **rows);
    *n = 0;
    if (!*rows)
        return kg_err_set(err, KG_EXIT_ENV, "out of memory comparing %d and %d results", a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        const kg_result *x = &a->results[i], *y = NULL;
        int dup = 0;
        for (int k = 0; k < i && !dup; k++)
            dup = same_key(&a->results[k], x);
        if (dup)
            continue; /* a report lists each kernel and shape once; the first counts */
        for (int k = 0; k < b->n && !y; k++)
            if (same_key(&b->results[k], x))
                y = &b->results[k];
        kg_compare_row *w = &(*rows)[(*n)++];
        fill(w, x);
        w->have_a = 1;
        w->va = x->verdict;
        times(x, &w->ta, &w->ta_lo, &w->ta_hi, &w->charged_a);
        if (!y) {
            w->call = KG_COMPARE_ONLY_A;
            continue;
        }
        w->have_b = 1;
        w->vb = y->verdict;
        times(y, &w->tb, &w->tb_lo, &w->tb_hi, &w->charged_b);
        w->call = kg_compare_times(w->ta, w->ta_lo, w->ta_hi, w->tb, w->tb_lo, w->tb_hi, cfg->same);
        w->ratio = w->ta > 0 && w->tb > 0 ? w->tb / w->ta : 0;
        w->regression = (w->call == KG_COMPARE_SLOWER && w->ratio > 1 + cfg->regress) ||
                        kg_verdict_rank(w->vb) > kg_verdict_rank(w->va);
    }
    for (int i = 0; i < b->n; i++) {
        const kg_result *y = &b->results[i];
        int seen = 0;
        for (int k = 0; k < a->n && !seen; k++)
            seen = same_key(&a->results[k], y);
        for (int k = 0; k < i && !seen; k++)
            seen = same_key(&b->results[k], y);
        if (seen)
            continue;
        kg_compare_row *w = &(*rows)[(*n)++];
        fill(w, y);
        w->have_b = 1;
        w->vb = y->verdict;
        times(y, &w->tb, &w->tb_lo, &w->tb_hi, &w->charged_b);
        w->call = KG_COMPARE_ONLY_B;
    }
    return 0;
}

int kg_compare_print(const kg_report *a, const kg_report *b, const kg_compare_row *rows, int n, FILE *f)
{
    int count[KG_COMPARE_ONLY_B + 1] = {0}, regressions = 0, charged = 0;
    fprintf(f, "A: %s, %s, commit %s, %s\n", a->device[0] ? a->device : "?", a->device_uuid, a->commit, a->date);
    fprintf(f, "B: %s, %s, commit %s, %s\n", b->device[0] ? b->device : "?", b->device_uuid, b->commit, b->date);
    if (strcmp(a->device_uuid, b->device_uuid) != 0)
        fprintf(f, "across GPUs%s: B/A compares the same kernels on two devices\n",
                strcmp(a->device, b->device) != 0 ? " of different kinds" : "");
    /* a verdict may change with the gate alone (an older kgate's host
     * allowance, --e-ok): say so rather than let it read as the kernel's */
    const kg_gate *ga = &a->gate, *gb = &b->gate;
    if (ga->e_ok != gb->e_ok || ga->rho_ok != gb->rho_ok || ga->host_allowance != gb->host_allowance ||
        ga->rho_impossible != gb->rho_impossible || ga->suspect_e != gb->suspect_e ||
        ga->suspect_rho != gb->suspect_rho || ga->band != gb->band || ga->rho_fair != gb->rho_fair ||
        ga->vendor_share != gb->vendor_share || ga->vendor_compute != gb->vendor_compute ||
        ga->vendor_all != gb->vendor_all)
        fprintf(f, "the gates differ: A e_ok %.2f, rho_ok %.2f, host allowance %.0f us; B %.2f, %.2f, %.0f us: "
                   "a verdict may change with the gate alone\n",
                ga->e_ok, ga->rho_ok, ga->host_allowance * 1e6, gb->e_ok, gb->rho_ok, gb->host_allowance * 1e6);
    fprintf(f, "\n%-30s %-16s %-5s %-17s %-10s %11s %11s %7s  %s\n", "kernel", "op", "dtype", "shape", "call", "A",
            "B", "B/A", "verdict");
    for (int i = 0; i < n; i++) {
        const kg_compare_row *w = &rows[i];
        char ta[32], tb[32], ratio[16], verdict[48];
        kg_fmt_time(w->ta, ta, sizeof ta);
        kg_fmt_time(w->tb, tb, sizeof tb);
        if (w->charged_a) /* host work charged: marked, and explained below the table */
            strncat(ta, "*", sizeof ta - strlen(ta) - 1);
        if (w->charged_b)
            strncat(tb, "*", sizeof tb - strlen(tb) - 1);
        charged += w->charged_a || w->charged_b;
        if (w->ratio > 0)
            snprintf(ratio, sizeof ratio, "%.3f", w->ratio);
        else
            snprintf(ratio, sizeof ratio, "-");
        if (w->have_a && w->have_b && w->va != w->vb)
            snprintf(verdict, sizeof verdict, "%s -> %s", kg_verdict_name(w->va), kg_verdict_name(w->vb));
        else
            snprintf(verdict, sizeof verdict, "%s", kg_verdict_name(w->have_a ? w->va : w->vb));
        fprintf(f, "%-30s %-16s %-5s %-17s %-10s %11s %11s %7s  %s%s\n", w->kernel, w->op, w->dtype, w->shape,
                kg_compare_call_name(w->call), w->have_a ? ta : "", w->have_b ? tb : "", ratio, verdict,
                w->regression ? "  REGRESSION" : "");
        count[w->call]++;
        regressions += w->regression;
    }
    if (charged)
        fprintf(f, "\n* host work charged: the time judged (time/judged), more than the GPU median, compared as "
                   "a point (it has no interval)\n");
    fprintf(f, "\n");
    const char *sep = "";
    for (int c = 0; c <= KG_COMPARE_ONLY_B; c++)
        if (count[c]) {
            fprintf(f, "%s%d %s", sep, count[c], kg_compare_call_name((kg_compare_call)c));
            sep = ", ";
        }
    fprintf(f, "%s%d regression(s)\n", n ? "; " : "", regressions);
    return regressions;
}

static void num(cJSON *o, const char *k, double v)
{
    if (v > 0 && isfinite(v))
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

int kg_compare_write_json(const kg_report *a, const kg_report *b, const char *path_a, const char *path_b,
                          const kg_compare_cfg *cfg, const kg_compare_row *rows, int n, const char *command,
                          const char *path, kg_err *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "schema", "kgate.compare/1");
    cJSON_AddStringToObject(root, "command", command ? command : "");
    const kg_report *side[2] = {a, b};
    const char *paths[2] = {path_a, path_b}, *names[2] = {"a", "b"};
    for (int s = 0; s < 2; s++) {
        cJSON *o = cJSON_AddObjectToObject(root, names[s]);
        cJSON_AddStringToObject(o, "file", paths[s]);
        cJSON_AddStringToObject(o, "commit", side[s]->commit);
        cJSON_AddStringToObject(o, "date", side[s]->date);
        cJSON_AddStringToObject(o, "device", side[s]->device);
        cJSON_AddStringToObject(o, "uuid", side[s]->device_uuid);
    }
    cJSON_AddNumberToObject(root, "same", cfg->same);
    cJSON_AddNumberToObject(root, "regress", cfg->regress);
    cJSON *arr = cJSON_AddArrayToObject(root, "rows");
    int regressions = 0;
    for (int i = 0; i < n; i++) {
        const kg_compare_row *w = &rows[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "kernel", w->kernel);
        cJSON_AddStringToObject(o, "op", w->op);
        cJSON_AddStringToObject(o, "dtype", w->dtype);
        cJSON_AddStringToObject(o, "shape", w->shape);
        cJSON_AddStringToObject(o, "call", kg_compare_call_name(w->call));
        num(o, "a_time", w->ta);
        num(o, "b_time", w->tb);
        num(o, "ratio", w->ratio);
        cJSON_AddBoolToObject(o, "a_host_charged", w->charged_a);
        cJSON_AddBoolToObject(o, "b_host_charged", w->charged_b);
        cJSON_AddStringToObject(o, "a_verdict", w->have_a ? kg_verdict_name(w->va) : "");
        cJSON_AddStringToObject(o, "b_verdict", w->have_b ? kg_verdict_name(w->vb) : "");
        cJSON_AddBoolToObject(o, "regression", w->regression);
        regressions += w->regression;
        cJSON_AddItemToArray(arr, o);
    }
    cJSON_AddNumberToObject(root, "regressions", regressions);
    kg_json_clean(root); /* file names and the command line included (base/text.h) */
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return kg_err_set(err, KG_EXIT_IO, "cannot serialize the comparison");
    kg_write_file_atomic(path, text, err);
    free(text);
    return err->code;
}
