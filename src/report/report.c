/* Report printers: the table and the JSON form (schema kgate.results/1). */
#include "report.h"

#include "../store/batch.h"

#include "../diagnose/diag_json.h"
#include "../base/text.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SCHEMA "kgate.results/2"

void kg_report_init(kg_report *r)
{
    memset(r, 0, sizeof *r);
    kg_gate_defaults(&r->gate);
}

void kg_report_free(kg_report *r)
{
    for (int i = 0; i < r->n; i++)
        free(r->results[i].diag);
    free(r->results);
    memset(r, 0, sizeof *r);
}

/* Every text of a result as one printable line of UTF-8 (base/text.h): a
 * result carries worker and candidate text (a crash's stderr), and every
 * table, report and JSON file is printed from the results added here. */
static void clean_result(kg_result *x)
{
#define CLEAN(f) kg_text_clean(f, sizeof f, f)
    CLEAN(x->kernel), CLEAN(x->summary), CLEAN(x->source), CLEAN(x->op), CLEAN(x->dtype), CLEAN(x->shape);
    CLEAN(x->index_dtype), CLEAN(x->baseline), CLEAN(x->baseline_note), CLEAN(x->best), CLEAN(x->extra_shapes);
    CLEAN(x->reason), CLEAN(x->detail), CLEAN(x->stop), CLEAN(x->wrapper_tail);
    for (int k = 0; k < x->n_libs && k < KG_MAX_LIBPATHS; k++)
        CLEAN(x->libs[k].name), CLEAN(x->libs[k].note);
    for (int k = 0; k < x->n_sums && k < KG_MAX_SUMMARIES; k++)
        CLEAN(x->sums[k].name), CLEAN(x->sums[k].unit);
#undef CLEAN
}

kg_result *kg_report_add(kg_report *r, const kg_result *res)
{
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 16;
        kg_result *n = realloc(r->results, sizeof *n * (size_t)cap);
        if (!n)
            return NULL;
        r->results = n;
        r->cap = cap;
    }
    r->results[r->n] = *res;
    clean_result(&r->results[r->n]);
    return &r->results[r->n++];
}

int kg_result_exit_code(const kg_result *r)
{
    if (r->verdict == KG_V_SKIPPED && (r->flags & KG_FLAG(VERIFIED)))
        return 0; /* --verify-only asked for correctness, and got it */
    return kg_verdict_exit_code(r->verdict);
}

int kg_report_exit_code(const kg_report *r)
{
    int code = 0;
    for (int i = 0; i < r->n; i++) {
        int c = kg_result_exit_code(&r->results[i]);
        code = c > code ? c : code;
    }
    return code;
}

const char *kg_fmt_time(double s, char *buf, size_t size)
{
    if (!(s > 0))
        snprintf(buf, size, "-");
    else if (s < 1e-3)
        snprintf(buf, size, "%.1f us", s * 1e6);
    else if (s < 1)
        snprintf(buf, size, "%.3f ms", s * 1e3);
    else
        snprintf(buf, size, "%.2f s", s);
    return buf;
}

static void fmt_num(const kg_result *r, const char *name, const char *fmt, char *buf, size_t size)
{
    double v;
    if (kg_result_get(r, name, &v))
        snprintf(buf, size, fmt, v);
    else
        snprintf(buf, size, "-");
}

