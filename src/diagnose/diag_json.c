/* JSON forms of kernel facts, causes and diagnoses, and a diagnosis's note
 * (diagnose/diag_json.h). */
#include "diag_json.h"

#include "../base/text.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const kg_cause *kg_diag_top(const kg_diagnosis *d)
{
    return d && d->n_causes && d->causes[0].score >= 0.005 ? &d->causes[0] : NULL;
}

void kg_diag_note(kg_diagnosis *d, const char *fmt, const char *what)
{
    size_t u = strlen(d->note);
    if (u)
        kg_append(d->note, sizeof d->note, &u, "; ");
    kg_append(d->note, sizeof d->note, &u, fmt, what);
}

/* ----------------------------------------------------------------- write */

static void num_or_null(cJSON *o, const char *k, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

static cJSON *triple(const long long v[3])
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < 3; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i]));
    return a;
}

/* The SASS counts: X(field) in kg_sass, one list for both directions. */
#define KG_SASS_FIELDS(X)                                                                                   \
    X(ldg_128) X(ldg_64) X(ldg_narrow) X(stg_128) X(stg_narrow) X(ldgsts) X(utmaldg) X(hgmma) X(hmma)     \
        X(ldl) X(stl) X(total)

/* The launch facts: X(field, lo, hi). */
#define KG_KFACT_INTS(X)                                                                                    \
    X(launches, 0, 1e6) X(regs, -1, 65536) X(static_smem, -1, 1 << 24) X(dyn_smem, -1, 1 << 24)           \
        X(local_bytes, -1, 1 << 30) X(max_blocks_per_sm, -1, 4096) X(sms, -1, 65536)

cJSON *kg_kfacts_to_cjson(const kg_kfacts *k)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "name", k->name);
#define X(f, lo, hi) cJSON_AddNumberToObject(o, #f, k->f);
    KG_KFACT_INTS(X)
#undef X
    num_or_null(o, "time_share", k->time_share >= 0 ? k->time_share : NAN);
    cJSON_AddItemToObject(o, "grid", triple(k->grid));
    cJSON_AddItemToObject(o, "block", triple(k->block));
    num_or_null(o, "occupancy", k->occupancy);
    cJSON_AddStringToObject(o, "limiter", k->limiter);
    num_or_null(o, "waves", k->waves);
    cJSON *s = cJSON_AddObjectToObject(o, "sass");
    cJSON_AddBoolToObject(s, "found", k->sass.found);
#define X(f) cJSON_AddNumberToObject(s, #f, k->sass.f);
    KG_SASS_FIELDS(X)
#undef X
    cJSON_AddStringToObject(o, "sass_note", k->sass_note);
    cJSON *m = cJSON_AddObjectToObject(o, "metrics");
    for (int i = 0; i < k->n_m; i++)
        num_or_null(m, k->m[i].name, k->m[i].value);
    return o;
}

cJSON *kg_cause_to_cjson(const kg_cause *c)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "id", c->id);
    cJSON_AddStringToObject(o, "title", c->title ? c->title : "");
    cJSON_AddStringToObject(o, "kernel", c->kernel);
    num_or_null(o, "score", c->score);
    num_or_null(o, "saving", c->saving);
    num_or_null(o, "headroom", c->headroom);
    cJSON_AddStringToObject(o, "evidence", c->evidence);
    cJSON_AddStringToObject(o, "hint", c->hint ? c->hint : "");
    cJSON_AddStringToObject(o, "locus", c->locus ? c->locus : "");
    return o;
}

cJSON *kg_diagnosis_to_cjson(const kg_diagnosis *d)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "note", d->note);
    cJSON_AddNumberToObject(o, "passes", d->passes);
    cJSON_AddNumberToObject(o, "launches", d->launches);
    num_or_null(o, "busy_s", d->busy_s);
    num_or_null(o, "wall_s", d->wall_s);
    cJSON *ks = cJSON_AddArrayToObject(o, "kernels");
    for (int i = 0; i < d->n_kernels; i++)
        cJSON_AddItemToArray(ks, kg_kfacts_to_cjson(&d->kernels[i]));
    cJSON *cs = cJSON_AddArrayToObject(o, "causes");
    for (int i = 0; i < d->n_causes; i++)
        cJSON_AddItemToArray(cs, kg_cause_to_cjson(&d->causes[i]));
    return o;
}

