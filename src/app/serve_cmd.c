/* kgate serve: a long-lived judge for an optimizer loop (docs/serve.md).
 * A request is one manifest line of kgate batch ({"id", "candidate",
 * "kernel", "op", "dtype", "shape", "options"}); its answer is one results
 * line of kgate batch (schema kgate.batch/1, the check's whole results
 * document in "check"), so that kgate report and compare read a service's
 * answers as they read a batch's. Before it, a progress line as each kernel
 * is judged ({"schema", "id", "event": "kernel", "result"}), forwarded from
 * the check's --events file once bounded and parsed. Requests come over
 * standard input (--stdio) or a Unix socket that only this user may use
 * (serve_conn.c reads them, and the cancel lines), and run one at a time on
 * one GPU, each as `kgate check` in a process of its own: candidate code
 * never runs in the service. What stays warm between requests: the Python
 * fork server (the next request's process is forked ahead with its server
 * started, as kgate batch does, while the service waits and kept while
 * other requests run), the library times (--lib-cache, keyed by operator,
 * dtype, shape, GPU, driver, library versions and flush) and the roofs
 * (cached per GPU). */
#include "serve_cmd.h"

#include "batch_int.h"
#include "optable.h"
#include "options.h"
#include "serve_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../base/text.h"

#define SERVE_CHECK_MAX 32            /* options after -- for every request's check */
#define SERVE_EVENT_MAX (1 << 20)     /* one progress line of a check: one kernel's result */
#define SERVE_EVENTS_MAX 4096         /* progress lines forwarded a request; the rest dropped */
#define SERVE_EVENTS_BYTES (64 << 20) /* what is read of a request's progress file */

/* The service as its arguments set it up. */
typedef struct serve_cfg {
    const char *socket; /* --socket PATH, or NULL with --stdio */
    int stdio;
    int gpu;            /* --gpu N: the device every request runs on */
    double idle_s;      /* --idle-timeout: the service ends after this long without a request */
    kg_batch_cfg batch; /* what each request's check gets: its runner, --job-timeout, the options */
    char *check[SERVE_CHECK_MAX + 4];
    char dir[PATH_MAX]; /* the requests' files: DIR/job.json, DIR/job.log, DIR/events.jsonl */
    char events[PATH_MAX + 16];
} serve_cfg;

static int usage(const char *m)
{
    fprintf(stderr, "kgate: %s\n", m);
    return KG_EXIT_USAGE;
}

/* kgate serve's arguments into s. 0, or an exit code (-1: --help printed). */
static int serve_args(int argc, char **argv, serve_cfg *s)
{
    const kg_optdef opts[] = {
        {"--socket", KG_OPT_STR, &s->socket, 0, 0, NULL, "serve", NULL},
        {"--stdio", KG_OPT_FLAG, &s->stdio, 1, 0, NULL, "serve", NULL},
        {"--gpu", KG_OPT_INT, &s->gpu, 0, 64, NULL, "serve", NULL},
        {"--idle-timeout", KG_OPT_NUM, &s->idle_s, 1, 1e6, NULL, "serve", NULL},
        {"--job-timeout", KG_OPT_NUM, &s->batch.timeout_s, 0.001, 1e6, NULL, "serve", NULL},
    };
    kg_err err = {0, ""};
    int n = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(kg_usage("serve"), stdout);
            return -1;
        }
        if (strcmp(a, "--") == 0) {
            for (i++; i < argc; i++) {
                if (n == SERVE_CHECK_MAX)
                    return usage("serve: at most 32 check options after --");
                s->check[n++] = argv[i];
            }
            break;
        }
        if (a[0] != '-')
            return usage("serve: unexpected argument (requests come over --stdio or --socket)");
        if (kg_opt_one(opts, sizeof opts / sizeof opts[0], "serve", argc, argv, &i, s, &err))
            return usage(err.msg);
    }
    if (!s->stdio == !s->socket)
        return usage("serve: one of --stdio or --socket PATH (kgate help serve)");
    s->check[n++] = "--lib-cache"; /* library times stay warm between requests */
    s->check[n++] = "--events";    /* a line as each kernel is judged: forwarded */
    s->check[n++] = s->events;
    s->check[n] = NULL;
    s->batch.check = s->check;
    s->batch.n_check = n;
    return 0;
}

