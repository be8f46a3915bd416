/* The remembered library times (lib_cache.h): a JSON Lines file per GPU. */
#include "lib_cache.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "../catalog/problem.h"
#include "../catalog/roofs_io.h"
#include "../base/text.h"

#define CONFIRM 2      /* agreeing measurements before an entry is used */
#define T_MAX 3600.0   /* s: no library call takes longer */

int kg_libcache_path(const char *uuid, char *buf, size_t size, kg_err *err)
{
    char file[128], dir[PATH_MAX], real[PATH_MAX];
    if (!uuid[0] || strpbrk(uuid, "/\\") || strlen(uuid) > 80)
        return kg_err_set(err, KG_EXIT_IO, "library cache: not a GPU UUID: '%.80s'", uuid);
    snprintf(file, sizeof file, "libtimes-%s.jsonl", uuid);
    if (kg_cache_file(file, buf, size, err))
        return err->code;
    /* the directory as it really is (links, "//dev", relative paths resolved) */
    snprintf(dir, sizeof dir, "%s", buf);
    *strrchr(dir, '/') = '\0'; /* kg_cache_file's "DIR/kgate/FILE" */
    if (!realpath(dir, real))
        return kg_err_set(err, KG_EXIT_IO, "library cache: %s: %s", dir, strerror(errno));
    if (strcmp(real, "/dev") == 0 || strncmp(real, "/dev/", 5) == 0) /* the sandbox lets a candidate write there */
        return kg_err_set(err, KG_EXIT_IO, "library cache: %s is under /dev, which a sandboxed candidate can write",
                          real);
    return 0;
}

/* "size:mtime" of a file; -1 when it cannot be stat'ed. */
static int file_ident(const char *path, char *buf, size_t size)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    snprintf(buf, size, "%lld:%lld.%09ld", (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    return 0;
}

char *kg_libcache_key(const kg_job *j, const char *uuid, const char *context)
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
    if (!kg_op_has_index(n->op))
        n->types.index = KG_I64;
    char plugin[96] = "none", exe[96] = "-";
    if (n->plugin[0] && file_ident(n->plugin, plugin, sizeof plugin) != 0) {
        free(n);
        return NULL;
    }
    file_ident("/proc/self/exe", exe, sizeof exe); /* a rebuilt kgate of the same commit */
    const char *py = getenv("KGATE_PYTHON"), *tf32 = getenv("NVIDIA_TF32_OVERRIDE");
    char env[600];
    snprintf(env, sizeof env, "KGATE_PYTHON=%.256s NVIDIA_TF32_OVERRIDE=%.64s", py ? py : "", tf32 ? tf32 : "");
    char *job = kg_job_to_json(n);
    free(n);
    if (!job)
        return NULL;
    size_t len = strlen(job) + strlen(uuid) + strlen(context) + strlen(plugin) + strlen(exe) + strlen(env) + 16;
    char *key = malloc(len);
    if (key)
        snprintf(key, len, "%s|%s|exe %s|bundled %s|%s|%s", uuid, context, exe, plugin, env, job);
    free(job);
    return key;
}

/* ----------------------------------------------------------------- entries */

/* A timed path's median and 95% interval: finite, positive, under an hour,
 * the interval holding the median and at most KG_LIBCACHE_CI_MAX wide. */
static int time_ok(double t, double lo, double hi)
{
    return isfinite(t) && t > 0 && t < T_MAX && isfinite(lo) && lo > 0 && lo <= t && isfinite(hi) && hi >= t &&
           hi < T_MAX && (hi - lo) / t <= KG_LIBCACHE_CI_MAX;
}

