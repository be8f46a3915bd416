/* The remembered library times (lib_cache.h): a JSON Lines file per GPU. */
#include "lib_cache.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "problem.h"
#include "roofs_io.h"

int kg_libcache_path(const char *uuid, char *buf, size_t size, kg_err *err)
{
    char file[128];
    if (!uuid[0] || strpbrk(uuid, "/\\") || strlen(uuid) > 80)
        return kg_err_set(err, KG_EXIT_IO, "library cache: not a GPU UUID: '%.80s'", uuid);
    snprintf(file, sizeof file, "libtimes-%s.jsonl", uuid);
    return kg_cache_file(file, buf, size, err);
}

char *kg_libcache_key(const kg_job *j, const char *uuid, const char *build)
{
    if (!j->op || kg_problem_of(j->op))
        return NULL;
    kg_job *n = malloc(sizeof *n);
    if (!n)
        return NULL;
    *n = *j;
    /* what only kernel jobs read, or what differs from one job to the next */
    n->mode = KG_JOB_LIBRARY;
    n->kernel[0] = '\0';
    n->n_extra = 0;
    memset(n->extra, 0, sizeof n->extra);
    n->n_config = 0;
    memset(n->config, 0, sizeof n->config);
    n->diagnose = 0;
    n->patched_max_s = 0;
    n->nonce[0] = '\0';
    n->scratch[0] = '\0';
    n->budget_s = 0;
    n->device = 0; /* the UUID names the GPU */
    char ident[96] = "none";
    struct stat st;
    if (n->plugin[0]) {
        if (stat(n->plugin, &st) != 0) {
            free(n);
            return NULL;
        }
        snprintf(ident, sizeof ident, "%lld:%lld.%09ld", (long long)st.st_size, (long long)st.st_mtim.tv_sec,
                 st.st_mtim.tv_nsec);
    }
    char *job = kg_job_to_json(n);
    free(n);
    if (!job)
        return NULL;
    size_t len = strlen(job) + strlen(uuid) + strlen(build) + strlen(ident) + 8;
    char *key = malloc(len);
    if (key)
        snprintf(key, len, "%s|%s|%s|%s", uuid, build, ident, job);
    free(job);
    return key;
}

const char *kg_libcache_unfit(const kg_libref *lib)
{
    if (!lib->measured)
        return "the library job did not run";
    if (lib->disturbed > 0)
        return "its timing saw other work on the GPU or a low clock";
    return NULL;
}

/* ----------------------------------------------------------------- entries */

#define T_MAX 3600.0 /* s: no library call takes longer */

static int time_ok(double t, double lo, double hi)
{
    if (!(isfinite(t) && t > 0 && t < T_MAX))
        return 0;
    if (lo != 0 && !(isfinite(lo) && lo > 0 && lo <= t))
        return 0;
    if (hi != 0 && !(isfinite(hi) && hi >= t && hi < T_MAX))
        return 0;
    return 1;
}

static cJSON *path_json(const char *name, const char *note, const char *status, double t, double lo, double hi)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "name", name);
    cJSON_AddStringToObject(p, "note", note);
    if (status)
        cJSON_AddStringToObject(p, "status", status);
    cJSON_AddNumberToObject(p, "t", t);
    cJSON_AddNumberToObject(p, "lo", lo);
    cJSON_AddNumberToObject(p, "hi", hi);
    return p;
}

/* One entry's line (malloc'd), or NULL. */
static char *entry_text(const char *key, const kg_libref *lib, double at)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "schema", KG_LIBCACHE_SCHEMA);
    cJSON_AddStringToObject(o, "key", key);
    cJSON_AddNumberToObject(o, "at", at);
    cJSON *paths = cJSON_AddArrayToObject(o, "paths");
    for (int i = 0; i < lib->n; i++) {
        const kg_libpath *p = &lib->paths[i];
        cJSON_AddItemToArray(paths, path_json(p->name, p->note, kg_lib_status_name(p->status), p->t, p->lo, p->hi));
    }
    if (lib->have_best)
        cJSON_AddItemToObject(o, "best",
                              path_json(lib->best_name, lib->best_note, NULL, lib->best_t, lib->best_lo, lib->best_hi));
    else
        cJSON_AddStringToObject(o, "no_best", lib->best_note);
    cJSON_AddStringToObject(o, "best_name", lib->best_name);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}