/* A running request's progress: its check's --events file, read as it
 * grows, each line bounded and parsed before it is forwarded. */
typedef struct serve_run {
    serve_conn *c;
    const char *id;
    int fd;        /* the events file, or -1 */
    char *buf;     /* a line not yet whole */
    size_t len;
    long total;    /* bytes read of the file */
    int skipping;  /* the rest of a line over SERVE_EVENT_MAX is dropped */
    int sent, dropped;
} serve_run;

/* One progress line of the check (k bytes), {"event": "kernel", "result":
 * {..., "kernel", "verdict", ...}} and nothing else, sent as the request's. */
static void forward_line(serve_run *r, const char *line, size_t k)
{
    cJSON *o = memchr(line, '\0', k) ? NULL : cJSON_ParseWithOpts(line, NULL, 1); /* the whole line */
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(o, "event");
    cJSON *res = cJSON_GetObjectItemCaseSensitive(o, "result");
    if (r->sent >= SERVE_EVENTS_MAX || !cJSON_IsObject(o) || cJSON_GetArraySize(o) != 2 || !cJSON_IsString(ev) ||
        strcmp(ev->valuestring, "kernel") != 0 || !cJSON_IsObject(res) ||
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(res, "kernel")) ||
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(res, "verdict"))) {
        r->dropped++;
        cJSON_Delete(o);
        return;
    }
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "schema", KG_BATCH_SCHEMA);
    cJSON_AddStringToObject(a, "id", r->id);
    cJSON_AddStringToObject(a, "event", "kernel");
    cJSON_AddItemToObject(a, "result", cJSON_DetachItemViaPointer(o, res));
    kg_json_clean(a); /* the check's text: candidates' names, a worker's words */
    char *t = cJSON_PrintUnformatted(a);
    if (t && serve_send(r->c, t) == 0)
        r->sent++;
    free(t);
    cJSON_Delete(a);
    cJSON_Delete(o);
}

/* The lines the check added to its events file since the last call. */
static void forward_events(serve_run *r)
{
    while (r->fd >= 0 && !r->c->gone) {
        ssize_t n = read(r->fd, r->buf + r->len, SERVE_EVENT_MAX - r->len);
        if (n <= 0)
            return; /* its end for now */
        r->len += (size_t)n;
        r->total += n;
        char *nl;
        size_t at = 0;
        while ((nl = memchr(r->buf + at, '\n', r->len - at))) {
            size_t k = (size_t)(nl - (r->buf + at));
            *nl = '\0';
            if (r->skipping)
                r->skipping = 0;
            else
                forward_line(r, r->buf + at, k);
            at += k + 1;
        }
        memmove(r->buf, r->buf + at, r->len - at);
        r->len -= at;
        if (r->len == SERVE_EVENT_MAX) { /* a line over the cap: dropped to its end */
            r->dropped += !r->skipping;
            r->skipping = 1;
            r->len = 0;
        }
        if (r->total > SERVE_EVENTS_BYTES) { /* no more is read */
            r->dropped++;
            close(r->fd);
            r->fd = -1;
        }
    }
}

/* The watch of a running request: its progress forwarded, its client read;
 * a cancel line naming it, or the client gone, ends it. */
static int tick(void *ud, char *why, size_t size)
{
    serve_run *r = ud;
    forward_events(r);
    serve_conn_read(r->c, 0);
    if (r->c->gone)
        snprintf(why, size, "the client left");
    else if (r->c->cancel)
        snprintf(why, size, "the client asked");
    return r->c->gone || r->c->cancel;
}