void kg_flags_text(unsigned flags, char *buf, size_t size)
{
    size_t u = 0;
    buf[0] = '\0';
    for (int b = 0; b < KG_FLAG_COUNT; b++)
        if (flags & (1u << b))
            kg_append(buf, size, &u, "%s%s", u ? "," : "", kg_flag_name(b));
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, int n)
{
    if (n == 0)
        return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void kg_report_families(const kg_report *r, kg_family_row rows[KG_FAMILY_COUNT])
{
    double *e = malloc(sizeof(double) * (size_t)(r->n + 1)), *b = malloc(sizeof(double) * (size_t)(r->n + 1)),
           *h = malloc(sizeof(double) * (size_t)(r->n + 1));
    for (int f = 0; f < KG_FAMILY_COUNT; f++) {
        int ne = 0, nb = 0, nh = 0;
        memset(&rows[f], 0, sizeof rows[f]);
        for (int i = 0; e && b && h && i < r->n; i++) {
            const kg_result *x = &r->results[i];
            const kg_op *op = kg_op_find(x->op);
            double v;
            if (!op || (int)op->family != f || (x->verdict != KG_V_OK && x->verdict != KG_V_SLOW))
                continue;
            rows[f].n++;
            rows[f].n_slow += x->verdict == KG_V_SLOW;
            if (kg_result_get(x, "lib/efficiency", &v))
                e[ne++] = v;
            if (kg_result_get(x, "best/efficiency", &v))
                b[nb++] = v;
            if (kg_result_get(x, "roof/fraction", &v))
                h[nh++] = v;
        }
        rows[f].e_lib = median_of(e, ne);
        rows[f].e_best = median_of(b, nb);
        rows[f].rho = median_of(h, nh);
    }
    free(e);
    free(b);
    free(h);
}

/* A kernel name short enough for a line: the mangled name's identifier
 * (_Z12ln_v2_kernelI... -> ln_v2_kernel), else the name cut at 60. */
static const char *short_name(const char *n, char *buf, size_t size)
{
    if (n[0] == '_' && n[1] == 'Z') {
        const char *p = n + 2;
        if (*p == 'N') /* nested: take the last component before the parameters */
            p++;
        while (*p == 'L')
            p++;
        long len = 0;
        const char *last = NULL;
        long last_len = 0;
        while (*p >= '0' && *p <= '9') {
            len = strtol(p, (char **)&p, 10);
            if (len <= 0 || (long)strlen(p) < len)
                break;
            last = p, last_len = len;
            p += len;
            if (n[2] != 'N')
                break;
        }
        if (last) {
            snprintf(buf, size, "%.*s", (int)(last_len < 60 ? last_len : 60), last);
            return buf;
        }
    }
    /* demangled ("void ln_v1_row<float>(const float *, ...)"): the identifier */
    if (strncmp(n, "void ", 5) == 0)
        n += 5;
    size_t len = strcspn(n, "<(");
    snprintf(buf, size, "%.*s", (int)(len < 60 ? len : 60), n);
    return buf;
}

/* Whose gap a SLOW kernel's is: its rho beside the library path's and the
 * best known implementation's (rho / E_best, the same work model). Where
 * one of them reaches rho_fair the roof is within reach and the gap is the
 * kernel's; where none does, part of it is structural (the algorithm, or a
 * limit they share), which no rewrite toward them closes. */
static void print_gap(const kg_result *x, const kg_gate *g, FILE *f)
{
    double rho, lib_rho = 0, e_best;
    if (!g || x->verdict != KG_V_SLOW || !kg_result_get(x, "roof/fraction", &rho) ||
        !kg_result_get(x, "best/efficiency", &e_best) || !(e_best > 0) || !x->best[0])
        return;
    const double best_rho = rho / e_best;
    const int lib = x->baseline[0] && kg_result_get(x, "lib/roof/fraction", &lib_rho) && strcmp(x->baseline, x->best);
    char also[160] = "";
    if (lib)
        snprintf(also, sizeof also, ", the library path (%s) %.2f", x->baseline, lib_rho);
    if (best_rho >= g->rho_fair || lib_rho >= g->rho_fair)
        fprintf(f, "  gap: rho %.2f; the best known (%s) reaches %.2f%s: the roof is within reach, the gap is the "
                   "kernel's (authoring or code generation)\n",
                rho, x->best, best_rho, also);
    else
        fprintf(f, "  gap: rho %.2f; the best known (%s) reaches only %.2f%s, under rho_fair %.2f: part of the "
                   "gap is structural (the algorithm, or a limit they share), which no rewrite toward them "
                   "closes\n",
                rho, x->best, best_rho, also, g->rho_fair);
}

void kg_report_print_diagnosis(const kg_result *x, const kg_gate *g, FILE *f, int all)
{
    const kg_diagnosis *d = x->diag;
    char kn[64];
    if (!d)
        return;
    if (!d->n_causes) {
        fprintf(f, "  why: no cause fired%s\n", d->n_kernels ? "" : " (nothing was described)");
    }
    for (int c = 0; c < d->n_causes && (all || c < 1); c++) {
        const kg_cause *k = &d->causes[c];
        fprintf(f, "  %s %s (score %.2f, up to %.1fx)%s%s: %s\n", c ? "also:" : "why:", k->id, k->score, k->headroom,
                k->kernel[0] ? " in " : "", k->kernel[0] ? short_name(k->kernel, kn, sizeof kn) : "",
                k->title ? k->title : "");
        fprintf(f, "       evidence: %s\n", k->evidence);
        if (k->hint)
            fprintf(f, "       fix (%s): %s\n", k->locus ? k->locus : "?", k->hint);
    }
    if (!all && d->n_causes > 1) {
        fprintf(f, "  also:");
        for (int c = 1; c < d->n_causes && c < 6; c++)
            fprintf(f, " %s %.2f%s", d->causes[c].id, d->causes[c].score, c + 1 < d->n_causes && c < 5 ? "," : "");
        fprintf(f, " (kgate explain for all)\n");
    }
    print_gap(x, g, f);
    if (d->note[0])
        fprintf(f, "  diagnosis: %s\n", d->note);
}

void kg_report_print(const kg_report *r, FILE *f, int summary)
{
    int diag = 0; /* a cause column when some result was diagnosed */
    for (int i = 0; i < r->n; i++)
        diag |= r->results[i].diag != NULL;
    fprintf(f, "%-26s %-16s %-5s %-17s %-10s %10s %10s %6s %6s %5s %7s  %s%s\n", "kernel", "op", "dtype",
            "shape", "verdict", "time", "best", "E_best", "E_lib", "rho", "cliff", diag ? "cause      " : "",
            "flags");
    for (int i = 0; i < r->n; i++) {
        const kg_result *x = &r->results[i];
        char t[32], tb[32], eb[16], e[16], rho[16], cl[16], fl[256];
        double v;
        kg_fmt_time(kg_result_time(x), t, sizeof t);
        kg_fmt_time(kg_result_get(x, "best/time/median", &v) ? v : 0, tb, sizeof tb);
        fmt_num(x, "best/efficiency", "%.2f", eb, sizeof eb);
        fmt_num(x, "lib/efficiency", "%.2f", e, sizeof e);
        fmt_num(x, "roof/fraction", "%.2f", rho, sizeof rho);
        fmt_num(x, "cliff", "%.1fx", cl, sizeof cl);
        kg_flags_text(x->flags, fl, sizeof fl);
        char cause[24] = "";
        /* the top cause and its score, "-" when none is shown */
        const kg_cause *top = kg_diag_top(x->diag);
        if (top)
            snprintf(cause, sizeof cause, "%-6s %.2f ", top->id, top->score);
        else if (diag)
            snprintf(cause, sizeof cause, "%-11s", "-");
        fprintf(f, "%-26s %-16s %-5s %-17s %-10s %10s %10s %6s %6s %5s %7s  %s%s\n", x->kernel, x->op,
                x->dtype, x->shape, kg_verdict_name(x->verdict), t, tb, eb, e, rho, cl, cause, fl);
    }
    if (r->n) /* the legend: what the columns mean, with this gate's thresholds */
        fprintf(f, "E_best, E_lib: the best known time, the vendor library's, over the kernel's; rho: its work over "
                   "time x roof.\nOK: correct, and E_best >= %.2f or rho >= %.2f; IMPOSSIBLE: rho past %.2f; flags: "
                   "docs/results.md.\ncliff: the naive variant's time over this one's; cause: the top root cause and "
                   "its score (docs/diagnosis.md).\n\n",
                r->gate.e_ok, r->gate.rho_ok, r->gate.rho_impossible);
    for (int i = 0; i < r->n; i++) {
        const kg_result *x = &r->results[i];
        fprintf(f, "%s %s %s: %s: %s%s%s\n", x->kernel, x->dtype, x->shape,
                kg_verdict_name(x->verdict), x->reason, x->detail[0] ? "; " : "", x->detail);
        kg_report_print_diagnosis(x, &r->gate, f, 0);
    }
    /* what each library path did, once per operator, dtype and shape */
    int header = 0;
    for (int i = 0; i < r->n; i++) {
        const kg_result *x = &r->results[i];
        int seen = 0;
        for (int k = 0; k < i && !seen; k++)
            seen = strcmp(r->results[k].op, x->op) == 0 && strcmp(r->results[k].dtype, x->dtype) == 0 &&
                   strcmp(r->results[k].shape, x->shape) == 0;
        if (seen || (!x->n_libs && !x->best[0]))
            continue;
        if (!header++)
            fprintf(f, "\nlibrary paths (the fastest correct one gives E_lib; best adds kgate's own fast variant):\n");
        fprintf(f, "  %s %s %s:", x->op, x->dtype, x->shape);
        for (int k = 0; k < x->n_libs; k++) {
            char tt[32];
            const kg_libpath *p = &x->libs[k];
            if (p->status == KG_LIB_OK)
                fprintf(f, " %s %s;", p->name, kg_fmt_time(p->t, tt, sizeof tt));
            else
                fprintf(f, " %s %s (%.120s);", p->name, kg_lib_status_name(p->status), p->note);
        }
        if (!x->n_libs)
            fprintf(f, " no vendor path (%.120s);", x->baseline_note);
        double age;
        fprintf(f, " best = %s", x->best[0] ? x->best : "none");
        if (kg_result_get(x, "lib/cache/age", &age))
            fprintf(f, " (from --lib-cache, measured %.0f s before)", age);
        fputc('\n', f);
    }
    if (summary && r->n) {
        kg_family_row rows[KG_FAMILY_COUNT];
        kg_report_families(r, rows);
        fprintf(f, "\nper family (medians over correct, timed kernels; the paper's Table I):\n");
        fprintf(f, "  %-24s %8s %8s %8s %8s %6s\n", "family", "kernels", "E_lib", "E_best", "rho", "SLOW");
        for (int k = 0; k < KG_FAMILY_COUNT; k++) {
            if (!rows[k].n)
                continue;
            char e[16], b[16], h[16];
            snprintf(e, sizeof e, isnan(rows[k].e_lib) ? "-" : "%.2f", rows[k].e_lib);
            snprintf(b, sizeof b, isnan(rows[k].e_best) ? "-" : "%.2f", rows[k].e_best);
            snprintf(h, sizeof h, isnan(rows[k].rho) ? "-" : "%.2f", rows[k].rho);
            fprintf(f, "  %-24s %8d %8s %8s %8s %6d\n", kg_family_name((kg_family)k), rows[k].n, e, b, h,
                    rows[k].n_slow);
        }
        int n_slow = 0;
        for (int i = 0; i < r->n; i++)
            n_slow += r->results[i].verdict == KG_V_SLOW;
        fprintf(f, "\npasses-but-slow: %d correct kernel%s judged SLOW%s\n", n_slow, n_slow == 1 ? "" : "s",
                n_slow ? ":" : "");
        for (int i = 0; i < r->n; i++) {
            const kg_result *x = &r->results[i];
            double t = kg_result_time(x), tb = 0;
            if (x->verdict != KG_V_SLOW)
                continue;
            kg_result_get(x, "best/time/median", &tb);
            fprintf(f, "  %-26s %s %s: %.1fx slower than %s\n", x->kernel, x->dtype, x->shape,
                    tb > 0 ? t / tb : 0.0, x->best[0] ? x->best : "the roof allows");
        }
    }
    if (r->n) {
        fprintf(f, "\nroofs (%s): copy %.2f, read %.2f, write %.2f, triad %.2f TB/s", r->roofs.source,
                r->roofs.bw / 1e12, (r->roofs.bw_read > 0 ? r->roofs.bw_read : r->roofs.bw) / 1e12,
                (r->roofs.bw_write > 0 ? r->roofs.bw_write : r->roofs.bw) / 1e12,
                kg_roof_rate(&r->roofs, 2, 1) / 1e12);
        if (r->roofs.l2_credit > 0)
            fprintf(f, ", L2 write credit %.0f MB", r->roofs.l2_credit / 1e6);
        if (r->roofs.mma[KG_FP16] > 0)
            fprintf(f, ", fp16 %.0f / bf16 %.0f TFLOP/s", r->roofs.mma[KG_FP16] / 1e12,
                    r->roofs.mma[KG_BF16] / 1e12);
        fprintf(f,
                "\ngate: OK if E_best >= %.2f or rho >= %.2f (E_best = t_best / t); a launch call's host time "
                "is free to max(%.0f us, the GPU time) beyond the GPU time\n",
                r->gate.e_ok, r->gate.rho_ok, r->gate.host_allowance * 1e6);
    }
    if (r->incomplete[0])
        fprintf(f, "incomplete: %s\n", r->incomplete);
}

static cJSON *roofs_json(const kg_roofs *ro)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "source", ro->source);
    cJSON_AddNumberToObject(o, "bandwidth", ro->bw);
    cJSON_AddNumberToObject(o, "read_bandwidth", ro->bw_read);
    cJSON_AddNumberToObject(o, "write_bandwidth", ro->bw_write);
    cJSON_AddNumberToObject(o, "triad_bandwidth", ro->bw_triad);
    cJSON_AddNumberToObject(o, "l2_write_credit", ro->l2_credit);
    cJSON *m = cJSON_AddObjectToObject(o, "mma");
    cJSON_AddNumberToObject(m, "fp16", ro->mma[KG_FP16]);
    cJSON_AddNumberToObject(m, "bf16", ro->mma[KG_BF16]);
    cJSON_AddNumberToObject(m, "tf32", ro->mma[KG_FP32]);
    cJSON_AddNumberToObject(o, "fp32", ro->fp32);
    return o;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* A string field of a results file (anyone's: cleaned, base/text.h). */
static void str(const cJSON *o, const char *k, char *dst, size_t size)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    kg_text_clean(dst, size, cJSON_IsString(v) ? v->valuestring : "");
}