/* ------------------------------------------------------------------ read */

static int str(const cJSON *o, const char *k, char *dst, size_t size, int printable, kg_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsString(v))
        return kg_err_set(err, KG_EXIT_FAIL, "'%s' is missing or not a string", k);
    if (strlen(v->valuestring) >= size)
        return kg_err_set(err, KG_EXIT_FAIL, "'%s' is longer than %zu bytes", k, size - 1);
    for (const unsigned char *s = (const unsigned char *)v->valuestring; printable && *s; s++)
        if (*s < 0x20 || *s > 0x7e)
            return kg_err_set(err, KG_EXIT_FAIL, "'%s' holds a character that is not printable ASCII", k);
    kg_text_clean(dst, size, v->valuestring); /* the others are printable ASCII already */
    return 0;
}

/* A number in [lo, hi]; null reads as NAN where allow_null. */
static int num(const cJSON *o, const char *k, double lo, double hi, int allow_null, double *out, kg_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (allow_null && cJSON_IsNull(v)) {
        *out = NAN;
        return 0;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo || v->valuedouble > hi)
        return kg_err_set(err, KG_EXIT_FAIL, "'%s' is missing or not a number in [%g, %g]", k, lo, hi);
    *out = v->valuedouble;
    return 0;
}

static int whole(const cJSON *o, const char *k, double lo, double hi, int *out, kg_err *err)
{
    double d = 0; /* set by num() whenever it returns 0 */
    if (num(o, k, lo, hi, 0, &d, err))
        return err->code;
    if (d != floor(d))
        return kg_err_set(err, KG_EXIT_FAIL, "'%s' is not a whole number", k);
    *out = (int)d;
    return 0;
}

static int read_triple(const cJSON *o, const char *k, long long v[3], kg_err *err)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != 3)
        return kg_err_set(err, KG_EXIT_FAIL, "'%s' is not an array of 3 numbers", k);
    for (int i = 0; i < 3; i++) {
        const cJSON *x = cJSON_GetArrayItem(a, i);
        if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble) || x->valuedouble < -1 ||
            x->valuedouble > 4294967295.0)
            return kg_err_set(err, KG_EXIT_FAIL, "'%s'[%d] is not a launch extent", k, i);
        v[i] = (long long)x->valuedouble;
    }
    return 0;
}

static int metric_name_ok(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
              *s == '.'))
            return 0;
    return 1;
}

int kg_kfacts_from_cjson(const cJSON *o, kg_kfacts *k, kg_err *err)
{
    double d = 0; /* set by num() whenever it returns 0 */
    kg_kfacts_init(k);
    if (!cJSON_IsObject(o))
        return kg_err_set(err, KG_EXIT_FAIL, "kernel facts are not an object");
    if (str(o, "name", k->name, sizeof k->name, 1, err))
        return err->code;
#define X(f, lo, hi)                                                                                       \
    if (whole(o, #f, lo, hi, &k->f, err))                                                                  \
        return err->code;
    KG_KFACT_INTS(X)
#undef X
    if (num(o, "time_share", 0, 1, 1, &d, err))
        return err->code;
    k->time_share = isnan(d) ? -1 : d;
    if (read_triple(o, "grid", k->grid, err) || read_triple(o, "block", k->block, err))
        return err->code;
    if (num(o, "occupancy", -1, 1, 1, &d, err))
        return err->code;
    k->occupancy = isnan(d) ? -1 : d;
    if (str(o, "limiter", k->limiter, sizeof k->limiter, 1, err))
        return err->code;
    if (num(o, "waves", -1, 1e9, 1, &d, err))
        return err->code;
    k->waves = isnan(d) ? -1 : d;
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "sass");
    if (!cJSON_IsObject(s) || !cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(s, "found")))
        return kg_err_set(err, KG_EXIT_FAIL, "'sass' is missing or has no 'found'");
    k->sass.found = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "found"));
