/* A client's connection to `kgate serve` (docs/serve.md): its lines read as
 * they come, also while a request runs, into a queue of at most
 * SERVE_QUEUE_MAX requests (then the client's further lines wait in its
 * pipe or socket); a line {"cancel": ID} acted on when read; answers sent
 * with a deadline; a client that left (its socket closed, the reader of
 * standard output gone) seen, so that its request is cancelled. A line over
 * SERVE_REQUEST_MAX or holding a NUL is answered with an error and dropped. */
#include "serve_int.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../base/text.h"

int serve_conn_open(serve_conn *c, int in, int out, int sock, int *served)
{
    memset(c, 0, sizeof *c);
    c->in = in;
    c->out = out;
    c->sock = sock;
    c->served = served;
    c->buf = malloc(SERVE_REQUEST_MAX + 1);
    return c->buf ? 0 : -1;
}

void serve_conn_close(serve_conn *c)
{
    for (int i = 0; i < c->q_n; i++)
        free(c->q[i].line);
    c->q_n = 0;
    free(c->buf);
    c->buf = NULL;
}

/* Writes n bytes at most without blocking: a socket's send, or a pipe's
 * write of PIPE_BUF at most once poll said there is room (then it does not
 * block). */
static ssize_t put(const serve_conn *c, const char *p, size_t n)
{
    if (c->sock)
        return send(c->out, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    return write(c->out, p, n < PIPE_BUF ? n : PIPE_BUF);
}

static int send_bytes(serve_conn *c, const char *p, size_t n, double end)
{
    size_t off = 0;
    while (off < n) {
        if (!c->sock) { /* a pipe or a file: room first */
            double left = end - kg_mono();
            struct pollfd pf = {c->out, POLLOUT, 0};
            int pr = left > 0 ? poll(&pf, 1, (int)(left * 1000) + 1) : 0;
            if (pr == 0 || (pr > 0 && (pf.revents & (POLLERR | POLLHUP | POLLNVAL))))
                return -1;
            if (pr < 0)
                continue; /* EINTR: the deadline decides */
        }
        ssize_t w = put(c, p + off, n - off);
        if (w > 0) {
            off += (size_t)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            double left = end - kg_mono();
            struct pollfd pf = {c->out, POLLOUT, 0};
            if (left <= 0)
                return -1;
            poll(&pf, 1, (int)(left * 1000) + 1);
        } else {
            return -1;
        }
    }
    return 0;
}

int serve_send(serve_conn *c, const char *text)
{
    if (c->gone)
        return -1;
    double end = kg_mono() + SERVE_SEND_S;
    if (send_bytes(c, text, strlen(text), end) || send_bytes(c, "\n", 1, end)) {
        c->gone = 1;
        return -1;
    }
    return 0;
}

int serve_send_error(serve_conn *c, const char *id, int code, const char *msg)
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
    int rc = t ? serve_send(c, t) : -1;
    free(t);
    cJSON_Delete(a);
    return rc;
}

/* {"cancel": ID}: every queued request of that id dropped and answered
 * (exit 7), the running one marked; an id that names none, an error. */
static void cancel(serve_conn *c, const cJSON *v)
{
    if (!cJSON_IsString(v) || !v->valuestring[0]) {
        serve_send_error(c, NULL, KG_EXIT_USAGE, "a cancel line's \"cancel\" must be a request's id (a string)");
        return;
    }
    const char *id = v->valuestring;
    int found = 0;
    if (c->running && strcmp(c->running, id) == 0)
        found = c->cancel = 1; /* its tick ends it: its answer says cancelled */
    for (int i = 0; i < c->q_n;) {
        if (strcmp(c->q[i].id, id) != 0) {
            i++;
            continue;
        }
        serve_send_error(c, id, KG_EXIT_STOPPED, "cancelled by the client before it ran");
        free(c->q[i].line);
        memmove(&c->q[i], &c->q[i + 1], sizeof c->q[0] * (size_t)(c->q_n - i - 1));
        c->q_n--;
        found = 1;
    }
    if (!found) {
        char m[300];
        snprintf(m, sizeof m, "cancel \"%.160s\": no request of that id is running or queued", id);
        serve_send_error(c, NULL, KG_EXIT_USAGE, m);
    }
}