const char *kg_libcache_unfit(const kg_libref *lib)
{
    if (!lib->measured)
        return "the library job did not run";
    if (lib->disturbed > 0)
        return "its timing dropped throttled samples or saw other work of kgate's";
    if (lib->others > 0)
        return "another process held a context on the GPU";
    if (lib->others < 0)
        return "the GPU's processes were not listed around it (no NVML, or a listing failed)";
    for (int i = 0; i < lib->n; i++) {
        const kg_libpath *p = &lib->paths[i];
        if (p->status == KG_LIB_WRONG)
            return "a library path failed its check";
        if (p->status == KG_LIB_OK && !time_ok(p->t, p->lo, p->hi))
            return "a library time with a wide or missing confidence interval";
    }
    if (!lib->have_best && lib->best_name[0])
        return "the bundled variant failed";
    if (!lib->have_best && strncmp(lib->best_note, KG_BUNDLED_UNLOADED, sizeof KG_BUNDLED_UNLOADED - 1) == 0)
        return KG_BUNDLED_UNLOADED;
    if (lib->have_best && !time_ok(lib->best_t, lib->best_lo, lib->best_hi))
        return "the bundled variant's time has a wide or missing confidence interval";
    return NULL;
}

static int close_to(double a, double b)
{
    return fabs(a / b - 1) <= KG_LIBCACHE_AGREE;
}

int kg_libcache_agree(const kg_libref *a, const kg_libref *b)
{
    if (a->n != b->n || a->have_best != b->have_best || strcmp(a->best_name, b->best_name) != 0)
        return 0;
    for (int i = 0; i < a->n; i++) {
        const kg_libpath *p = &a->paths[i], *q = &b->paths[i];
        if (strcmp(p->name, q->name) != 0 || p->status != q->status)
            return 0;
        /* a path that cannot run says why; a different reason is not the same fact */
        if (p->status != KG_LIB_OK && strcmp(p->note, q->note) != 0)
            return 0;
        if (p->status == KG_LIB_OK && !close_to(p->t, q->t))
            return 0;
    }
    return !a->have_best || close_to(a->best_t, b->best_t);
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
static char *entry_text(const char *key, const kg_libref *lib, double at, int n)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "schema", KG_LIBCACHE_SCHEMA);
    cJSON_AddStringToObject(o, "key", key);
    cJSON_AddNumberToObject(o, "at", at);
    cJSON_AddNumberToObject(o, "n", n);
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

/* Copies string item k of o into dst (under size bytes, no control
 * characters); 0 when it is one. */
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

/* A parsed entry. */
typedef struct entry {
    kg_libref lib;
    double at;
    int n;    /* agreeing measurements */
    int mine; /* of the key asked about */
} entry;

/* Parses and validates an entry line (len bytes, NUL-terminated) into *x;
 * 0 when it is a valid entry. */
static int entry_parse(const char *line, size_t len, const char *key, entry *x)
{
    cJSON *o = cJSON_ParseWithLengthOpts(line, len + 1, NULL, 1); /* nothing may follow the object */
    int bad = 1;
    double n;
    kg_libref *lib = &x->lib;
    if (!cJSON_IsObject(o))
        goto out;
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(o, "schema");
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "key");
    const cJSON *paths = cJSON_GetObjectItemCaseSensitive(o, "paths");
    const cJSON *best = cJSON_GetObjectItemCaseSensitive(o, "best");
    if (!cJSON_IsString(schema) || strcmp(schema->valuestring, KG_LIBCACHE_SCHEMA) != 0 || !cJSON_IsString(k) ||
        num_of(o, "at", &x->at) || !isfinite(x->at) || x->at <= 0 || num_of(o, "n", &n) || !(n >= 1 && n <= 1e6) ||
        n != floor(n) || !cJSON_IsArray(paths) || cJSON_GetArraySize(paths) > KG_MAX_LIBPATHS)
        goto out;
    memset(lib, 0, sizeof *lib);
    x->n = (int)n;
    const cJSON *p;
    cJSON_ArrayForEach(p, paths)
    {
        kg_libpath *q = &lib->paths[lib->n];
        char status[16];
        if (path_of(p, q->name, sizeof q->name, q->note, sizeof q->note, &q->t, &q->lo, &q->hi) ||
            str_of(p, "status", status, sizeof status, 1))
            goto out;
        if (strcmp(status, kg_lib_status_name(KG_LIB_OK)) == 0)
            q->status = KG_LIB_OK;
        else if (strcmp(status, kg_lib_status_name(KG_LIB_UNSUPPORTED)) == 0)
            q->status = KG_LIB_UNSUPPORTED;
        else
            goto out; /* unknown, or a failed check (never stored) */
        if (q->status == KG_LIB_OK ? !time_ok(q->t, q->lo, q->hi) : (q->t != 0 || q->lo != 0 || q->hi != 0))
            goto out;
        for (int i = 0; i < lib->n; i++)
            if (strcmp(lib->paths[i].name, q->name) == 0)
                goto out; /* a path twice */
        lib->n++;
    }
    if (str_of(o, "best_name", lib->best_name, sizeof lib->best_name, 0))
        goto out;
    if (best) {
        char name[96];
        if (path_of(best, name, sizeof name, lib->best_note, sizeof lib->best_note, &lib->best_t, &lib->best_lo,
                    &lib->best_hi) ||
            !name[0] || strcmp(name, lib->best_name) != 0 || !time_ok(lib->best_t, lib->best_lo, lib->best_hi))
            goto out;
        lib->have_best = 1;
    } else if (str_of(o, "no_best", lib->best_note, sizeof lib->best_note, 0) || lib->best_name[0]) {
        goto out; /* no bundled time, and no name of one (a failed variant is never stored) */
    }
    lib->measured = 1;
    x->mine = strcmp(k->valuestring, key) == 0;
    bad = 0;
