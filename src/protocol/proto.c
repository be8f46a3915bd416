/* The worker protocol: jobs and events to and from JSON, with validation of
 * every field the supervisor reads (docs/worker.md). */
#include "proto.h"

#include "../diagnose/diag_json.h"

#include <cjson/cJSON.h>

#include "../catalog/problem.h"
#include "../base/text.h"
#include "../catalog/tune.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *ev_names[] = {
#define X(e, s) s,
    KG_EVENTS(X)
#undef X
};

const char *kg_event_kind_name(kg_ev_kind k)
{
    return (unsigned)k < KG_EV_COUNT ? ev_names[k] : "?";
}

static const char *flush_names[] = {"read", "memset", "none"};
static const char *mode_names[] = {"list", "kernel", "library"};
static const char *subject_names[] = {"", "kernel", "lib", "best"};

void kg_job_defaults(kg_job *j)
{
    memset(j, 0, sizeof *j);
    j->trials = 3;
    j->edge = 1;
    j->seed = 1;
    j->types.index = KG_I64;
    j->flush = KG_FLUSH_READ;
    j->patched_max_s = KG_PATCHED_MAX_DEFAULT;
    kg_stop_defaults(&j->stop);
}

/* ------------------------------------------------------------------ jobs */

char *kg_job_to_json(const kg_job *j)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "proto", KG_PROTO);
    cJSON_AddStringToObject(o, "mode", mode_names[j->mode]);
    cJSON_AddStringToObject(o, "plugin", j->plugin);
    cJSON_AddStringToObject(o, "nonce", j->nonce);
    cJSON_AddBoolToObject(o, "sandbox", j->sandbox);
    if (j->scratch[0])
        cJSON_AddStringToObject(o, "scratch", j->scratch);
    cJSON_AddNumberToObject(o, "budget", j->budget_s);
    if (j->mode == KG_JOB_KERNEL)
        cJSON_AddStringToObject(o, "kernel", j->kernel);
    if (j->mode != KG_JOB_LIST && j->op) {
        if (kg_problem_of(j->op)) /* outside the catalog: the worker registers it first */
            cJSON_AddItemToObject(o, "problem", kg_problem_to_json(kg_problem_of(j->op)));
        cJSON_AddStringToObject(o, "op", j->op->name);
        cJSON_AddStringToObject(o, "dtype", kg_dtype_name(j->types.data));
        cJSON_AddStringToObject(o, "index_dtype", kg_dtype_name(j->types.index));
        cJSON *sh = cJSON_AddArrayToObject(o, "shape");
        for (int i = 0; i < j->shape.n; i++)
            cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)j->shape.d[i]));
        if (j->n_extra) {
            cJSON *ex = cJSON_AddArrayToObject(o, "extra_shapes");
            for (int k = 0; k < j->n_extra; k++) {
                cJSON *one = cJSON_CreateArray();
                for (int i = 0; i < j->extra[k].n; i++)
                    cJSON_AddItemToArray(one, cJSON_CreateNumber((double)j->extra[k].d[i]));
                cJSON_AddItemToArray(ex, one);
            }
        }
        cJSON *sc = cJSON_AddObjectToObject(o, "scalars");
        for (int i = 0; i < j->scalars.n; i++)
            cJSON_AddNumberToObject(sc, j->scalars.v[i].name, j->scalars.v[i].value);
        cJSON_AddStringToObject(o, "flush", flush_names[j->flush]);
        cJSON_AddBoolToObject(o, "hot", j->hot);
        cJSON_AddNumberToObject(o, "trials", j->trials);
        cJSON_AddBoolToObject(o, "edge", j->edge);
        cJSON_AddNumberToObject(o, "device", j->device);
        cJSON_AddBoolToObject(o, "verify_only", j->verify_only);
        cJSON_AddNumberToObject(o, "diagnose", j->diagnose);
        cJSON_AddNumberToObject(o, "patched_max", j->patched_max_s);
        if (j->torch)
            cJSON_AddNumberToObject(o, "torch", j->torch);
        if (j->n_config) {
            cJSON *cf = cJSON_AddArrayToObject(o, "config");
            for (int i = 0; i < j->n_config; i++)
                cJSON_AddItemToArray(cf, cJSON_CreateNumber((double)j->config[i]));
        }
        char seed[32];
        snprintf(seed, sizeof seed, "%llu", j->seed); /* beyond 2^53: a string */
        cJSON_AddStringToObject(o, "seed", seed);
        cJSON *st = cJSON_AddObjectToObject(o, "stop");
        cJSON_AddNumberToObject(st, "min_samples", j->stop.min_samples);
        cJSON_AddNumberToObject(st, "min_time", j->stop.min_gpu_s);
        cJSON_AddNumberToObject(st, "max_noise", j->stop.max_noise);
        cJSON_AddNumberToObject(st, "max_time", j->stop.max_wall_s);
        cJSON_AddNumberToObject(st, "max_samples", j->stop.max_samples);
    }
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}

