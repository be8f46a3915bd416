/* kgate serve: a long-lived judge for an optimizer loop (docs/serve.md).
 * A request is one manifest line of kgate batch ({"id", "candidate",
 * "kernel", "op", "dtype", "shape", "options"}); its answer is one results
 * line of kgate batch (schema kgate.batch/1, the check's whole results
 * document in "check"), so that kgate report and compare read a service's
 * answers as they read a batch's. Requests come over standard input
 * (--stdio) or a Unix socket that only this user may use, and run one at a
 * time on one GPU, each as `kgate check` in a process of its own: candidate
 * code never runs in the service. What stays warm between requests: the
 * Python fork server (the next request's process is forked ahead with its
 * server started, as kgate batch does), the library times (--lib-cache,
 * keyed by operator, dtype, shape, GPU, driver, library versions and flush)
 * and the roofs (cached per GPU). */
#include "serve_cmd.h"

#include "batch_int.h"
#include "optable.h"
#include "options.h"

#include <errno.h>
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

#define SERVE_REQUEST_MAX (64 << 10) /* one request line: a manifest line is a few hundred bytes */
#define SERVE_CHECK_MAX 32           /* options after -- for every request's check */

/* The service as its arguments set it up. */
typedef struct serve_cfg {
    const char *socket; /* --socket PATH, or NULL with --stdio */
    int stdio;
    int gpu;            /* --gpu N: the device every request runs on */
    double idle_s;      /* --idle-timeout: the service ends after this long without a request */
    kg_batch_cfg batch; /* what each request's check gets: its runner, --job-timeout, the options */
    char *check[SERVE_CHECK_MAX + 2];
    char dir[PATH_MAX]; /* the requests' files: DIR/job.json, DIR/job.log */
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
    s->check[n] = NULL;
    s->batch.check = s->check;
    s->batch.n_check = n;
    return 0;
}

/* An answer without a check: exit and error, under the request's id when
 * it had a readable one. */
static int send_error(int fd, const char *id, int code, const char *msg)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "schema", KG_BATCH_SCHEMA);
    if (id && *id)
        cJSON_AddStringToObject(a, "id", id);
    else
        cJSON_AddNullToObject(a, "id");
    cJSON_AddNumberToObject(a, "exit", code);
    cJSON_AddStringToObject(a, "error", msg);
    kg_json_clean(a);
    char *t = cJSON_PrintUnformatted(a);
    int rc = t ? kg_write_line(fd, t) : -1;
    free(t);
    cJSON_Delete(a);
    return rc;
}

/* One request line: parsed as a manifest line and run, its answer sent.
 * Returns 0 to go on, 1 when the service must stop (a signal, a process
 * that would not die), -1 when the client is gone. */
static int serve_one(serve_cfg *s, int out, const char *line, int n)
{
    kg_batch_job j;
    kg_err err = {0, ""};
    if (kg_manifest_line(line, n, &j, &err))
        return send_error(out, NULL, KG_EXIT_USAGE, err.msg);
    if (j.gpu >= 0 && j.gpu != s->gpu) {
        char m[128];
        snprintf(m, sizeof m, "request %d: \"gpu\" %d, but this service judges on GPU %d", n, j.gpu, s->gpu);
        return send_error(out, j.id, KG_EXIT_USAGE, m);
    }
    kg_batch_view v = {NULL, s->gpu};
    char *text = NULL;
    int rc = kg_batch_run_job(&s->batch, &j, s->gpu, &v, s->dir, &text, &err);
    if (rc == RUN_STOPPED)
        return send_error(out, j.id, KG_EXIT_STOPPED, "stopped by a signal: the service ends") < 0 ? -1 : 1;
    if (rc < 0) {
        send_error(out, j.id, KG_EXIT_ENV, err.msg);
        return 1;
    }
    int sent = kg_write_line(out, text);
    free(text);
    return sent;
}

/* Requests read from in until its end (0), the idle timeout (2, said:
 * *last is when the last request ended), a stop (1) or a lost client (-1);
 * answers go to out. A line longer than SERVE_REQUEST_MAX, or holding a
 * NUL, is answered with an error and dropped. */
static int serve_stream(serve_cfg *s, int in, int out, int *served, double *last)
{
    char *buf = malloc(SERVE_REQUEST_MAX + 1);
    size_t len = 0;
    int skipping = 0, rc = 0;
    if (!buf)
        return send_error(out, NULL, KG_EXIT_ENV, "out of memory for a request") ? -1 : 1;
    while (rc == 0) {
        char *nl;
        while (rc == 0 && (nl = memchr(buf, '\n', len))) {
            size_t k = (size_t)(nl - buf);
            *nl = '\0';
            if (skipping)
                skipping = 0;
            else if (memchr(buf, '\0', k))
                rc = send_error(out, NULL, KG_EXIT_USAGE, "a request holds a NUL byte");
            else if (k && strspn(buf, " \t\r") < k)
                rc = serve_one(s, out, buf, ++*served);
            memmove(buf, nl + 1, len - k - 1);
            len -= k + 1;
            *last = kg_mono();
        }
        if (rc)
            break;
        if (len == SERVE_REQUEST_MAX) { /* no newline in reach: answered once, dropped to its end */
            if (!skipping)
                rc = send_error(out, NULL, KG_EXIT_USAGE, "a request over 64 KiB");
            skipping = 1;
            len = 0;
            continue;
        }
        if (kg_stop_requested()) {
            rc = 1;
            break;
        }
        double left = s->idle_s - (kg_mono() - *last);
        if (left <= 0) {
            rc = 2;
            break;
        }
        struct pollfd p = {in, POLLIN, 0};
        int pr = poll(&p, 1, (int)(left < 0.2 ? left * 1000 + 1 : 200));
        if (pr < 0 && errno != EINTR) {
            rc = -1;
            break;
        }
        if (pr <= 0)
            continue;
        ssize_t r = read(in, buf + len, SERVE_REQUEST_MAX - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break; /* its end: a last line without a newline is not a request */
        len += (size_t)r;
    }
    free(buf);
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
            send_error(c, NULL, KG_EXIT_USAGE, "this kgate serve answers only the user that started it");
            close(c);
            continue;
        }
        int rc = serve_stream(s, c, c, served, &last);
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
    kg_err err = {0, ""};
    char path[PATH_MAX] = "";
    int lfd = -1, served = 0;
    double last = kg_mono();
    if (s.stdio) {
        rc = serve_stream(&s, 0, 1, &served, &last);
    } else if (kg_serve_socket_path(s.socket, s.gpu, 1, path, sizeof path, &err) || socket_open(path, &lfd, &err)) {
        fprintf(stderr, "kgate: %s\n", err.msg);
        kg_batch_remove_dir(s.dir);
        return err.code;
    } else {
        fprintf(stderr, "kgate: serve: listening on %s (GPU %d)\n", path, s.gpu);
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