/* One result as the object of a results document's "results" array. */
static cJSON *result_json(const kg_result *x)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kernel", x->kernel);
    cJSON_AddStringToObject(o, "summary", x->summary);
    cJSON_AddStringToObject(o, "source", x->source);
    cJSON_AddStringToObject(o, "op", x->op);
    cJSON_AddStringToObject(o, "dtype", x->dtype);
    if (x->index_dtype[0])
        cJSON_AddStringToObject(o, "index_dtype", x->index_dtype);
    cJSON_AddStringToObject(o, "shape", x->shape);
    cJSON_AddStringToObject(o, "verdict", kg_verdict_name(x->verdict));
    cJSON *fl = cJSON_AddArrayToObject(o, "flags");
    for (int b = 0; b < KG_FLAG_COUNT; b++)
        if (x->flags & (1u << b))
            cJSON_AddItemToArray(fl, cJSON_CreateString(kg_flag_name(b)));
    cJSON_AddStringToObject(o, "reason", x->reason);
    cJSON_AddStringToObject(o, "detail", x->detail);
    cJSON_AddStringToObject(o, "baseline", x->baseline);
    cJSON_AddStringToObject(o, "baseline_note", x->baseline_note);
    cJSON_AddStringToObject(o, "best", x->best);
    cJSON_AddStringToObject(o, "extra_shapes", x->extra_shapes);
    cJSON *libs = cJSON_AddArrayToObject(o, "libraries");
    for (int k = 0; k < x->n_libs; k++) {
        cJSON *l = cJSON_CreateObject();
        cJSON_AddStringToObject(l, "name", x->libs[k].name);
        cJSON_AddStringToObject(l, "status", kg_lib_status_name(x->libs[k].status));
        cJSON_AddStringToObject(l, "note", x->libs[k].note);
        if (x->libs[k].status == KG_LIB_OK) {
            cJSON_AddNumberToObject(l, "time", x->libs[k].t);
            cJSON_AddNumberToObject(l, "ci_lo", x->libs[k].lo);
            cJSON_AddNumberToObject(l, "ci_hi", x->libs[k].hi);
        }
        cJSON_AddItemToArray(libs, l);
    }
    cJSON_AddStringToObject(o, "stop", x->stop);
    if (x->diag)
        cJSON_AddItemToObject(o, "diagnosis", kg_diagnosis_to_cjson(x->diag));
    cJSON *s = cJSON_AddObjectToObject(o, "summaries");
    for (int k = 0; k < x->n_sums; k++) {
        cJSON *v = cJSON_AddObjectToObject(s, x->sums[k].name);
        cJSON_AddNumberToObject(v, "value", isfinite(x->sums[k].value) ? x->sums[k].value : 0);
        cJSON_AddStringToObject(v, "unit", x->sums[k].unit);
    }
    return o;
}