static int get_str(const cJSON *o, const char *k, char *dst, size_t size, int required,
                   kg_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v) {
        if (required)
            return kg_err_set(err, KG_EXIT_USAGE, "job: missing '%s'", k);
        dst[0] = '\0';
        return 0;
    }
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= size)
        return kg_err_set(err, KG_EXIT_USAGE, "job: '%s' must be a string of under %zu bytes", k, size);
    snprintf(dst, size, "%s", v->valuestring);
    return 0;
}

static int get_num(const cJSON *o, const char *k, double lo, double hi, double *out, kg_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v)
        return 0; /* keep the default */
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo || v->valuedouble > hi)
        return kg_err_set(err, KG_EXIT_USAGE, "job: '%s' must be a number in [%g, %g]", k, lo, hi);
    *out = v->valuedouble;
    return 0;
}

static int get_int(const cJSON *o, const char *k, double lo, double hi, int *out, kg_err *err)
{
    double d = *out;
    if (get_num(o, k, lo, hi, &d, err))
        return err->code;
    if (d != floor(d))
        return kg_err_set(err, KG_EXIT_USAGE, "job: '%s' must be a whole number", k);
    *out = (int)d;
    return 0;
}

static int get_bool(const cJSON *o, const char *k, int *out, kg_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v)
        return 0;
    if (!cJSON_IsBool(v))
        return kg_err_set(err, KG_EXIT_USAGE, "job: '%s' must be true or false", k);
    *out = cJSON_IsTrue(v);
    return 0;
}