/* Copies string item k of o into dst (under size bytes); 0 when it is one. */
static int str_of(const cJSON *o, const char *k, char *dst, size_t size, int nonempty)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= size || (nonempty && !v->valuestring[0]))
        return -1;
    for (const unsigned char *c = (const unsigned char *)v->valuestring; *c; c++)
        if (*c < 0x20)
            return -1;
    snprintf(dst, size, "%s", v->valuestring);
    return 0;
}

static int num_of(const cJSON *o, const char *k, double *dst)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v))
        return -1;
    *dst = v->valuedouble;
    return 0;
}

/* A parsed path: 0 when every field is well formed. */
static int path_of(const cJSON *p, char *name, size_t nsize, char *note, size_t tsize, double *t, double *lo, double *hi)
{
    return !cJSON_IsObject(p) || str_of(p, "name", name, nsize, 1) || str_of(p, "note", note, tsize, 0) ||
                   num_of(p, "t", t) || num_of(p, "lo", lo) || num_of(p, "hi", hi)
               ? -1
               : 0;
}

/* Parses and validates an entry line into *lib and *at; 0 when it is a
 * valid entry, *mine then whether it is key's. */
static int entry_parse(const char *line, size_t len, const char *key, kg_libref *lib, double *at, int *mine)
{
    cJSON *o = cJSON_ParseWithLength(line, len);
    int bad = 1;
    if (!cJSON_IsObject(o))
        goto out;
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(o, "schema");
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "key");
    const cJSON *paths = cJSON_GetObjectItemCaseSensitive(o, "paths");
    const cJSON *best = cJSON_GetObjectItemCaseSensitive(o, "best");
    if (!cJSON_IsString(schema) || strcmp(schema->valuestring, KG_LIBCACHE_SCHEMA) != 0 || !cJSON_IsString(k) ||
        num_of(o, "at", at) || !isfinite(*at) || *at <= 0 ||
        !cJSON_IsArray(paths) || cJSON_GetArraySize(paths) > KG_MAX_LIBPATHS)
        goto out;
    memset(lib, 0, sizeof *lib);
    const cJSON *p;
    cJSON_ArrayForEach(p, paths)
    {
        kg_libpath *x = &lib->paths[lib->n];
        char status[16];
        if (path_of(p, x->name, sizeof x->name, x->note, sizeof x->note, &x->t, &x->lo, &x->hi) ||
            str_of(p, "status", status, sizeof status, 1))
            goto out;
        if (strcmp(status, kg_lib_status_name(KG_LIB_OK)) == 0) {
            x->status = KG_LIB_OK;
            if (!time_ok(x->t, x->lo, x->hi))
                goto out;
        } else if (strcmp(status, kg_lib_status_name(KG_LIB_UNSUPPORTED)) == 0) {
            x->status = KG_LIB_UNSUPPORTED;
        } else if (strcmp(status, kg_lib_status_name(KG_LIB_WRONG)) == 0) {
            x->status = KG_LIB_WRONG;
        } else {
            goto out;
        }
        if (x->status != KG_LIB_OK && (x->t != 0 || x->lo != 0 || x->hi != 0) &&
            !time_ok(x->t, x->lo, x->hi))
            goto out;
        for (int q = 0; q < lib->n; q++)
            if (strcmp(lib->paths[q].name, x->name) == 0)
                goto out; /* a path twice */
        lib->n++;
    }
    if (str_of(o, "best_name", lib->best_name, sizeof lib->best_name, 0))
        goto out;
    if (best) {
        char name[96];
        if (path_of(best, name, sizeof name, lib->best_note, sizeof lib->best_note, &lib->best_t, &lib->best_lo,
                    &lib->best_hi) ||
            strcmp(name, lib->best_name) != 0 || !name[0] || !time_ok(lib->best_t, lib->best_lo, lib->best_hi))
            goto out;
        lib->have_best = 1;
    } else if (str_of(o, "no_best", lib->best_note, sizeof lib->best_note, 0)) {
        goto out;
    }
    lib->measured = 1;
    *mine = strcmp(k->valuestring, key) == 0;
    bad = 0;
out:
    cJSON_Delete(o);
    return bad;
}

/* Calls fn for each line of path shorter than KG_LIBCACHE_LINE_MAX (the
 * longer ones skipped), at most KG_LIBCACHE_MAX * 4 of them; 1 when the file
 * cannot be opened. */