char *kg_result_to_json(const kg_result *x)
{
    cJSON *o = result_json(x);
    kg_json_clean(o);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}

char *kg_report_to_json(const kg_report *r)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "schema", SCHEMA);
    cJSON_AddStringToObject(root, "command", r->command);
    cJSON_AddStringToObject(root, "commit", r->commit);
    cJSON_AddStringToObject(root, "date", r->date);
    cJSON *d = cJSON_AddObjectToObject(root, "device");
    cJSON_AddStringToObject(d, "name", r->device);
    cJSON_AddStringToObject(d, "uuid", r->device_uuid);
    cJSON_AddStringToObject(d, "driver", r->driver);
    cJSON_AddNumberToObject(d, "sm_count", r->sm_count);
    cJSON_AddNumberToObject(d, "cc_major", r->cc_major);
    cJSON_AddNumberToObject(d, "cc_minor", r->cc_minor);
    cJSON_AddItemToObject(root, "roofs", roofs_json(&r->roofs));
    {
        char seed[32];
        snprintf(seed, sizeof seed, "%llu", r->shapes_seed);
        cJSON_AddStringToObject(root, "extra_shapes_seed", seed);
    }
    cJSON *g = cJSON_AddObjectToObject(root, "gate");
    cJSON_AddNumberToObject(g, "e_ok", r->gate.e_ok);
    cJSON_AddNumberToObject(g, "rho_ok", r->gate.rho_ok);
    cJSON_AddNumberToObject(g, "rho_impossible", r->gate.rho_impossible);
    cJSON_AddNumberToObject(g, "suspect_e", r->gate.suspect_e);
    cJSON_AddNumberToObject(g, "suspect_rho", r->gate.suspect_rho);
    cJSON_AddNumberToObject(g, "band", r->gate.band);
    cJSON_AddNumberToObject(g, "rho_fair", r->gate.rho_fair);
    cJSON_AddNumberToObject(g, "vendor_share", r->gate.vendor_share);
    cJSON_AddNumberToObject(g, "vendor_compute", r->gate.vendor_compute);
    cJSON_AddNumberToObject(g, "vendor_all", r->gate.vendor_all);
    cJSON_AddNumberToObject(g, "host_allowance", r->gate.host_allowance);
    if (r->incomplete[0])
        cJSON_AddStringToObject(root, "incomplete", r->incomplete);
    if (r->recorded[0])
        cJSON_AddStringToObject(root, "recorded", r->recorded);
    cJSON *arr = cJSON_AddArrayToObject(root, "results");
    for (int i = 0; i < r->n; i++)
        cJSON_AddItemToArray(arr, result_json(&r->results[i]));
    kg_json_clean(root); /* the command line, device and paths too */
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