static int pick(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

static int parse_shape(const cJSON *sh, const kg_op *op, kg_shape *out, kg_err *err)
{
    const cJSON *d;
    int n = 0;
    if (!cJSON_IsArray(sh) || cJSON_GetArraySize(sh) != op->n_dims)
        return kg_err_set(err, KG_EXIT_USAGE, "job: a shape must hold %d extents (%s)", op->n_dims,
                          op->dims);
    cJSON_ArrayForEach(d, sh)
    {
        if (!cJSON_IsNumber(d) || d->valuedouble < 0 || d->valuedouble > 2147483648.0 ||
            d->valuedouble != floor(d->valuedouble))
            return kg_err_set(err, KG_EXIT_USAGE, "job: shape extents are whole numbers in [1, 2^31] (0 where the operator's shape rule admits it)");
        out->d[n++] = (int64_t)d->valuedouble;
    }
    out->n = n;
    /* positive extents, or what the operator's own check admits */
    return kg_shape_check(op, out, err);
}

/* The job's header: protocol, mode, plugin, nonce, sandbox, budget, scratch. */
static int job_header(const cJSON *o, kg_job *j, kg_err *err)
{
    char buf[PATH_MAX];
    if (get_str(o, "proto", buf, sizeof buf, 1, err))
        return err->code;
    if (strcmp(buf, KG_PROTO) != 0)
        return kg_err_set(err, KG_EXIT_USAGE, "job: protocol '%s', this worker speaks %s", buf, KG_PROTO);
    if (get_str(o, "mode", buf, sizeof buf, 1, err))
        return err->code;
    int m = pick(buf, mode_names, 3);
    if (m < 0)
        return kg_err_set(err, KG_EXIT_USAGE, "job: unknown mode '%s'", buf);
    j->mode = (kg_job_mode)m;
    if (get_str(o, "plugin", j->plugin, sizeof j->plugin, j->mode != KG_JOB_LIBRARY, err) ||
        get_str(o, "nonce", j->nonce, sizeof j->nonce, 0, err) || get_bool(o, "sandbox", &j->sandbox, err) || get_num(o, "budget", 0, 1e7, &j->budget_s, err) ||
        get_str(o, "scratch", j->scratch, sizeof j->scratch, j->sandbox, err))
        return err->code;
    if (j->mode == KG_JOB_KERNEL && get_str(o, "kernel", j->kernel, sizeof j->kernel, 1, err))
        return err->code;
    return 0;
}

/* What the job measures: its problem (registered), operator, dtypes, shape
 * and extra shapes. */
static int job_subject(const cJSON *o, kg_job *j, kg_err *err)
{
    char buf[PATH_MAX];
    if (cJSON_GetObjectItemCaseSensitive(o, "problem")) {
        kg_problem pb;
        const kg_op *pop;
        kg_err perr = {0, ""};
        if (kg_problem_from_json(cJSON_GetObjectItemCaseSensitive(o, "problem"), &pb, &perr) ||
            kg_problem_register(&pb, &pop, &perr))
            return kg_err_set(err, KG_EXIT_USAGE, "job: %s", perr.msg);
    }
    if (get_str(o, "op", buf, sizeof buf, 1, err))
        return err->code;
    if (!(j->op = kg_op_find(buf)))
        return kg_err_set(err, KG_EXIT_USAGE, "job: unknown operator '%s'", buf);
    if (get_str(o, "dtype", buf, sizeof buf, 1, err))
        return err->code;
    if (kg_dtype_parse(buf, &j->types.data) || !kg_op_has_dtype(j->op, j->types.data))
        return kg_err_set(err, KG_EXIT_USAGE, "job: %s does not take dtype '%s'", j->op->name, buf);
    if (get_str(o, "index_dtype", buf, sizeof buf, 0, err))
        return err->code;
    if (buf[0] && (kg_dtype_parse(buf, &j->types.index) || !kg_dtype_is_int(j->types.index)))
        return kg_err_set(err, KG_EXIT_USAGE, "job: index_dtype '%s' is not int32 or int64", buf);
    if (parse_shape(cJSON_GetObjectItemCaseSensitive(o, "shape"), j->op, &j->shape, err))
        return err->code;
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(o, "extra_shapes"), *one;
    if (ex && (!cJSON_IsArray(ex) || cJSON_GetArraySize(ex) > KG_MAX_EXTRA))
        return kg_err_set(err, KG_EXIT_USAGE, "job: 'extra_shapes' must be an array of at most %d shapes",
                          KG_MAX_EXTRA);
    cJSON_ArrayForEach(one, ex)
    {
        if (parse_shape(one, j->op, &j->extra[j->n_extra], err))
            return err->code;
        j->n_extra++;
    }
    return 0;
}

/* The operator's scalars: its defaults, overridden by the job's "scalars". */
static int job_scalars(const cJSON *o, kg_job *j, kg_err *err)
{
    kg_scalars_default(j->op, &j->scalars);
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(o, "scalars"), *v;
    if (sc && !cJSON_IsObject(sc))
        return kg_err_set(err, KG_EXIT_USAGE, "job: 'scalars' must be an object");
    cJSON_ArrayForEach(v, sc)
    {
        int k = -1;
        for (int i = 0; i < j->scalars.n; i++)
            if (strcmp(j->scalars.v[i].name, v->string) == 0)
                k = i;
        if (k < 0 || !cJSON_IsNumber(v) || !isfinite(v->valuedouble))
            return kg_err_set(err, KG_EXIT_USAGE, "job: scalar '%s' is not a number %s takes", v->string,
                              j->op->name);
        j->scalars.v[k].value = v->valuedouble;
    }
    return 0;
}

/* How the job measures: flush, hot, trials, edge, device, verify_only,
 * diagnose, patched_max, torch, a tuning config and the seed. */
static int job_knobs(const cJSON *o, kg_job *j, kg_err *err)
{
    char buf[PATH_MAX];
    if (get_str(o, "flush", buf, sizeof buf, 0, err))
        return err->code;
    if (buf[0]) {
        int f = pick(buf, flush_names, 3);
        if (f < 0)
            return kg_err_set(err, KG_EXIT_USAGE, "job: unknown flush '%s'", buf);
        j->flush = (kg_flush)f;
    }
    if (get_bool(o, "hot", &j->hot, err) || get_int(o, "trials", 1, 1000, &j->trials, err) ||
        get_bool(o, "edge", &j->edge, err) || get_int(o, "device", 0, 1023, &j->device, err) ||
        get_bool(o, "verify_only", &j->verify_only, err) || get_int(o, "diagnose", 0, 2, &j->diagnose, err) ||
        get_num(o, "patched_max", 0, 3600, &j->patched_max_s, err) || get_int(o, "torch", 0, 2, &j->torch, err))
        return err->code;
    const cJSON *cf = cJSON_GetObjectItemCaseSensitive(o, "config"), *x;
    if (cf && (!cJSON_IsArray(cf) || cJSON_GetArraySize(cf) > 16 || cJSON_GetArraySize(cf) < 1))
        return kg_err_set(err, KG_EXIT_USAGE, "job: 'config' must be an array of 1 to 16 whole numbers");
    cJSON_ArrayForEach(x, cf)
    {
        if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble) || fabs(x->valuedouble) > 9e15)
            return kg_err_set(err, KG_EXIT_USAGE, "job: 'config' holds a value that is not a whole number");
        j->config[j->n_config++] = (int64_t)x->valuedouble;
    }
    if (get_str(o, "seed", buf, sizeof buf, 0, err))
        return err->code;
    if (buf[0]) {
        char *end;
        j->seed = strtoull(buf, &end, 10);
        if (*end || end == buf)
            return kg_err_set(err, KG_EXIT_USAGE, "job: seed '%s' is not a whole number", buf);
    }
    return 0;
}