/* A fresh events file for the next check (its own, mode 0600). */
static void run_begin(const serve_cfg *s, serve_run *r)
{
    unlink(s->events); /* no earlier request's lines can pass for this one's */
    r->buf = malloc(SERVE_EVENT_MAX + 1);
    r->fd = r->buf ? open(s->events, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
    if (r->fd < 0)
        fprintf(stderr, "kgate: serve: request %s: %s: %s: its progress is not sent\n", r->id, s->events,
                r->buf ? strerror(errno) : "out of memory");
}

static void run_end(serve_run *r)
{
    if (r->dropped)
        fprintf(stderr,
                "kgate: serve: request %s: %d progress line(s) of its check dropped (over 1 MiB, not a kernel's "
                "result, or past %d); its answer has every result\n",
                r->id, r->dropped, SERVE_EVENTS_MAX);
    if (r->fd >= 0)
        close(r->fd);
    free(r->buf);
}

/* One request, parsed as a manifest line and run, its progress and answer
 * sent. Returns 0 to go on, 1 when the service must stop (a signal, a
 * process that would not die), -1 when the client is gone. */
static int serve_one(serve_cfg *s, serve_conn *c, const serve_req *q)
{
    kg_batch_job j;
    kg_err err = {0, ""};
    if (kg_manifest_line(q->line, q->n, &j, &err))
        return serve_send_error(c, NULL, KG_EXIT_USAGE, err.msg);
    if (j.gpu >= 0 && j.gpu != s->gpu) {
        char m[128];
        snprintf(m, sizeof m, "request %d: \"gpu\" %d, but this service judges on GPU %d", q->n, j.gpu, s->gpu);
        return serve_send_error(c, j.id, KG_EXIT_USAGE, m);
    }
    kg_batch_view v = {NULL, s->gpu};
    serve_run r = {c, j.id, -1, NULL, 0, 0, 0, 0, 0};
    kg_batch_watch w = {tick, &r, ""};
    char *text = NULL;
    run_begin(s, &r);
    c->running = j.id;
    c->cancel = 0;
    int rc = kg_batch_run_job(&s->batch, &j, s->gpu, &v, s->dir, &w, &text, &err);
    c->running = NULL;
    forward_events(&r); /* its last lines, before its answer */
    run_end(&r);
    if (rc == RUN_STOPPED)
        return serve_send_error(c, j.id, KG_EXIT_STOPPED, "stopped by a signal: the service ends") < 0 ? -1 : 1;
    if (rc < 0) {
        serve_send_error(c, j.id, KG_EXIT_ENV, err.msg);
        return 1;
    }
    int sent = serve_send(c, text);
    free(text);
    return sent;
}

/* One client's requests until its end (0), the idle timeout (2, said:
 * *last is when the last request ended), a stop (1) or the client gone (-1). */
static int serve_client(serve_cfg *s, int in, int out, int sock, int *served, double *last)
{
    serve_conn c;
    serve_req q;
    int rc = 0;
    if (serve_conn_open(&c, in, out, sock, served)) {
        fprintf(stderr, "kgate: serve: out of memory for a client\n");
        return 1;
    }
    while (rc == 0) {
        if (c.gone) {
            rc = -1;
        } else if (serve_conn_pop(&c, &q)) {
            rc = serve_one(s, &c, &q);
            free(q.line);
            *last = kg_mono();
        } else if (c.eof) {
            break;
        } else if (kg_stop_requested()) {
            rc = 1;
        } else {
            kg_batch_slot_ahead(&s->batch, NULL); /* the next Python request's fork server, warming while idle */
            double left = s->idle_s - (kg_mono() - *last);
            if (left <= 0)
                rc = 2;
            else
                serve_conn_read(&c, (int)(left < 0.2 ? left * 1000 + 1 : 200));
        }
    }
    serve_conn_close(&c);
    return rc;
}

int kg_serve_socket_path(const char *arg, int gpu, int make_dir, char *path, size_t size, kg_err *err)
{
    if (strcmp(arg, "auto") != 0) {
        snprintf(path, size, "%s", arg);
    } else {
        const char *rt = getenv("XDG_RUNTIME_DIR");
        char dir[PATH_MAX];
        if (rt && *rt)
            snprintf(dir, sizeof dir, "%s/kgate", rt);
        else
            snprintf(dir, sizeof dir, "/tmp/kgate-%u", (unsigned)getuid());
        if (make_dir && mkdir(dir, 0700) != 0 && errno != EEXIST)
            return kg_err_set(err, KG_EXIT_IO, "--socket auto: mkdir %s: %s", dir, strerror(errno));
        snprintf(path, size, "%s/serve-gpu%d.sock", dir, gpu);
    }
    if (strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return kg_err_set(err, KG_EXIT_USAGE, "--socket %s: a Unix socket's path is at most %zu bytes", path,
                          sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
    return 0;
}

/* Listens on path (mode 0600). A service already answering there is
 * refused, naming it; a socket nobody answers on (a service that died) is
 * replaced; anything else at path is left alone and refused. */
static int socket_open(const char *path, int *fd, kg_err *err)
{
    struct sockaddr_un a;
    struct stat st;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return kg_err_set(err, KG_EXIT_IO, "--socket %s: exists and is not a socket", path);
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int live = probe >= 0 && connect(probe, (struct sockaddr *)&a, sizeof a) == 0;
        if (probe >= 0)
            close(probe);
        if (live)
            return kg_err_set(err, KG_EXIT_ENV, "a kgate serve already listens on %s", path);
        unlink(path);
    }
    *fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (*fd < 0)
        return kg_err_set(err, KG_EXIT_ENV, "socket: %s", strerror(errno));
    mode_t old = umask(0177); /* the socket is born 0600: no moment where another user could connect */
    int bad = bind(*fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(*fd, 16) != 0;
    umask(old);
    if (bad || chmod(path, 0600) != 0) {
        kg_err_set(err, KG_EXIT_IO, "--socket %s: %s", path, strerror(errno));
        close(*fd);
        return err->code;
    }
    return 0;
}

/* A client of this user only (the kernel's word for the peer's uid). */
static int same_user(int c)
{
    struct ucred u;
    socklen_t n = sizeof u;
    return getsockopt(c, SOL_SOCKET, SO_PEERCRED, &u, &n) == 0 && n == sizeof u && u.uid == getuid();
}

/* Clients taken one at a time until the idle timeout (0) or a stop (1). */
static int serve_socket(serve_cfg *s, int lfd, int *served)
{
    double last = kg_mono();
    for (;;) {
        if (kg_stop_requested())
            return 1;
        double left = s->idle_s - (kg_mono() - last);
        if (left <= 0)
            return 2;
        struct pollfd p = {lfd, POLLIN, 0};
        int pr = poll(&p, 1, (int)(left < 0.2 ? left * 1000 + 1 : 200));
        if (pr <= 0)
            continue;
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        if (!same_user(c)) {
            serve_conn refused = {.in = c, .out = c, .sock = 1};
            serve_send_error(&refused, NULL, KG_EXIT_USAGE, "this kgate serve answers only the user that started it");
            close(c);
            continue;
        }
        int rc = serve_client(s, c, c, 1, served, &last);
        close(c);
        if (rc == 1 || rc == 2)
            return rc;
    }
}

int kg_cmd_serve(int argc, char **argv)
{
    serve_cfg s;
    memset(&s, 0, sizeof s);
    s.idle_s = 600;
    s.batch.timeout_s = 600;
    s.batch.keep_slot = 1;
    int rc = serve_args(argc, argv, &s);
    if (rc)
        return rc < 0 ? 0 : rc;
    kg_self_exe(s.batch.exe, sizeof s.batch.exe);
    kg_catch_stop_signals(0);
    signal(SIGPIPE, SIG_IGN); /* a client that leaves is a write error, not the end of the service */
    const char *tmp = getenv("TMPDIR");
    snprintf(s.dir, sizeof s.dir, "%s/kgate-serve-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(s.dir)) {
        fprintf(stderr, "kgate: serve: mkdtemp %s: %s\n", s.dir, strerror(errno));
        return KG_EXIT_IO;
    }
    snprintf(s.events, sizeof s.events, "%s/events.jsonl", s.dir);
    kg_err err = {0, ""};
    char path[PATH_MAX] = "";
    int lfd = -1, served = 0;
    double last = kg_mono();
    if (s.stdio) {
        rc = serve_client(&s, 0, 1, 0, &served, &last);
    } else if (kg_serve_socket_path(s.socket, s.gpu, 1, path, sizeof path, &err) || socket_open(path, &lfd, &err)) {
        fprintf(stderr, "kgate: %s\n", err.msg);
        kg_batch_remove_dir(s.dir);
        return err.code;
    } else {
        fprintf(stderr, "kgate: serve: listening on %s (GPU %d)\n", path, s.gpu);
        kg_batch_slot_ahead(&s.batch, NULL); /* warming before the first client comes */
        rc = serve_socket(&s, lfd, &served);
        close(lfd);
        unlink(path);
    }
    kg_batch_slot_drop();
    kg_batch_remove_dir(s.dir);
    if (rc == 2)
        fprintf(stderr, "kgate: serve: no request for %g s: ending after %d request(s)\n", s.idle_s, served);
    if (rc == 1 || kg_stop_requested())
        return KG_EXIT_STOPPED;
    return rc < 0 ? KG_EXIT_IO : 0;
}