int kg_report_write_json(const kg_report *r, const char *path, kg_err *err)
{
    char *text = kg_report_to_json(r);
    if (!text)
        return kg_err_set(err, KG_EXIT_IO, "cannot serialize the report");
    kg_write_file_atomic(path, text, err);
    free(text);
    return err->code;
}

int kg_report_is_batch(const char *text)
{
    const char *nl = strchr(text, '\n');
    size_t len = nl ? (size_t)(nl - text) : strlen(text);
    const char *s = strstr(text, "\"kgate.batch/");
    return s && (size_t)(s - text) < len;
}

int kg_report_answer(const char *line, const char *path, int n, kg_batch_answer *a, kg_err *err)
{
    memset(a, 0, sizeof *a);
    a->code = -1;
    kg_report_init(&a->rep);
    cJSON *o = cJSON_Parse(line);
    if (!o)
        return 1; /* torn */
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "schema"), *id = cJSON_GetObjectItemCaseSensitive(o, "id"),
                *code = cJSON_GetObjectItemCaseSensitive(o, "exit"), *e = cJSON_GetObjectItemCaseSensitive(o, "error");
    cJSON *chk = cJSON_GetObjectItemCaseSensitive(o, "check");
    int rc = 0;
    if (!cJSON_IsString(s) || strcmp(s->valuestring, KG_BATCH_SCHEMA) != 0) {
        rc = kg_err_set(err, KG_EXIT_IO, "%s:%d: schema %.40s, this kgate reads %s", path, n,
                        cJSON_IsString(s) ? s->valuestring : "(none)", KG_BATCH_SCHEMA);
    } else if (cJSON_GetObjectItemCaseSensitive(o, "event")) {
        a->event = 1;
    } else {
        if (cJSON_IsString(id))
            kg_text_clean(a->id, sizeof a->id, id->valuestring);
        if (cJSON_IsNumber(code))
            a->code = code->valueint;
        if (cJSON_IsString(e))
            kg_text_clean(a->error, sizeof a->error, e->valuestring);
        char *doc = cJSON_IsObject(chk) ? cJSON_PrintUnformatted(chk) : NULL;
        kg_err de = {0, ""};
        if (doc && kg_report_from_json(doc, path, &a->rep, &de) == 0) {
            a->has_check = 1;
        } else if (doc) {
            a->doc_code = de.code ? de.code : KG_EXIT_IO;
            snprintf(a->doc_error, sizeof a->doc_error, "%.300s", de.msg);
        }
        free(doc);
    }
    cJSON_Delete(o);
    return rc;
}