/* The stopping rule's overrides ("stop"). */
static int job_stop(const cJSON *o, kg_job *j, kg_err *err)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "stop");
    if (st && !cJSON_IsObject(st))
        return kg_err_set(err, KG_EXIT_USAGE, "job: 'stop' must be an object");
    if (st && (get_int(st, "min_samples", 1, 1e6, &j->stop.min_samples, err) ||
               get_num(st, "min_time", 0, 3600, &j->stop.min_gpu_s, err) ||
               get_num(st, "max_noise", 0, 1, &j->stop.max_noise, err) ||
               get_num(st, "max_time", 0.001, 3600, &j->stop.max_wall_s, err) ||
               get_int(st, "max_samples", 1, 1e7, &j->stop.max_samples, err)))
        return err->code;
    return 0;
}

int kg_job_from_json(const char *text, kg_job *j, kg_err *err)
{
    kg_job_defaults(j);
    if (strlen(text) > KG_JOB_MAX)
        return kg_err_set(err, KG_EXIT_USAGE, "job: longer than %d bytes", KG_JOB_MAX);
    cJSON *o = cJSON_Parse(text);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return kg_err_set(err, KG_EXIT_USAGE, "job: not a JSON object");
    }
    if (!job_header(o, j, err) && j->mode != KG_JOB_LIST && !job_subject(o, j, err) && !job_scalars(o, j, err) &&
        !job_knobs(o, j, err))
        job_stop(o, j, err);
    cJSON_Delete(o);
    return err->code;
}

/* ---------------------------------------------------------------- events */

static void add_subject(cJSON *o, const kg_event *e)
{
    if (e->subject == KG_SUBJ_NONE)
        return;
    cJSON_AddStringToObject(o, "subject", subject_names[e->subject]);
    if (e->subject == KG_SUBJ_LIB || (e->subject == KG_SUBJ_BEST && e->path[0]))
        cJSON_AddStringToObject(o, "path", e->path);
}

