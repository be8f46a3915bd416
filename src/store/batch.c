/* Batch judging: manifests, shards, results files (store/batch.h has the
 * rules). */
#include "batch.h"

#include "../base/text.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

int kg_open_regular(const char *path, int flags, kg_err *err)
{
    struct stat st;
    int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC, 0644); /* a FIFO's open would wait for a writer */
    if (fd < 0) {
        kg_err_set(err, KG_EXIT_IO, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0) {
        kg_err_set(err, KG_EXIT_IO, "%s: fstat: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        kg_err_set(err, KG_EXIT_IO, "%s: not a regular file (%s)", path,
                   S_ISDIR(st.st_mode)                            ? "a directory"
                   : S_ISFIFO(st.st_mode)                         ? "a FIFO"
                   : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                  : "a socket or another special file");
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

/* kg_open_regular for reading, as a stream; NULL with err. */
static FILE *fopen_regular(const char *path, kg_err *err)
{
    int fd = kg_open_regular(path, O_RDONLY, err);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (fd >= 0 && !f) {
        kg_err_set(err, KG_EXIT_IO, "%s: fdopen: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

/* ------------------------------------------------------------- manifest */

static int field(const cJSON *o, const char *k, char *dst, size_t size, int line, kg_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v)
        return 0;
    if (!cJSON_IsString(v) || !v->valuestring[0] || strlen(v->valuestring) >= size)
        return kg_err_set(err, KG_EXIT_USAGE, "line %d: '%s' must be a non-empty string under %zu bytes", line, k,
                          size);
    if (!kg_text_is_clean(v->valuestring)) /* printed and written: base/text.h */
        return kg_err_set(err, KG_EXIT_USAGE, "line %d: '%s' holds a control character or is not UTF-8", line,
                          k);
    snprintf(dst, size, "%s", v->valuestring);
    return 0;
}

int kg_manifest_line(const char *text, int line, kg_batch_job *j, kg_err *err)
{
    static const char *known[] = {"id", "candidate", "kernel", "op", "dtype", "shape", "gpu", "options"};
    memset(j, 0, sizeof *j);
    j->line = line;
    j->gpu = -1;
    cJSON *o = cJSON_Parse(text);
    if (!o || !cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return kg_err_set(err, KG_EXIT_USAGE, "line %d: not a JSON object", line);
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, o)
    {
        size_t k = 0;
        while (k < sizeof known / sizeof known[0] && strcmp(it->string, known[k]) != 0)
            k++;
        if (k == sizeof known / sizeof known[0]) {
            kg_err_set(err, KG_EXIT_USAGE, "line %d: unknown field '%.40s'", line, it->string);
            goto bad;
        }
    }
    if (field(o, "id", j->id, sizeof j->id, line, err) || field(o, "candidate", j->candidate, sizeof j->candidate, line, err) ||
        field(o, "kernel", j->kernel, sizeof j->kernel, line, err) || field(o, "op", j->op, sizeof j->op, line, err) ||
        field(o, "dtype", j->dtype, sizeof j->dtype, line, err) || field(o, "shape", j->shape, sizeof j->shape, line, err))
        goto bad;
    if (!j->candidate[0]) {
        kg_err_set(err, KG_EXIT_USAGE, "line %d: no 'candidate'", line);
        goto bad;
    }
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(o, "gpu");
    if (gpu) {
        if (!cJSON_IsNumber(gpu) || gpu->valuedouble != (int)gpu->valuedouble || gpu->valuedouble < 0 ||
            gpu->valuedouble > 1023) {
            kg_err_set(err, KG_EXIT_USAGE, "line %d: 'gpu' must be a GPU index (a whole number, 0 to 1023)", line);
            goto bad;
        }
        j->gpu = (int)gpu->valuedouble;
    }
    const cJSON *opts = cJSON_GetObjectItemCaseSensitive(o, "options"), *x;
    if (opts) {
        if (!cJSON_IsArray(opts) || cJSON_GetArraySize(opts) > KG_BATCH_MAX_OPTS) {
            kg_err_set(err, KG_EXIT_USAGE, "line %d: 'options' must be an array of at most %d strings", line,
                       KG_BATCH_MAX_OPTS);
            goto bad;
        }
        cJSON_ArrayForEach(x, opts)
        {
            if (!cJSON_IsString(x) || strlen(x->valuestring) >= sizeof j->opts[0] ||
                !kg_text_is_clean(x->valuestring)) {
                kg_err_set(err, KG_EXIT_USAGE,
                           "line %d: 'options' holds a non-string, one over %zu bytes, or one with a control "
                           "character or not UTF-8", line, sizeof j->opts[0] - 1);
                goto bad;
            }
            /* options that would change where results go are the batch's, not a job's */
            if (!strncmp(x->valuestring, "--json", 6) || !strncmp(x->valuestring, "--device", 8) ||
                !strncmp(x->valuestring, "--events", 8)) {
                kg_err_set(err, KG_EXIT_USAGE, "line %d: option '%.20s' is the batch's to set", line,
                           x->valuestring);
                goto bad;
            }
            /* a job runs here: sent on to a kgate serve (maybe the very one running it) it would wait on itself */
            if (!strncmp(x->valuestring, "--server", 8)) {
                kg_err_set(err, KG_EXIT_USAGE, "line %d: option '--server' is not a job's: a job is judged here",
                           line);
                goto bad;
            }
            snprintf(j->opts[j->n_opts++], sizeof j->opts[0], "%s", x->valuestring);
        }
    }
    if (!j->id[0]) {
        char pin[16] = "";
        if (j->gpu >= 0)
            snprintf(pin, sizeof pin, "@gpu%d", j->gpu);
        int n = snprintf(j->id, sizeof j->id, "%s%s%s|%s|%s|%s%s", j->candidate, j->kernel[0] ? ":" : "", j->kernel,
                         j->op, j->dtype, j->shape, pin);
        if (n >= (int)sizeof j->id) {
            kg_err_set(err, KG_EXIT_USAGE, "line %d: the derived id is over %zu bytes: give an 'id'", line,
                       sizeof j->id - 1);
            goto bad;
        }
    }
    cJSON_Delete(o);
    return 0;
bad:
    cJSON_Delete(o);
    return err->code;
}

static kg_batch_job *jobs_add(kg_batch_jobs *js)
{
    if (js->n == js->cap) {
        int cap = js->cap ? 2 * js->cap : 64;
        kg_batch_job *v = realloc(js->v, sizeof *v * (size_t)cap);
        if (!v)
            return NULL;
        js->v = v;
        js->cap = cap;
    }
    return &js->v[js->n++];
}

#define KG_MANIFEST_LINE_MAX 65536

/* One line of f into buf (cap bytes; its newline dropped, NUL-ended):
 * its length, or -1 at the end of the file. *over: it was longer than
 * cap - 1 (the rest read and dropped); *nul: it held a NUL byte. */
static long read_line(FILE *f, char *buf, size_t cap, int *over, int *nul)
{
    size_t len = 0;
    int c = EOF;
    *over = *nul = 0;
    while ((c = getc(f)) != EOF && c != '\n') {
        *nul |= c == '\0';
        if (len < cap - 1)
            buf[len++] = (char)c;
        else
            *over = 1;
    }
    buf[len] = '\0';
    return c == EOF && len == 0 && !*over && !*nul ? -1 : (long)len;
}

int kg_manifest_read(const char *path, kg_batch_jobs *jobs, void (*bad)(void *ud, const char *msg), void *ud,
                     kg_err *err)
{
    FILE *f = fopen_regular(path, err); /* a FIFO or /dev/zero would never end */
    if (!f)
        return err->code;
    kg_idset ids = {0};
    char *buf = malloc(KG_MANIFEST_LINE_MAX);
    int line = 0, over, nul;
    long got;
    if (!buf) {
        fclose(f);
        return kg_err_set(err, KG_EXIT_ENV, "out of memory");
    }
    while ((got = read_line(f, buf, KG_MANIFEST_LINE_MAX, &over, &nul)) >= 0) {
        line++;
        size_t len = (size_t)got;
        char msg[700];
        kg_err e = {0, ""};
        if (over)
            kg_err_set(&e, KG_EXIT_USAGE, "line %d: longer than 64 KiB", line);
        else if (nul) /* it would end there: what follows would be lost unsaid */
            kg_err_set(&e, KG_EXIT_USAGE, "line %d: holds a NUL byte", line);
        while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
            buf[--len] = '\0';
        if (!e.code && (len == 0 || buf[0] == '#'))
            continue; /* blank lines and comments */
        kg_batch_job j;
        if (!e.code && kg_manifest_line(buf, line, &j, &e) == 0) {
            int added = kg_idset_add(&ids, j.id);
            if (added < 0) {
                kg_err_set(err, KG_EXIT_ENV, "out of memory");
                break;
            }
            if (added == 0)
                kg_err_set(&e, KG_EXIT_USAGE, "line %d: id '%.100s' appears twice", line, j.id);
            else {
                kg_batch_job *slot = jobs_add(jobs);
                if (!slot) {
                    kg_err_set(err, KG_EXIT_ENV, "out of memory");
                    break;
                }
                *slot = j;
                continue;
            }
        }
        snprintf(msg, sizeof msg, "%s:%s", path, e.msg + (strncmp(e.msg, "line ", 5) == 0 ? 5 : 0));
        if (!jobs->n_bad++)
            snprintf(jobs->first_bad, sizeof jobs->first_bad, "%s", msg);
        if (bad)
            bad(ud, msg);
    }
    free(buf);
    fclose(f);
    kg_idset_free(&ids);
    if (err->code)
        return err->code;
    if (jobs->n == 0)
        return kg_err_set(err, KG_EXIT_USAGE, "%s: no job%s%s", path, jobs->n_bad ? " (every line was bad: " : "",
                          jobs->n_bad ? "see above)" : "");
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const kg_batch_job *)a)->candidate, ((const kg_batch_job *)b)->candidate);
}

int kg_manifest_dir(const char *dir, kg_batch_jobs *jobs, kg_err *err)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d)
        return kg_err_set(err, KG_EXIT_IO, "%s: %s", dir, strerror(errno));
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (e->d_name[0] == '.' || n < 4 || (strcmp(e->d_name + n - 3, ".so") && strcmp(e->d_name + n - 3, ".py")))
            continue;
        kg_batch_job *j = jobs_add(jobs);
        if (!j) {
            closedir(d);
            return kg_err_set(err, KG_EXIT_ENV, "out of memory");
        }
        memset(j, 0, sizeof *j);
        j->gpu = -1;
        snprintf(j->candidate, sizeof j->candidate, "%s/%s", dir, e->d_name);
        snprintf(j->id, sizeof j->id, "%.159s", e->d_name);
    }
    closedir(d);
    qsort(jobs->v, (size_t)jobs->n, sizeof *jobs->v, by_name);
    if (jobs->n == 0)
        return kg_err_set(err, KG_EXIT_USAGE, "%s: no candidate (.so or .py) in it", dir);
    return 0;
}