#define X(f)                                                                                               \
    if (whole(s, #f, -1, 1e9, &k->sass.f, err))                                                            \
        return err->code;
    KG_SASS_FIELDS(X)
#undef X
    if (str(o, "sass_note", k->sass_note, sizeof k->sass_note, 1, err))
        return err->code;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "metrics"), *v;
    if (!cJSON_IsObject(m))
        return kg_err_set(err, KG_EXIT_FAIL, "'metrics' is missing or not an object");
    if (cJSON_GetArraySize(m) > KG_KMETRICS_MAX)
        return kg_err_set(err, KG_EXIT_FAIL, "more than %d metrics for one kernel", KG_KMETRICS_MAX);
    cJSON_ArrayForEach(v, m)
    {
        if (!v->string || strlen(v->string) >= sizeof k->m[0].name || !metric_name_ok(v->string))
            return kg_err_set(err, KG_EXIT_FAIL, "a metric name that is too long or not a metric name");
        if (cJSON_IsNull(v))
            continue;
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
            return kg_err_set(err, KG_EXIT_FAIL, "metric '%s' is not a finite number", v->string);
        if (!isnan(kg_kfacts_metric(k, v->string)))
            return kg_err_set(err, KG_EXIT_FAIL, "metric '%s' appears twice", v->string);
        kg_kfacts_set(k, v->string, v->valuedouble);
    }
    return 0;
}

int kg_cause_from_cjson(const cJSON *o, kg_cause *c, kg_err *err)
{
    memset(c, 0, sizeof *c);
    if (!cJSON_IsObject(o))
        return kg_err_set(err, KG_EXIT_FAIL, "a cause is not an object");
    if (str(o, "id", c->id, sizeof c->id, 1, err) || str(o, "kernel", c->kernel, sizeof c->kernel, 1, err) ||
        str(o, "evidence", c->evidence, sizeof c->evidence, 1, err) ||
        num(o, "score", 0, 1, 0, &c->score, err) || num(o, "saving", 0, 1, 0, &c->saving, err) ||
        num(o, "headroom", 1, 1e6, 0, &c->headroom, err))
        return err->code;
    c->title = kg_diag_title_of(c->id);
    c->hint = kg_diag_hint_of(c->id);
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "locus"); /* absent in results before it existed */
    c->locus = kg_diag_locus_as(c->id, cJSON_IsString(l) ? l->valuestring : NULL);
    if (!c->title)
        return kg_err_set(err, KG_EXIT_FAIL, "unknown cause '%s'", c->id);
    return 0;
}

int kg_diagnosis_from_cjson(const cJSON *o, kg_diagnosis *d, kg_err *err)
{
    memset(d, 0, sizeof *d);
    if (!cJSON_IsObject(o))
        return kg_err_set(err, KG_EXIT_FAIL, "'diagnosis' is not an object");
    if (str(o, "note", d->note, sizeof d->note, 0, err) || whole(o, "passes", 0, 1000, &d->passes, err) ||
        whole(o, "launches", 0, 1e9, &d->launches, err) || num(o, "busy_s", 0, 1e6, 1, &d->busy_s, err) ||
        num(o, "wall_s", 0, 1e6, 1, &d->wall_s, err))
        return err->code;
    if (isnan(d->busy_s))
        d->busy_s = 0;
    if (isnan(d->wall_s))
        d->wall_s = 0;
    const cJSON *ks = cJSON_GetObjectItemCaseSensitive(o, "kernels"), *cs = cJSON_GetObjectItemCaseSensitive(o, "causes"), *x;
    if (!cJSON_IsArray(ks) || !cJSON_IsArray(cs))
        return kg_err_set(err, KG_EXIT_FAIL, "'kernels' or 'causes' is missing or not an array");
    if (cJSON_GetArraySize(ks) > KG_DIAG_KERNELS_MAX || cJSON_GetArraySize(cs) > KG_CAUSES_MAX)
        return kg_err_set(err, KG_EXIT_FAIL, "more than %d kernels or %d causes", KG_DIAG_KERNELS_MAX, KG_CAUSES_MAX);
    cJSON_ArrayForEach(x, ks)
    {
        if (kg_kfacts_from_cjson(x, &d->kernels[d->n_kernels], err))
            return err->code;
        d->n_kernels++;
    }
    cJSON_ArrayForEach(x, cs)
    {
        if (kg_cause_from_cjson(x, &d->causes[d->n_causes], err))
            return err->code;
        d->n_causes++;
    }
    return 0;
}