static void add_num(cJSON *o, const char *k, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

char *kg_event_to_json(const kg_event *e)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "ev", kg_event_kind_name(e->kind));
    add_subject(o, e);
    switch (e->kind) {
    case KG_EV_HELLO:
        cJSON_AddStringToObject(o, "proto", KG_PROTO);
        cJSON_AddStringToObject(o, "device", e->device);
        cJSON_AddNumberToObject(o, "pid", (double)e->pid);
        break;
    case KG_EV_TABLE: {
        if (e->problem)
            cJSON_AddItemToObject(o, "problem", kg_problem_to_json(e->problem));
        cJSON *arr = cJSON_AddArrayToObject(o, "kernels");
        for (int i = 0; i < e->n_entries; i++) {
            const kg_table_entry *t = &e->entries[i];
            cJSON *k = cJSON_CreateObject();
            cJSON_AddStringToObject(k, "name", t->name);
            cJSON_AddStringToObject(k, "op", t->op);
            cJSON_AddStringToObject(k, "dtype", t->dtype);
            cJSON_AddStringToObject(k, "index_dtype", t->index_dtype);
            cJSON_AddStringToObject(k, "summary", t->summary);
            cJSON_AddStringToObject(k, "scalars", t->scalars);
            if (t->space[0])
                cJSON_AddStringToObject(k, "space", t->space);
            cJSON_AddItemToArray(arr, k);
        }
        break;
    }
    case KG_EV_SUBJECT:
    case KG_EV_UNSUPPORTED:
    case KG_EV_FAIL:
    case KG_EV_ERROR:
        if (e->kind == KG_EV_FAIL)
            cJSON_AddStringToObject(o, "kind", e->fail_kind);
        if (e->kind == KG_EV_ERROR) {
            cJSON_AddNumberToObject(o, "code", e->code);
            cJSON_AddStringToObject(o, "nonce", e->nonce);
        }
        cJSON_AddStringToObject(o, e->kind == KG_EV_SUBJECT ? "note" : "msg", e->text);
        break;
    case KG_EV_CHECK:
        cJSON_AddStringToObject(o, "what", e->what);
        cJSON_AddBoolToObject(o, "pass", e->pass);
        add_num(o, "rel_l2", e->rel_l2);
        add_num(o, "max_abs_err", e->max_abs_err);
        cJSON_AddBoolToObject(o, "inputs_mutated", e->mutated);
        cJSON_AddStringToObject(o, "desc", e->text);
        break;
    case KG_EV_SUM:
        cJSON_AddStringToObject(o, "name", e->name);
        add_num(o, "value", e->value);
        cJSON_AddStringToObject(o, "unit", e->unit);
        break;
    case KG_EV_TIMING:
        cJSON_AddStringToObject(o, "stop", e->stop);
        cJSON_AddBoolToObject(o, "escaped", e->escaped);
        cJSON_AddNumberToObject(o, "throttled", e->throttled);
        cJSON_AddStringToObject(o, "note", e->text);
        break;
    case KG_EV_KERNEL:
        if (e->kf)
            cJSON_AddItemToObject(o, "facts", kg_kfacts_to_cjson(e->kf));
        break;
    case KG_EV_DIAG:
        cJSON_AddStringToObject(o, "note", e->text);
        cJSON_AddNumberToObject(o, "passes", e->passes);
        cJSON_AddNumberToObject(o, "launches", e->launches);
        add_num(o, "busy_s", e->busy_s);
        add_num(o, "wall_s", e->wall_s);
        break;
    case KG_EV_DONE:
        cJSON_AddNumberToObject(o, "code", e->code);
        cJSON_AddStringToObject(o, "nonce", e->nonce);
        if (e->unsupported)
            cJSON_AddBoolToObject(o, "unsupported", 1);
        break;
    default:
        break;
    }
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}

void kg_event_free(kg_event *e)
{
    free(e->entries);
    e->entries = NULL;
    free(e->kf);
    e->kf = NULL;
    free(e->problem);
    e->problem = NULL;
    e->n_entries = 0;
}

/* Field readers for events: a missing or mistyped field is a violation. */
static int ev_str(const cJSON *o, const char *k, char *dst, size_t size, kg_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsString(v))
        return kg_err_set(err, KG_EXIT_FAIL, "'%s' is missing or not a string", k);
    if (strlen(v->valuestring) >= size)
        return kg_err_set(err, KG_EXIT_FAIL, "'%s' is longer than %zu bytes", k, size - 1);
    /* a worker's text is one printable line of UTF-8 wherever it is shown
     * (candidate code may write on the channel): base/text.h's rule */
    kg_text_clean(dst, size, v->valuestring);
    return 0;
}

static int ev_bool(const cJSON *o, const char *k, int *out, kg_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsBool(v))
        return kg_err_set(err, KG_EXIT_FAIL, "'%s' is missing or not a boolean", k);
    *out = cJSON_IsTrue(v);
    return 0;
}

/* A number, or null for a value that was not finite (allow_null). */
static int ev_num(const cJSON *o, const char *k, int allow_null, double *out, kg_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (allow_null && cJSON_IsNull(v)) {
        *out = NAN;
        return 0;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return kg_err_set(err, KG_EXIT_FAIL, "'%s' is missing or not a finite number", k);
    *out = v->valuedouble;
    return 0;
}

static int ev_int(const cJSON *o, const char *k, double lo, double hi, int *out, kg_err *err)
{
    double d = 0;
    if (ev_num(o, k, 0, &d, err))
        return err->code;
    if (d != floor(d) || d < lo || d > hi)
        return kg_err_set(err, KG_EXIT_FAIL, "'%s' is not a whole number in [%g, %g]", k, lo, hi);
    *out = (int)d;
    return 0;
}

/* A name: [A-Za-z0-9_./-], non-empty. */
static int name_ok(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '.' || *s == '/' || *s == '-'))
            return 0;
    return 1;
}