int kg_report_merge(kg_report *dst, kg_report *src, kg_err *err)
{
    if (dst->n == 0 && !dst->device[0]) { /* src's header, dst's results */
        kg_result *keep = dst->results;
        int n = dst->n, cap = dst->cap;
        *dst = *src;
        dst->results = keep;
        dst->n = n;
        dst->cap = cap;
    }
    int rc = 0;
    for (int i = 0; i < src->n && !rc; i++)
        if (!kg_report_add(dst, &src->results[i]))
            rc = kg_err_set(err, KG_EXIT_ENV, "out of memory");
    free(src->results); /* the diagnoses moved to dst */
    src->results = NULL;
    src->n = src->cap = 0;
    return rc;
}

typedef struct batch_read {
    const char *path;
    kg_report *r;
    kg_err *err;
    int line;
} batch_read;

/* One line of a batch results file: its check document's results join r. */
static int batch_line(void *ud, const char *l)
{
    batch_read *b = ud;
    kg_batch_answer a;
    int line = ++b->line;
    int rc = kg_report_answer(l, b->path, line, &a, b->err);
    if (rc == 1 || (!rc && a.event))
        return 0; /* torn, or a service's progress line */
    if (!rc && a.doc_error[0])
        rc = kg_err_set(b->err, a.doc_code, "%s:%d: %s", b->path, line, a.doc_error);
    if (!rc && a.has_check)
        rc = kg_report_merge(b->r, &a.rep, b->err);
    kg_report_free(&a.rep);
    return rc;
}

