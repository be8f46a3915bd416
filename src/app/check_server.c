/* kgate check --server SOCK: the check sent to a running kgate serve as
 * one manifest line (the candidate's absolute path, its kernel, the other
 * options as given) and the answer printed, written (--json) and exited
 * with as kgate check would; the service's progress lines go to --events
 * as the check's own would. Stopped (SIGINT, SIGTERM), it cancels the
 * request and waits a while for the answer, with what was measured. Where
 * no service answers at SOCK, or the options do not fit a manifest line,
 * the check runs here, said on stderr. */
#include "check_int.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../base/text.h"
#include "../catalog/plugin_check.h"
#include "../store/batch.h"
#include "serve_cmd.h"

#define ANSWER_MAX (KG_BATCH_LINE_MAX + 1024)
#define ANSWER_WAIT_S (6 * 3600.0) /* a service ends a request at its --job-timeout (default 600 s) */
#define CANCEL_WAIT_S 30.0         /* a cancelled request's answer: its check stopped, killed after a grace */

/* Whether a is option name: 1 as "NAME" (its value next), 2 as
 * "NAME=VALUE", else 0. */
static int names(const char *a, const char *name)
{
    size_t n = strlen(name);
    return strncmp(a, name, n) != 0 ? 0 : a[n] == '\0' ? 1 : a[n] == '=' ? 2 : 0;
}

/* Whether argv[i] (and its value) is one the service must not get: the
 * candidate, --server, --json and --events (written here from the answer),
 * --device (the service's GPU is its --gpu; --server auto picks the
 * service of --device), -q and -v. *skip: how many arguments that is. */
static int local_only(const kg_options *o, int i, int *skip)
{
    const char *a = o->argv[i];
    static const char *const valued[] = {"--server", "--json", "--events", "--device"};
    *skip = 1;
    if (a == o->candidate || strcmp(a, "-q") == 0 || strcmp(a, "-v") == 0)
        return 1;
    for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) {
        int how = names(a, valued[k]);
        if (how) {
            *skip = how == 1 ? 2 : 1;
            return 1;
        }
    }
    return 0;
}

/* The request of id: NULL (why in why) when it does not fit a manifest line. */
static char *request(const kg_options *o, const char *id, char *why, size_t size)
{
    char cand[PATH_MAX], kernel[96], abs[PATH_MAX];
    if (kg_candidate_split(o->candidate, cand, sizeof cand, kernel, sizeof kernel) || !realpath(cand, abs)) {
        snprintf(why, size, "%s: not a file here", o->candidate);
        return NULL;
    }
    cJSON *j = cJSON_CreateObject(), *opts = cJSON_CreateArray();
    cJSON_AddStringToObject(j, "id", id);
    cJSON_AddStringToObject(j, "candidate", abs);
    if (kernel[0])
        cJSON_AddStringToObject(j, "kernel", kernel);
    int n = 0, skip;
    for (int i = 2; i < o->argc; i += skip) {
        if (local_only(o, i, &skip))
            continue;
        if (n == KG_BATCH_MAX_OPTS || strlen(o->argv[i]) >= 128) {
            snprintf(why, size, "its options do not fit a request (at most %d, each under 128 bytes)",
                     KG_BATCH_MAX_OPTS);
            cJSON_Delete(opts);
            cJSON_Delete(j);
            return NULL;
        }
        cJSON_AddItemToArray(opts, cJSON_CreateString(o->argv[i]));
        n++;
    }
    cJSON_AddItemToObject(j, "options", opts);
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return text;
}

/* Connected to the service at path: the socket, or -1. */
static int dial(const char *path, char *why, size_t size)
{
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof a.sun_path) {
        snprintf(why, size, "a socket path of %zu bytes", strlen(path));
        return -1;
    }
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
        return fd;
    snprintf(why, size, "%s", strerror(errno));
    if (fd >= 0)
        close(fd);
    return -1;
}

/* Whether line is a progress line of the service (docs/serve.md): one of
 * request id goes to --events as this check's own would. */
static int progress(const char *line, const char *id)
{
    cJSON *o = cJSON_Parse(line);
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(o, "event"), *i = cJSON_GetObjectItemCaseSensitive(o, "id");
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(o, "result");
    int is = ev != NULL;
    if (cJSON_IsString(ev) && strcmp(ev->valuestring, "kernel") == 0 && cJSON_IsString(i) &&
        strcmp(i->valuestring, id) == 0 && cJSON_IsObject(res)) {
        char *t = cJSON_PrintUnformatted(res);
        kg_check_event(t);
        free(t);
    }
    cJSON_Delete(o);
    return is;
}

/* Sends text (request id) and a newline, then reads its answer line, the
 * progress lines before it taken (bounded, under a deadline); stopped by
 * SIGINT/SIGTERM, the request is cancelled and its answer waited for a
 * while. The answer, malloc'd, or NULL with err set. */