static int ev_subject(const cJSON *o, kg_event *e, int required, kg_err *err)
{
    char s[16];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "subject");
    if (!v && !required)
        return 0;
    if (ev_str(o, "subject", s, sizeof s, err))
        return err->code;
    int k = pick(s, subject_names, 4);
    if (k <= 0)
        return kg_err_set(err, KG_EXIT_FAIL, "unknown subject '%s'", s);
    e->subject = (kg_subject)k;
    if (e->subject == KG_SUBJ_LIB || (e->subject == KG_SUBJ_BEST && cJSON_GetObjectItemCaseSensitive(o, "path"))) {
        if (ev_str(o, "path", e->path, sizeof e->path, err))
            return err->code;
        if (!name_ok(e->path))
            return kg_err_set(err, KG_EXIT_FAIL, "bad path name '%s'", e->path);
    }
    return 0;
}

static int parse_table(const cJSON *o, kg_event *e, kg_err *err)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "kernels"), *k;
    const cJSON *pj = cJSON_GetObjectItemCaseSensitive(o, "problem");
    if (!cJSON_IsArray(arr))
        return kg_err_set(err, KG_EXIT_FAIL, "'kernels' is missing or not an array");
    if (pj) {
        /* a problem outside the catalog: registered, so that its kernels name an operator */
        const kg_op *pop;
        kg_err perr = {0, ""};
        if (!(e->problem = malloc(sizeof *e->problem)))
            return kg_err_set(err, KG_EXIT_FAIL, "out of memory for a problem");
        if (kg_problem_from_json(pj, e->problem, &perr) || kg_problem_register(e->problem, &pop, &perr))
            return kg_err_set(err, KG_EXIT_FAIL, "%s", perr.msg);
    }
    int n = cJSON_GetArraySize(arr);
    if (n > KG_TABLE_MAX)
        return kg_err_set(err, KG_EXIT_FAIL, "table of %d kernels (at most %d)", n, KG_TABLE_MAX);
    e->entries = calloc((size_t)(n ? n : 1), sizeof *e->entries);
    if (!e->entries)
        return kg_err_set(err, KG_EXIT_FAIL, "out of memory for a table of %d kernels", n);
    cJSON_ArrayForEach(k, arr)
    {
        kg_table_entry *t = &e->entries[e->n_entries];
        if (!cJSON_IsObject(k))
            return kg_err_set(err, KG_EXIT_FAIL, "table entry %d is not an object", e->n_entries);
        if (ev_str(k, "name", t->name, sizeof t->name, err) ||
            ev_str(k, "op", t->op, sizeof t->op, err) ||
            ev_str(k, "dtype", t->dtype, sizeof t->dtype, err) ||
            ev_str(k, "index_dtype", t->index_dtype, sizeof t->index_dtype, err) ||
            ev_str(k, "summary", t->summary, sizeof t->summary, err) ||
            ev_str(k, "scalars", t->scalars, sizeof t->scalars, err))
            return err->code;
        if (cJSON_GetObjectItemCaseSensitive(k, "space")) {
            kg_space sp;
            kg_err se = {0, ""};
            if (ev_str(k, "space", t->space, sizeof t->space, err))
                return err->code;
            if (kg_space_parse(t->space, &sp, &se))
                return kg_err_set(err, KG_EXIT_FAIL, "table entry '%s': %s", t->name, se.msg);
        }
        kg_dtype d;
        const kg_op *op = kg_op_find(t->op);
        if (!name_ok(t->name) || !op || kg_dtype_parse(t->dtype, &d) || !kg_op_has_dtype(op, d) ||
            kg_dtype_parse(t->index_dtype, &d) || !kg_dtype_is_int(d))
            return kg_err_set(err, KG_EXIT_FAIL, "table entry '%s' names no catalog operator and dtype",
                              t->name);
        e->n_entries++;
    }
    return 0;
}