/* Every job's check document of a batch results file (store/batch.h), as one
 * report: the header of the first, the results of all, in file order (a
 * torn line is skipped). A line of another schema is an error naming it. */
static int read_batch(const char *path, kg_report *r, kg_err *err)
{
    batch_read b = {path, r, err, 0};
    int torn = 0;
    kg_report_init(r);
    return kg_results_each(path, batch_line, &b, &torn, err);
}

int kg_report_read_json(const char *path, kg_report *r, kg_err *err)
{
    int fd = kg_open_regular(path, O_RDONLY, err); /* a FIFO would block the open */
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    char *buf = NULL;
    long n = -1;
    kg_report_init(r);
    if (!f) {
        if (fd >= 0)
            close(fd);
        return err->code ? err->code : kg_err_set(err, KG_EXIT_IO, "cannot open %s: %s", path, strerror(errno));
    }
    if (fseek(f, 0, SEEK_END) == 0)
        n = ftell(f);
    if (n < 0 || n > (1L << 30) || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return kg_err_set(err, KG_EXIT_IO, "%s: not a regular file of at most 1 GiB", path);
    }
    buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return kg_err_set(err, KG_EXIT_IO, "cannot read %s", path);
    }
    fclose(f);
    buf[n] = '\0';
    if (kg_report_is_batch(buf)) {
        free(buf);
        return read_batch(path, r, err);
    }
    int rc = kg_report_from_json(buf, path, r, err);
    free(buf);
    return rc;
}

/* The device and the roofs of a results file. */
static void report_device(const cJSON *root, kg_report *r)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "device");
    str(d, "name", r->device, sizeof r->device);
    str(d, "uuid", r->device_uuid, sizeof r->device_uuid);
    str(d, "driver", r->driver, sizeof r->driver);
    r->sm_count = (int)num(d, "sm_count");
    r->cc_major = (int)num(d, "cc_major");
    r->cc_minor = (int)num(d, "cc_minor");
    const cJSON *ro = cJSON_GetObjectItemCaseSensitive(root, "roofs");
    str(ro, "source", r->roofs.source, sizeof r->roofs.source);
    r->roofs.bw = num(ro, "bandwidth");
    r->roofs.bw_read = num(ro, "read_bandwidth");
    r->roofs.bw_write = num(ro, "write_bandwidth");
    r->roofs.bw_triad = num(ro, "triad_bandwidth");
    r->roofs.l2_credit = num(ro, "l2_write_credit");
    r->roofs.fp32 = num(ro, "fp32");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(ro, "mma");
    r->roofs.mma[KG_FP16] = num(m, "fp16");
    r->roofs.mma[KG_BF16] = num(m, "bf16");
    r->roofs.mma[KG_FP32] = num(m, "tf32");
}

/* The gate a results file was judged with, when it says (an older kgate's
 * results may not: kg_report_init's then). */
static void report_gate(const cJSON *root, kg_report *r)
{
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(root, "gate");
    if (!g)
        return;
    r->gate.e_ok = num(g, "e_ok");
    r->gate.rho_ok = num(g, "rho_ok");
    r->gate.rho_impossible = num(g, "rho_impossible");
    r->gate.suspect_e = num(g, "suspect_e");
    r->gate.suspect_rho = num(g, "suspect_rho");
    r->gate.band = num(g, "band");
    /* absent from an older kgate's results: kg_report_init's (the
     * defaults, a C launch's), but rho_fair, which was rho_ok then */
    const cJSON *ha = cJSON_GetObjectItemCaseSensitive(g, "host_allowance");
    if (cJSON_IsNumber(ha))
        r->gate.host_allowance = ha->valuedouble;
    const cJSON *fair = cJSON_GetObjectItemCaseSensitive(g, "rho_fair");
    r->gate.rho_fair = cJSON_IsNumber(fair) ? fair->valuedouble : r->gate.rho_ok;
    const cJSON *vs = cJSON_GetObjectItemCaseSensitive(g, "vendor_share");
    if (cJSON_IsNumber(vs))
        r->gate.vendor_share = vs->valuedouble;
    const cJSON *vc = cJSON_GetObjectItemCaseSensitive(g, "vendor_compute"),
                *va = cJSON_GetObjectItemCaseSensitive(g, "vendor_all");
    if (cJSON_IsNumber(vc))
        r->gate.vendor_compute = vc->valuedouble;
    if (cJSON_IsNumber(va))
        r->gate.vendor_all = va->valuedouble;
}