out:
    cJSON_Delete(o);
    return bad;
}

/* Reads one line of f into buf (cap bytes), without its newline; returns
 * its length, -1 at the end of the file, -2 for a line that is too long or
 * holds a NUL byte (read to its end and dropped). */
static long read_line(FILE *f, char *buf, size_t cap)
{
    size_t len = 0;
    int c, bad = 0;
    while ((c = getc(f)) != EOF && c != '\n') {
        if (c == '\0' || len + 1 >= cap)
            bad = 1;
        else
            buf[len++] = (char)c;
    }
    if (c == EOF && len == 0 && !bad)
        return -1;
    buf[len] = '\0';
    return bad ? -2 : (long)len;
}

/* Calls fn for each valid entry of path, reading at most KG_LIBCACHE_MAX * 4
 * lines; 0, 1 when the file cannot be opened, -1 out of memory. */
static int each_entry(const char *path, const char *key, void (*fn)(void *ud, const char *line, size_t len, const entry *x),
                      void *ud)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    char *buf = malloc(KG_LIBCACHE_LINE_MAX);
    entry *x = malloc(sizeof *x);
    int rc = buf && x ? 0 : -1;
    long len;
    for (int n = 0; !rc && n < KG_LIBCACHE_MAX * 4 && (len = read_line(f, buf, KG_LIBCACHE_LINE_MAX)) != -1; n++)
        if (len > 0 && entry_parse(buf, (size_t)len, key, x) == 0)
            fn(ud, buf, (size_t)len, x);
    free(buf);
    free(x);
    fclose(f);
    return rc;
}

typedef struct finder {
    double now;
    entry best; /* the newest entry of the key */
    int found;
} finder;

static void find_line(void *ud, const char *line, size_t len, const entry *x)
{
    finder *s = ud;
    (void)line;
    (void)len;
    if (x->mine && x->at <= s->now + 60 && (!s->found || x->at >= s->best.at)) {
        s->best = *x;
        s->found = 1;
    }
}

int kg_libcache_get(const char *path, const char *key, double max_age_s, double now, kg_libref *lib,
                    double *age_s)
{
    finder *s = calloc(1, sizeof *s);
    if (!s)
        return 1;
    s->now = now;
    int hit = each_entry(path, key, find_line, s) == 0 && s->found && s->best.n >= CONFIRM &&
              now - s->best.at <= max_age_s;
    if (hit) {
        *lib = s->best.lib;
        *age_s = now - s->best.at > 0 ? now - s->best.at : 0;
    }
    free(s);
    return hit ? 0 : 1;
}