/* hello: the worker's protocol, device and process id. */
static int ev_hello(const cJSON *o, kg_event *e, kg_err *err)
{
    char proto[32];
    double pid = 0;
    if (ev_str(o, "proto", proto, sizeof proto, err) ||
        ev_str(o, "device", e->device, sizeof e->device, err) || ev_num(o, "pid", 0, &pid, err))
        return err->code;
    if (pid < 0 || pid > 4194304 || pid != floor(pid)) { /* found by fuzz_event */
        kg_err_set(err, KG_EXIT_FAIL, "'pid' is not a process id");
        return err->code;
    }
    if (strcmp(proto, KG_PROTO) != 0)
        return kg_err_set(err, KG_EXIT_FAIL, "worker speaks '%s', not %s", proto, KG_PROTO);
    e->pid = (long)pid;
    return err->code;
}

/* sum: one named summary, its value and unit ([A-Za-z/%], may be empty). */
static int ev_sum(const cJSON *o, kg_event *e, kg_err *err)
{
    if (ev_subject(o, e, 1, err) || ev_str(o, "name", e->name, sizeof e->name, err) ||
        ev_num(o, "value", 0, &e->value, err))
        return err->code;
    if (!name_ok(e->name))
        return kg_err_set(err, KG_EXIT_FAIL, "bad summary name '%s'", e->name);
    if (cJSON_GetObjectItemCaseSensitive(o, "unit")) { /* optional: [A-Za-z/%], may be empty */
        if (ev_str(o, "unit", e->unit, sizeof e->unit, err))
            return err->code;
        for (const char *u = e->unit; *u; u++)
            if (!((*u >= 'a' && *u <= 'z') || (*u >= 'A' && *u <= 'Z') || *u == '/' || *u == '%')) {
                kg_err_set(err, KG_EXIT_FAIL, "bad unit '%s' for summary '%s'", e->unit, e->name);
                break;
            }
    }
    return err->code;
}

/* kernel: the facts of the kernel under test (its subject only). */
static int ev_kernel_facts(const cJSON *o, kg_event *e, kg_err *err)
{
    if (ev_subject(o, e, 1, err))
        return err->code;
    if (e->subject != KG_SUBJ_KERNEL)
        return kg_err_set(err, KG_EXIT_FAIL, "kernel facts are for the kernel under test only");
    if (!(e->kf = malloc(sizeof *e->kf)))
        return kg_err_set(err, KG_EXIT_FAIL, "out of memory for kernel facts");
    kg_kfacts_from_cjson(cJSON_GetObjectItemCaseSensitive(o, "facts"), e->kf, err);
    return err->code;
}

/* diag: a diagnosis's passes, launches and times, for the kernel under test. */
static int ev_diag(const cJSON *o, kg_event *e, kg_err *err)
{
    double busy = 0, wall = 0;
    if (ev_subject(o, e, 1, err) || ev_str(o, "note", e->text, sizeof e->text, err) ||
        ev_int(o, "passes", 0, 1000, &e->passes, err) || ev_int(o, "launches", 0, 1e9, &e->launches, err) ||
        ev_num(o, "busy_s", 1, &busy, err) || ev_num(o, "wall_s", 1, &wall, err))
        return err->code;
    if (e->subject != KG_SUBJ_KERNEL || !(isnan(busy) || (busy >= 0 && busy < 1e6)) ||
        !(isnan(wall) || (wall >= 0 && wall < 1e6)))
        return kg_err_set(err, KG_EXIT_FAIL, "a diag event out of range or not for the kernel under test");
    e->busy_s = isnan(busy) ? 0 : busy;
    e->wall_s = isnan(wall) ? 0 : wall;
    return err->code;
}