void kg_batch_jobs_free(kg_batch_jobs *jobs)
{
    free(jobs->v);
    memset(jobs, 0, sizeof *jobs);
}

/* ---------------------------------------------------------------- shard */

static int env_pair(const char *r, const char *s, int *rank, int *size)
{
    const char *a = getenv(r), *b = getenv(s);
    char *e1, *e2;
    if (!a || !b || !*a || !*b)
        return 0;
    long x = strtol(a, &e1, 10), y = strtol(b, &e2, 10);
    if (*e1 || *e2 || y < 1 || x < 0 || x >= y || y > 1000000)
        return -1;
    *rank = (int)x;
    *size = (int)y;
    return 1;
}

int kg_shard_get(const char *given, int *rank, int *size, const char **source, kg_err *err)
{
    static const char *envs[][3] = {{"SLURM_PROCID", "SLURM_NTASKS", "Slurm"},
                                    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI"},
                                    {"PMI_RANK", "PMI_SIZE", "PMI"}};
    *rank = 0;
    *size = 1;
    *source = "none";
    if (given) {
        char *e1, *e2;
        long x = strtol(given, &e1, 10), y = *e1 == '/' ? strtol(e1 + 1, &e2, 10) : -1;
        if (*e1 != '/' || *e2 || y < 1 || x < 0 || x >= y || y > 1000000)
            return kg_err_set(err, KG_EXIT_USAGE, "--shard %s: want I/N with 0 <= I < N", given);
        *rank = (int)x;
        *size = (int)y;
        *source = "--shard";
        return 0;
    }
    for (size_t i = 0; i < sizeof envs / sizeof envs[0]; i++) {
        int rc = env_pair(envs[i][0], envs[i][1], rank, size);
        if (rc < 0)
            return kg_err_set(err, KG_EXIT_USAGE, "%s=%s, %s=%s: not a rank below a size", envs[i][0],
                              getenv(envs[i][0]), envs[i][1], getenv(envs[i][1]));
        if (rc > 0) {
            *source = envs[i][2];
            return 0;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- idset */

static size_t hash(const char *s)
{
    size_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

int kg_idset_has(const kg_idset *s, const char *id)
{
    if (!s->cap)
        return 0;
    for (size_t i = hash(id) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (!s->v[i])
            return 0;
        if (strcmp(s->v[i], id) == 0)
            return 1;
    }
}

int kg_idset_add(kg_idset *s, const char *id)
{
    if (kg_idset_has(s, id))
        return 0;
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        char **v = calloc(cap, sizeof *v);
        if (!v)
            return -1;
        for (size_t k = 0; k < s->cap; k++)
            if (s->v[k]) {
                size_t i = hash(s->v[k]) & (cap - 1);
                while (v[i])
                    i = (i + 1) & (cap - 1);
                v[i] = s->v[k];
            }
        free(s->v);
        s->v = v;
        s->cap = cap;
    }
    char *c = strdup(id);
    if (!c)
        return -1;
    size_t i = hash(id) & (s->cap - 1);
    while (s->v[i])
        i = (i + 1) & (s->cap - 1);
    s->v[i] = c;
    s->n++;
    return 1;
}

void kg_idset_free(kg_idset *s)
{
    for (size_t k = 0; k < s->cap; k++)
        free(s->v[k]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* -------------------------------------------------------------- results */

int kg_results_line_id(const char *line, char *id, size_t size, int *event, kg_err *err)
{
    id[0] = '\0';
    *event = 0;
    cJSON *o = cJSON_Parse(line);
    if (!o)
        return 0; /* torn */
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "schema");
    const cJSON *i = cJSON_GetObjectItemCaseSensitive(o, "id");
    int rc = 0;
    if (!cJSON_IsString(s) || strcmp(s->valuestring, KG_BATCH_SCHEMA) != 0)
        rc = kg_err_set(err, KG_EXIT_IO, "schema %.40s, this kgate writes %s",
                        cJSON_IsString(s) ? s->valuestring : "(none)", KG_BATCH_SCHEMA);
    else if (cJSON_GetObjectItemCaseSensitive(o, "event"))
        *event = 1; /* a progress line of kgate serve: its answer follows */
    else if (cJSON_IsString(i) && strlen(i->valuestring) < size)
        snprintf(id, size, "%s", i->valuestring);
    cJSON_Delete(o);
    return rc;
}

/* Calls fn on every line of f (newline removed), the last one too when it
 * lacks its newline (fn sees whether it parses: a proper prefix of a JSON
 * object never does); lines longer than the buffer are counted as torn. */
static int each_line(FILE *f, int (*fn)(void *ud, const char *line), void *ud, int *torn)
{
    char *buf = malloc(KG_BATCH_LINE_MAX);
    if (!buf)
        return -1;
    int rc = 0;
    while (!rc && fgets(buf, KG_BATCH_LINE_MAX, f)) {
        size_t n = strlen(buf);
        if (n == KG_BATCH_LINE_MAX - 1 && buf[n - 1] != '\n') { /* over-long: skip the rest of it */
            int c;
            while ((c = fgetc(f)) != EOF && c != '\n')
                ;
            (*torn)++;
            continue;
        }
        if (n && buf[n - 1] == '\n')
            buf[--n] = '\0';
        if (buf[0])
            rc = fn(ud, buf);
    }
    free(buf);
    return rc;
}

int kg_results_each(const char *path, int (*fn)(void *ud, const char *line), void *ud, int *torn, kg_err *err)
{
    FILE *f = fopen_regular(path, err);
    if (!f)
        return err->code;
    int rc = each_line(f, fn, ud, torn);
    int bad = ferror(f), e = errno; /* a directory opens, then fails to read */
    fclose(f);
    if (rc < 0)
        return kg_err_set(err, KG_EXIT_ENV, "%s: out of memory", path);
    if (!rc && bad)
        return kg_err_set(err, KG_EXIT_IO, "%s: read: %s", path, strerror(e));
    return rc;
}

typedef struct scan {
    kg_idset *done;
    int *torn;
    kg_err *err;
    int last_ok; /* the last line read was a results line */
} scan;

static int scan_line(void *ud, const char *line)
{
    scan *s = ud;
    char id[200];
    int event;
    s->last_ok = 0;
    if (kg_results_line_id(line, id, sizeof id, &event, s->err))
        return s->err->code;
    if (!id[0]) {
        *s->torn += !event;
        return 0;
    }
    s->last_ok = 1;
    return kg_idset_add(s->done, id) < 0 ? kg_err_set(s->err, KG_EXIT_ENV, "out of memory") : 0;
}

/* The offset just past the last newline before `end` in fd (0 for none), or -1. */
static off_t after_last_newline(int fd, off_t end)
{
    char b[4096];
    while (end > 0) {
        off_t at = end > (off_t)sizeof b ? end - (off_t)sizeof b : 0;
        ssize_t n = pread(fd, b, (size_t)(end - at), at);
        if (n != end - at)
            return -1;
        while (n > 0)
            if (b[--n] == '\n')
                return at + n + 1;
        end = at;
    }
    return 0;
}

int kg_results_open(const char *path, int *fd, kg_idset *done, int *torn, long *cut, kg_err *err)
{
    *torn = 0;
    *cut = 0;
    *fd = kg_open_regular(path, O_RDWR | O_CREAT | O_APPEND, err);
    if (*fd < 0)
        return err->code;
    if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(*fd);
        *fd = -1;
        return e == EWOULDBLOCK
                   ? kg_err_set(err, KG_EXIT_IO, "%s: another batch is writing it (give each its own -o)", path)
                   : kg_err_set(err, KG_EXIT_IO, "%s: flock: %s", path, strerror(e));
    }
    int dup_fd = dup(*fd);
    FILE *f = dup_fd >= 0 ? fdopen(dup_fd, "r") : NULL;
    if (!f) {
        int e = errno;
        if (dup_fd >= 0)
            close(dup_fd);
        close(*fd);
        *fd = -1;
        return kg_err_set(err, KG_EXIT_IO, "%s: %s: %s", path, dup_fd < 0 ? "dup" : "fdopen", strerror(e));
    }
    rewind(f);
    kg_err inner = {0, ""};
    scan s = {done, torn, &inner, 0};
    int rc = each_line(f, scan_line, &s, torn);
    fclose(f);
    if (rc) {
        close(*fd);
        *fd = -1;
        return rc < 0 ? kg_err_set(err, KG_EXIT_ENV, "out of memory")
                      : kg_err_set(err, inner.code, "%s: %s", path, inner.msg);
    }
    /* a last line without its newline: a whole results line (the kill came
     * between its text and its newline, or a line was cut short after it)
     * is finished and gets its newline; a torn one is cut off, so that the
     * next line starts clean and the job runs again */
    off_t end = lseek(*fd, 0, SEEK_END);
    char last = '\n';
    if (end > 0 && pread(*fd, &last, 1, end - 1) != 1)
        return kg_err_set(err, KG_EXIT_IO, "%s: pread: %s", path, strerror(errno));
    if (last == '\n')
        return 0;
    if (s.last_ok)
        return write(*fd, "\n", 1) == 1 ? 0 : kg_err_set(err, KG_EXIT_IO, "%s: write: %s", path, strerror(errno));
    off_t keep = after_last_newline(*fd, end);
    if (keep < 0)
        return kg_err_set(err, KG_EXIT_IO, "%s: pread: %s", path, strerror(errno));
    if (ftruncate(*fd, keep) != 0)
        return kg_err_set(err, KG_EXIT_IO, "%s: ftruncate: %s", path, strerror(errno));
    *cut = (long)(end - keep);
    return 0;
}

typedef struct done_scan {
    scan s;
    const char *path;
    long lines; /* results lines read */
} done_scan;

static int done_line(void *ud, const char *line)
{
    done_scan *d = ud;
    int torn = *d->s.torn, rc = scan_line(&d->s, line);
    if (rc) { /* the line's error, with the file it is in */
        char m[sizeof d->s.err->msg];
        snprintf(m, sizeof m, "%s", d->s.err->msg);
        snprintf(d->s.err->msg, sizeof d->s.err->msg, "%s: %s", d->path, m);
    }
    d->lines += !rc && *d->s.torn == torn;
    return rc;
}

int kg_results_done(const char *path, kg_idset *done, int *torn, kg_err *err)
{
    done_scan d = {{done, torn, err, 0}, path, 0};
    *torn = 0;
    if (kg_results_each(path, done_line, &d, torn, err)) /* its errors name the file */
        return err->code;
    if (!d.lines && *torn)
        return kg_err_set(err, KG_EXIT_IO, "%s: no results line (%d line(s) that are not kgate batch results)", path,
                          *torn);
    return 0;
}

int kg_results_append(int fd, const char *line, kg_err *err)
{
    size_t n = strlen(line) + 1, done = 0;
    char *buf = malloc(n);
    if (!buf)
        return kg_err_set(err, KG_EXIT_ENV, "out of memory");
    memcpy(buf, line, n - 1);
    buf[n - 1] = '\n';
    off_t end = lseek(fd, 0, SEEK_END); /* where the line starts: callers serialize */
    char last = '\n';
    if (end > 0 && pread(fd, &last, 1, end - 1) == 1 && last != '\n') {
        /* a fragment of a writer killed mid-line (its turn passed on,
         * EOWNERDEAD): cut off, or this line would be glued to it and lost */
        off_t keep = after_last_newline(fd, end);
        if (keep < 0 || ftruncate(fd, keep) != 0) {
            int e = errno;
            free(buf);
            return kg_err_set(err, KG_EXIT_IO, "%s: %s (a fragment at the end of the file)",
                              keep < 0 ? "pread" : "ftruncate", strerror(e));
        }
        end = keep;
    }
    ssize_t w = 0;
    /* one write: O_APPEND puts it at the end whole; after a short one the
     * rest is written again, which ends the line or says why it cannot */
    while (done < n && ((w = write(fd, buf + done, n - done)) > 0 || (w < 0 && errno == EINTR)))
        if (w > 0)
            done += (size_t)w;
    int e = w < 0 ? errno : ENOSPC;
    free(buf);
    if (done == n)
        return 0;
    if (done == 0)
        return kg_err_set(err, KG_EXIT_IO, "write: %s", strerror(e));
    if (end < 0 || ftruncate(fd, end) != 0) /* the fragment cut off, the file as it was */
        return kg_err_set(err, KG_EXIT_IO, "write: %s after %zu of %zu bytes, and %s: %s (a torn last line left)",
                          strerror(e), done, n, end < 0 ? "lseek" : "ftruncate", strerror(errno));
    return kg_err_set(err, KG_EXIT_IO, "write: %s after %zu of %zu bytes (the fragment cut off)", strerror(e), done,
                      n);
}

typedef struct merge {
    kg_idset seen;
    FILE *out;
    long kept, dups;
    const char *path;
    kg_err *err;
} merge;

static int merge_line(void *ud, const char *line)
{
    merge *m = ud;
    char id[200];
    int event;
    if (kg_results_line_id(line, id, sizeof id, &event, m->err)) {
        char why[400];
        snprintf(why, sizeof why, "%s", m->err->msg);
        return kg_err_set(m->err, m->err->code, "%s: %s", m->path, why);
    }
    if (!id[0])
        return 0;
    int added = kg_idset_add(&m->seen, id);
    if (added < 0)
        return kg_err_set(m->err, KG_EXIT_ENV, "out of memory");
    if (!added) {
        m->dups++;
        return 0;
    }
    m->kept++;
    return fprintf(m->out, "%s\n", line) < 0 ? kg_err_set(m->err, KG_EXIT_IO, "write: %s", strerror(errno)) : 0;
}

int kg_results_merge(const char *out, const char *const *in, int n_in, long *n_lines, long *n_dups, kg_err *err)
{
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", out, (int)getpid());
    merge m = {{0}, fopen(tmp, "w"), 0, 0, NULL, err};
    if (!m.out)
        return kg_err_set(err, KG_EXIT_IO, "%s: %s", tmp, strerror(errno));
    int rc = 0, torn = 0;
    for (int i = 0; i < n_in && !rc; i++) {
        FILE *f = fopen_regular(in[i], err);
        if (!f) {
            rc = err->code;
            break;
        }
        m.path = in[i];
        rc = each_line(f, merge_line, &m, &torn);
        if (rc < 0)
            rc = kg_err_set(err, KG_EXIT_ENV, "out of memory");
        fclose(f);
    }
    if (fclose(m.out) != 0 && !rc)
        rc = kg_err_set(err, KG_EXIT_IO, "%s: %s", tmp, strerror(errno));
    kg_idset_free(&m.seen);
    if (!rc && rename(tmp, out) != 0)
        rc = kg_err_set(err, KG_EXIT_IO, "%s: %s", out, strerror(errno));
    if (rc)
        unlink(tmp);
    *n_lines = m.kept;
    *n_dups = m.dups;
    return rc;
}