static char *exchange(int fd, const char *text, const char *id, kg_err *err)
{
    size_t got = 0;
    int cancelled = 0;
    if (kg_write_line(fd, text)) {
        kg_err_set(err, KG_EXIT_ENV, "kgate serve: sending the request: %s", strerror(errno));
        return NULL;
    }
    char *buf = malloc(ANSWER_MAX + 1);
    double end = kg_mono() + ANSWER_WAIT_S;
    while (buf) {
        char *nl = memchr(buf, '\n', got);
        if (nl) {
            *nl = '\0';
            if (!progress(buf, id))
                return buf;
            got -= (size_t)(nl + 1 - buf);
            memmove(buf, nl + 1, got);
            continue;
        }
        if (kg_stop_requested() && !cancelled) {
            char line[256];
            snprintf(line, sizeof line, "{\"cancel\":\"%s\"}", id);
            cancelled = 1;
            end = kg_mono() + CANCEL_WAIT_S;
            if (kg_write_line(fd, line))
                break;
        }
        if (kg_mono() > end || got == ANSWER_MAX)
            break;
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 200) <= 0)
            continue;
        ssize_t r = read(fd, buf + got, ANSWER_MAX - got);
        if (r <= 0 && !(r < 0 && errno == EINTR))
            break;
        got += r > 0 ? (size_t)r : 0;
    }
    free(buf);
    if (kg_stop_requested())
        kg_err_set(err, KG_EXIT_STOPPED, "stopped while kgate serve judged it: cancelled, no answer within %g s",
                   CANCEL_WAIT_S);
    else
        kg_err_set(err, KG_EXIT_ENV, "kgate serve gave no answer%s", got == ANSWER_MAX ? " under 4 MiB" : "");
    return NULL;
}

/* What the service's check said without failing ("notes"), on stderr as a
 * check here would say it (not under -q): each cleaned, KG_BATCH_NOTES at most. */
static void say_notes(const kg_options *o, const char *text)
{
    cJSON *j = o->quiet ? NULL : cJSON_Parse(text);
    const cJSON *x, *notes = cJSON_GetObjectItemCaseSensitive(j, "notes");
    char buf[KG_BATCH_NOTE_MAX];
    int n = 0;
    cJSON_ArrayForEach(x, notes) {
        if (cJSON_IsString(x) && n++ < KG_BATCH_NOTES) {
            kg_text_clean(buf, sizeof buf, x->valuestring);
            fprintf(stderr, "kgate: %s\n", buf);
        }
    }
    cJSON_Delete(j);
}

/* The answer as kgate check's end: the report printed and written, its
 * exit code; a refused request's error said, with its exit code. */
static int answer(const kg_options *o, const char *text)
{
    kg_err err = {0, ""};
    kg_batch_answer a;
    int rc;
    say_notes(o, text);
    if (kg_report_answer(text, "kgate serve's answer", 1, &a, &err) || a.code < 0) {
        kg_err_set(&err, KG_EXIT_ENV, "kgate serve's answer is not a %s line", KG_BATCH_SCHEMA);
        rc = kg_cmds_fail(&err);
    } else if (a.doc_error[0]) {
        kg_err_set(&err, a.doc_code, "%s", a.doc_error);
        rc = kg_cmds_fail(&err);
    } else if (!a.has_check) { /* refused, or the check gave no results: its exit code and error */
        kg_err_set(&err, a.code > 0 && a.code < 128 ? a.code : KG_EXIT_ENV, "%.400s",
                   a.error[0] ? a.error : "kgate serve answered without results");
        rc = kg_cmds_fail(&err);
    } else {
        kg_check_finish_print(o, &a.rep, 0, &err);
        rc = kg_check_finish_exit(o, &a.rep, 0, &err);
        if (a.code >= 3 && rc < 3) { /* the service's check ended badly after some results */
            fprintf(stderr, "kgate: %.400s\n", a.error[0] ? a.error : "the check failed");
            rc = a.code;
        }
    }
    kg_report_free(&a.rep);
    return rc;
}

/* Whether --device was given: a service at a socket named by path judges
 * on its own GPU, which may not be that one. */
static int device_given(const kg_options *o)
{
    for (int i = 2; i < o->argc; i++)
        if (names(o->argv[i], "--device"))
            return 1;
    return 0;
}

int kg_check_via_server(const kg_options *o, int *code)
{
    char why[320] = "";
    kg_err err = {0, ""};
    char path[PATH_MAX];
    int fd = -1;
    if (strcmp(o->server, "auto") != 0 && device_given(o)) {
        fprintf(stderr, "kgate: --server %s with --device: a service judges on its own GPU (its --gpu; "
                        "--server auto asks the one of --device): checking here\n", o->server);
        return 0;
    }
    snprintf(path, sizeof path, "%s", o->server);
    if (kg_serve_socket_path(o->server, o->device, 0, path, sizeof path, &err))
        snprintf(why, sizeof why, "%s", err.msg);
    else
        fd = dial(path, why, sizeof why);
    if (fd < 0) {
        fprintf(stderr, "kgate: no kgate serve answers at %s (%s): checking here\n", path, why);
        return 0;
    }
    char id[48];
    snprintf(id, sizeof id, "check-%ld", (long)getpid());
    char *req = request(o, id, why, sizeof why);
    if (!req) {
        close(fd);
        fprintf(stderr, "kgate: --server: %s: checking here\n", why);
        return 0;
    }
    char *ans = exchange(fd, req, id, &err);
    close(fd);
    free(req);
    *code = ans ? answer(o, ans) : kg_cmds_fail(&err);
    free(ans);
    return 1;
}