/* The fields of an event of kind e->kind. */
static int ev_fields(const cJSON *o, kg_event *e, kg_err *err)
{
    switch (e->kind) {
    case KG_EV_HELLO:
        return ev_hello(o, e, err);
    case KG_EV_TABLE:
        parse_table(o, e, err);
        break;
    case KG_EV_SUBJECT:
        if (ev_subject(o, e, 1, err) || ev_str(o, "note", e->text, sizeof e->text, err))
            return err->code;
        if (e->subject == KG_SUBJ_KERNEL)
            kg_err_set(err, KG_EXIT_FAIL, "a subject event is for lib or best");
        break;
    case KG_EV_UNSUPPORTED:
        if (ev_subject(o, e, 1, err) || ev_str(o, "msg", e->text, sizeof e->text, err))
            return err->code;
        if (e->subject != KG_SUBJ_LIB)
            kg_err_set(err, KG_EXIT_FAIL, "only a library path can be unsupported");
        break;
    case KG_EV_CHECK:
        if (ev_subject(o, e, 1, err) || ev_str(o, "what", e->what, sizeof e->what, err) ||
            ev_bool(o, "pass", &e->pass, err) || ev_num(o, "rel_l2", 1, &e->rel_l2, err) ||
            ev_num(o, "max_abs_err", 1, &e->max_abs_err, err) ||
            ev_bool(o, "inputs_mutated", &e->mutated, err) ||
            ev_str(o, "desc", e->text, sizeof e->text, err))
            return err->code;
        break;
    case KG_EV_SUM:
        return ev_sum(o, e, err);
    case KG_EV_TIMING:
        if (ev_subject(o, e, 1, err) || ev_str(o, "stop", e->stop, sizeof e->stop, err) ||
            ev_bool(o, "escaped", &e->escaped, err) ||
            ev_int(o, "throttled", 0, 1e9, &e->throttled, err) ||
            ev_str(o, "note", e->text, sizeof e->text, err))
            return err->code;
        break;
    case KG_EV_FAIL:
        if (ev_subject(o, e, 1, err) || ev_str(o, "kind", e->fail_kind, sizeof e->fail_kind, err) ||
            ev_str(o, "msg", e->text, sizeof e->text, err))
            return err->code;
        if (strcmp(e->fail_kind, "incorrect") != 0 && strcmp(e->fail_kind, "crash") != 0)
            kg_err_set(err, KG_EXIT_FAIL, "unknown failure kind '%s'", e->fail_kind);
        break;
    case KG_EV_ERROR:
        if (ev_int(o, "code", 3, 6, &e->code, err) || ev_str(o, "msg", e->text, sizeof e->text, err) ||
            ev_str(o, "nonce", e->nonce, sizeof e->nonce, err))
            return err->code;
        break;
    case KG_EV_KERNEL:
        return ev_kernel_facts(o, e, err);
    case KG_EV_DIAG:
        return ev_diag(o, e, err);
    case KG_EV_DONE:
        if (ev_int(o, "code", 0, 255, &e->code, err) == 0 && ev_str(o, "nonce", e->nonce, sizeof e->nonce, err) == 0 &&
            cJSON_GetObjectItemCaseSensitive(o, "unsupported"))
            ev_bool(o, "unsupported", &e->unsupported, err);
        break;
    default:
        break;
    }
    return err->code;
}

int kg_event_parse(const char *line, kg_event *e, kg_err *err)
{
    char kind[16];
    memset(e, 0, sizeof *e);
    e->rel_l2 = e->max_abs_err = NAN;
    size_t len = strlen(line);
    static const char table[] = "{\"ev\":\"table\","; /* how the worker begins one (kg_event_to_json) */
    if (len > KG_EVENT_MAX)
        return kg_err_set(err, KG_EXIT_FAIL, "an event line longer than %d bytes", KG_EVENT_MAX);
    if (len > KG_EVENT_LINE_MAX && strncmp(line, table, sizeof table - 1) != 0) /* refused unparsed */
        return kg_err_set(err, KG_EXIT_FAIL, "an event line longer than %d bytes (only a table may be)",
                          KG_EVENT_LINE_MAX);
    cJSON *o = cJSON_Parse(line);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return kg_err_set(err, KG_EXIT_FAIL, "a line that is not a JSON object");
    }
    if (ev_str(o, "ev", kind, sizeof kind, err))
        goto out;
    int k = pick(kind, ev_names, KG_EV_COUNT);
    if (k < 0) {
        kg_err_set(err, KG_EXIT_FAIL, "unknown event '%s'", kind);
        goto out;
    }
    e->kind = (kg_ev_kind)k;
    if (len > KG_EVENT_LINE_MAX && e->kind != KG_EV_TABLE) {
        kg_err_set(err, KG_EXIT_FAIL, "an event line longer than %d bytes (only a table may be)", KG_EVENT_LINE_MAX);
        goto out;
    }
    ev_fields(o, e, err);
out:
    cJSON_Delete(o);
    if (err->code)
        kg_event_free(e);
    return err->code;
}