static int each_line(const char *path, void (*fn)(void *ud, const char *line, size_t len), void *ud)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    char *buf = malloc(KG_LIBCACHE_LINE_MAX);
    for (int n = 0; buf && n < KG_LIBCACHE_MAX * 4 && fgets(buf, KG_LIBCACHE_LINE_MAX, f); n++) {
        size_t len = strlen(buf);
        if (len && buf[len - 1] != '\n' && !feof(f)) { /* too long: skip the rest of it */
            int c;
            while ((c = fgetc(f)) != EOF && c != '\n')
                ;
            continue;
        }
        if (len && buf[len - 1] == '\n')
            buf[--len] = '\0';
        if (len)
            fn(ud, buf, len);
    }
    free(buf);
    fclose(f);
    return 0;
}

typedef struct finder {
    const char *key;
    double max_age, now, at;
    kg_libref lib;
    int found;
} finder;

static void find_line(void *ud, const char *line, size_t len)
{
    finder *x = ud;
    kg_libref lib;
    double at;
    int mine;
    if (entry_parse(line, len, x->key, &lib, &at, &mine) == 0 && mine && at <= x->now + 60 &&
        x->now - at <= x->max_age &&
        (!x->found || at >= x->at)) {
        x->lib = lib;
        x->at = at;
        x->found = 1;
    }
}

int kg_libcache_get(const char *path, const char *key, double max_age_s, double now, kg_libref *lib,
                    double *age_s)
{
    finder *x = calloc(1, sizeof *x);
    if (!x)
        return 1;
    x->key = key;
    x->max_age = max_age_s;
    x->now = now;
    int hit = each_line(path, find_line, x) == 0 && x->found;
    if (hit) {
        *lib = x->lib;
        *age_s = now - x->at > 0 ? now - x->at : 0;
    }
    free(x);
    return hit ? 0 : 1;
}

/* The lines kept on a rewrite: every valid entry of another key, newest last. */
typedef struct keeper {
    const char *key;
    char **lines;
    int n;
} keeper;

static void keep_line(void *ud, const char *line, size_t len)
{
    keeper *x = ud;
    kg_libref lib;
    double at;
    int mine;
    if (entry_parse(line, len, x->key, &lib, &at, &mine) != 0 || mine)
        return; /* broken, or the entry this put replaces */
    if (x->n == KG_LIBCACHE_MAX - 1) { /* full: the oldest goes */
        free(x->lines[0]);
        memmove(x->lines, x->lines + 1, sizeof *x->lines * (size_t)(x->n - 1));
        x->n--;
    }
    x->lines[x->n] = strndup(line, len);
    if (x->lines[x->n])
        x->n++;
}

int kg_libcache_put(const char *path, const char *key, const kg_libref *lib, double now, kg_err *err)
{
    const char *why = kg_libcache_unfit(lib);
    if (why)
        return kg_err_set(err, KG_EXIT_IO, "library cache: not stored: %s", why);
    char *mine = entry_text(key, lib, now);
    if (!mine || strlen(mine) >= KG_LIBCACHE_LINE_MAX - 1) {
        free(mine);
        return kg_err_set(err, KG_EXIT_IO, "library cache: an entry longer than %d bytes", KG_LIBCACHE_LINE_MAX);
    }
    keeper x = {key, calloc(KG_LIBCACHE_MAX, sizeof(char *)), 0};
    if (!x.lines) {
        free(mine);
        return kg_err_set(err, KG_EXIT_IO, "library cache: out of memory");
    }
    each_line(path, keep_line, &x);
    size_t total = strlen(mine) + 1;
    for (int i = 0; i < x.n; i++)
        total += strlen(x.lines[i]) + 1;
    char *text = malloc(total);
    int rc = 0;
    if (!text) {
        rc = kg_err_set(err, KG_EXIT_IO, "library cache: out of memory");
    } else {
        size_t u = 0;
        for (int i = 0; i < x.n; i++)
            u += (size_t)sprintf(text + u, "%s\n", x.lines[i]);
        sprintf(text + u, "%s", mine); /* kg_write_file_atomic ends the last line */
        rc = kg_write_file_atomic(path, text, err);
    }
    for (int i = 0; i < x.n; i++)
        free(x.lines[i]);
    free(x.lines);
    free(text);
    free(mine);
    return rc;
}