/* One whole line (NUL-ended, k bytes): a cancel acted on, a request queued
 * under its number and id. */
static void take_line(serve_conn *c, const char *line, size_t k)
{
    if (memchr(line, '\0', k)) {
        serve_send_error(c, NULL, KG_EXIT_USAGE, "a request holds a NUL byte");
        return;
    }
    if (!k || strspn(line, " \t\r") == k)
        return;
    cJSON *o = cJSON_ParseWithOpts(line, NULL, 1);
    const cJSON *cv = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "cancel") : NULL;
    if (cv) {
        cancel(c, cv);
        cJSON_Delete(o);
        return;
    }
    cJSON_Delete(o);
    serve_req *r = &c->q[c->q_n];
    kg_batch_job j;
    kg_err err = {0, ""};
    r->n = ++*c->served;
    r->line = strdup(line);
    /* the id its answer will carry (given, or derived from its fields) */
    snprintf(r->id, sizeof r->id, "%s", kg_manifest_line(line, r->n, &j, &err) ? "" : j.id);
    if (!r->line)
        serve_send_error(c, r->id, KG_EXIT_ENV, "out of memory for a request");
    else
        c->q_n++;
}

/* The whole lines in the buffer taken while the queue has room; a buffer
 * full without a newline answered once and dropped to its line's end. */
static void split(serve_conn *c)
{
    char *nl;
    size_t at = 0;
    while (c->q_n < SERVE_QUEUE_MAX && !c->gone && (nl = memchr(c->buf + at, '\n', c->len - at))) {
        size_t k = (size_t)(nl - (c->buf + at));
        *nl = '\0';
        if (c->skipping)
            c->skipping = 0;
        else
            take_line(c, c->buf + at, k);
        at += k + 1;
    }
    memmove(c->buf, c->buf + at, c->len - at);
    c->len -= at;
    if (c->len == SERVE_REQUEST_MAX && !memchr(c->buf, '\n', c->len)) {
        if (!c->skipping)
            serve_send_error(c, NULL, KG_EXIT_USAGE, "a request over 64 KiB");
        c->skipping = 1;
        c->len = 0;
    }
}

void serve_conn_read(serve_conn *c, int wait_ms)
{
    if (c->gone)
        return;
    int room = !c->eof && c->q_n < SERVE_QUEUE_MAX;
    /* the output's hang-up says the client left; the input's end does not
     * (a client may send its requests, end them and read the answers) */
    struct pollfd p[2] = {{c->out, room && c->sock ? POLLIN : 0, 0}, {c->in, POLLIN, 0}};
    int np = room && !c->sock ? 2 : 1;
    int pr = poll(p, (nfds_t)np, wait_ms);
    if (pr <= 0)
        return;
    if (p[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
        c->gone = 1;
        return;
    }
    int fd = c->sock ? c->out : c->in;
    if (!room || !((c->sock ? p[0].revents : p[1].revents) & (POLLIN | POLLHUP | POLLERR | POLLNVAL)))
        return; /* (an input in error is read: its read fails, its end) */
    ssize_t r = read(fd, c->buf + c->len, SERVE_REQUEST_MAX - c->len);
    if (r < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (r <= 0) {
        c->eof = 1; /* a last line without its newline is not a request */
        return;
    }
    c->len += (size_t)r;
    split(c);
}

int serve_conn_pop(serve_conn *c, serve_req *r)
{
    if (c->q_n < SERVE_QUEUE_MAX)
        split(c); /* lines read while the queue was full */
    if (!c->q_n)
        return 0;
    *r = c->q[0];
    memmove(&c->q[0], &c->q[1], sizeof c->q[0] * (size_t)(c->q_n - 1));
    c->q_n--;
    return 1;
}