/* The lines kept on a rewrite: every valid entry of another key, newest
 * last; and the newest entry of the key, which the new one replaces. */
typedef struct keeper {
    char **lines;
    int n;
    entry old;
    int have_old;
} keeper;

static void keep_line(void *ud, const char *line, size_t len, const entry *x)
{
    keeper *k = ud;
    if (x->mine) {
        if (!k->have_old || x->at >= k->old.at) {
            k->old = *x;
            k->have_old = 1;
        }
        return;
    }
    if (k->n == KG_LIBCACHE_MAX - 1) { /* full: the oldest goes */
        free(k->lines[0]);
        memmove(k->lines, k->lines + 1, sizeof *k->lines * (size_t)(k->n - 1));
        k->n--;
    }
    k->lines[k->n] = strndup(line, len);
    if (k->lines[k->n])
        k->n++;
}

int kg_libcache_put(const char *path, const char *key, const kg_libref *lib, double now, double max_age_s,
                    int *confirmed, kg_err *err)
{
    const char *why = kg_libcache_unfit(lib);
    if (why)
        return kg_err_set(err, KG_EXIT_IO, "library cache: not stored: %s", why);
    keeper *k = calloc(1, sizeof *k);
    char **lines = calloc(KG_LIBCACHE_MAX, sizeof(char *));
    if (!k || !lines) {
        free(k);
        free(lines);
        return kg_err_set(err, KG_EXIT_IO, "library cache: out of memory");
    }
    k->lines = lines;
    int rc = 0;
    if (each_entry(path, key, keep_line, k) < 0)
        rc = kg_err_set(err, KG_EXIT_IO, "library cache: out of memory reading %s", path);
    /* a second measurement that agrees with the first confirms the entry; the
     * first counts when made within the agreement window, and not in the future */
    double window = max_age_s > KG_LIBCACHE_AGREE_WINDOW ? max_age_s : KG_LIBCACHE_AGREE_WINDOW;
    int n = k->have_old && now - k->old.at <= window && now - k->old.at >= -60 &&
                    kg_libcache_agree(&k->old.lib, lib)
                ? k->old.n + 1
                : 1;
    char *mine = rc ? NULL : entry_text(key, lib, now, n > 1000000 ? 1000000 : n);
    entry back;
    if (!rc && !mine)
        rc = kg_err_set(err, KG_EXIT_IO, "library cache: out of memory");
    if (!rc && strlen(mine) >= KG_LIBCACHE_LINE_MAX - 1)
        rc = kg_err_set(err, KG_EXIT_IO, "library cache: an entry longer than %d bytes", KG_LIBCACHE_LINE_MAX);
    /* what is written must read back as the same entry (a note with a control
     * character, say, would never be found) */
    if (!rc && (entry_parse(mine, strlen(mine), key, &back) != 0 || !back.mine || !kg_libcache_agree(&back.lib, lib)))
        rc = kg_err_set(err, KG_EXIT_IO, "library cache: this measurement does not make a valid entry (not stored)");
    if (!rc) {
        size_t total = strlen(mine) + 1;
        for (int i = 0; i < k->n; i++)
            total += strlen(k->lines[i]) + 1;
        char *text = malloc(total);
        if (!text) {
            rc = kg_err_set(err, KG_EXIT_IO, "library cache: out of memory");
        } else {
            size_t u = 0;
            for (int i = 0; i < k->n; i++)
                kg_append(text, total, &u, "%s\n", k->lines[i]); /* total fits them all */
            kg_append(text, total, &u, "%s", mine); /* kg_write_file_atomic ends the last line */
            rc = kg_write_file_atomic(path, text, err);
            free(text);
        }
    }
    if (!rc && confirmed)
        *confirmed = n >= CONFIRM;
    for (int i = 0; i < k->n; i++)
        free(k->lines[i]);
    free(k->lines);
    free(k);
    free(mine);
    return rc;
}