/* One result of a results file into *x (its diagnosis allocated). */
static int report_result(const cJSON *item, const char *path, kg_result *x, kg_err *err)
{
    char v[32];
    memset(x, 0, sizeof *x);
    str(item, "kernel", x->kernel, sizeof x->kernel);
    str(item, "summary", x->summary, sizeof x->summary);
    str(item, "source", x->source, sizeof x->source);
    str(item, "op", x->op, sizeof x->op);
    str(item, "dtype", x->dtype, sizeof x->dtype);
    str(item, "index_dtype", x->index_dtype, sizeof x->index_dtype);
    str(item, "best", x->best, sizeof x->best);
    str(item, "extra_shapes", x->extra_shapes, sizeof x->extra_shapes);
    str(item, "shape", x->shape, sizeof x->shape);
    str(item, "reason", x->reason, sizeof x->reason);
    str(item, "detail", x->detail, sizeof x->detail);
    str(item, "baseline", x->baseline, sizeof x->baseline);
    str(item, "baseline_note", x->baseline_note, sizeof x->baseline_note);
    str(item, "stop", x->stop, sizeof x->stop);
    str(item, "verdict", v, sizeof v);
    if (kg_verdict_parse(v, &x->verdict)) {
        return kg_err_set(err, KG_EXIT_IO, "%s: unknown verdict '%s'", path, v);
    }
    const cJSON *fl;
    cJSON_ArrayForEach(fl, cJSON_GetObjectItemCaseSensitive(item, "flags"))
    {
        int b = cJSON_IsString(fl) ? kg_flag_parse(fl->valuestring) : -1;
        if (b >= 0)
            x->flags |= 1u << b;
    }
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(item, "summaries"))
        kg_result_set(x, s->string, num(s, "value"));
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(item, "libraries"))
    {
        if (x->n_libs == KG_MAX_LIBPATHS)
            break;
        kg_libpath *p = &x->libs[x->n_libs++];
        char st[16];
        str(l, "name", p->name, sizeof p->name);
        str(l, "note", p->note, sizeof p->note);
        str(l, "status", st, sizeof st);
        p->status = strcmp(st, "ok") == 0 ? KG_LIB_OK : strcmp(st, "incorrect") == 0 ? KG_LIB_WRONG
                                                                                     : KG_LIB_UNSUPPORTED;
        p->t = num(l, "time");
        p->lo = num(l, "ci_lo");
        p->hi = num(l, "ci_hi");
    }
    const cJSON *dg = cJSON_GetObjectItemCaseSensitive(item, "diagnosis");
    if (dg) {
        kg_err de = {0, ""};
        if (!(x->diag = malloc(sizeof *x->diag)))
            kg_err_set(&de, KG_EXIT_IO, "out of memory");
        else
            kg_diagnosis_from_cjson(dg, x->diag, &de);
        if (de.code) {
            free(x->diag);
            x->diag = NULL;
            return kg_err_set(err, KG_EXIT_IO, "%s: result '%s': diagnosis: %s", path, x->kernel, de.msg);
        }
    }
    return 0;
}

int kg_report_from_json(const char *text, const char *path, kg_report *r, kg_err *err)
{
    cJSON *root = NULL;
    kg_report_init(r);
    root = cJSON_Parse(text);
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
    /* version 1 files (before E_best) read the same, without the new fields */
    if (!root || !cJSON_IsString(schema) ||
        (strcmp(schema->valuestring, SCHEMA) != 0 && strcmp(schema->valuestring, "kgate.results/1") != 0)) {
        kg_err_set(err, KG_EXIT_IO, "%s: not a %s file", path, SCHEMA);
        goto out;
    }
    str(root, "command", r->command, sizeof r->command);
    str(root, "commit", r->commit, sizeof r->commit);
    str(root, "date", r->date, sizeof r->date);
    str(root, "incomplete", r->incomplete, sizeof r->incomplete);
    str(root, "recorded", r->recorded, sizeof r->recorded);
    char seed[32];
    str(root, "extra_shapes_seed", seed, sizeof seed);
    r->shapes_seed = strtoull(seed, NULL, 10);
    report_device(root, r);
    report_gate(root, r);
    const cJSON *item;
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(root, "results"))
    {
        kg_result x;
        if (report_result(item, path, &x, err))
            goto out;
        if (!kg_report_add(r, &x)) {
            free(x.diag);
            kg_err_set(err, KG_EXIT_IO, "out of memory reading %s", path);
            goto out;
        }
    }
out:
    cJSON_Delete(root);
    return err->code;
}
