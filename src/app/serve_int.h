/* What the files of `kgate serve` share (serve_cmd.h has its entry point):
 *   serve_cmd.c   the command: arguments, the socket, each request run with
 *                 its check's progress lines forwarded (docs/serve.md)
 *   serve_conn.c  a client's connection: its lines read ahead into a queue
 *                 (bounded), cancel lines acted on as they come, answers
 *                 sent under a deadline, a client that leaves seen. */
#ifndef KG_SERVE_INT_H
#define KG_SERVE_INT_H

#include <stddef.h>

#include "../store/batch.h"

#define SERVE_REQUEST_MAX (64 << 10) /* one request line: a manifest line is a few hundred bytes */
#define SERVE_QUEUE_MAX 256          /* requests read ahead of the running one; then the client waits */
#define SERVE_SEND_S 30.0            /* a client that takes no byte of an answer this long is gone */

/* A request read and waiting its turn. */
typedef struct serve_req {
    char *line;                 /* as sent (malloc'd) */
    int n;                      /* its number among the service's requests */
    char id[sizeof(((kg_batch_job *)0)->id)]; /* the id its answer carries ("" for a line that does not parse) */
} serve_req;

/* One client: standard input and output, or a socket (in == out). */
typedef struct serve_conn {
    int in, out, sock;
    int eof;                    /* the client sent its last line (it may still read answers) */
    int gone;                   /* the client left: nothing more is read, run or sent */
    char *buf;                  /* what was read of the lines not yet taken */
    size_t len;
    int skipping;               /* the rest of a line over SERVE_REQUEST_MAX is dropped */
    serve_req q[SERVE_QUEUE_MAX];
    int q_n;                    /* q[0] is next */
    int *served;                /* the service's count of requests: numbers the next */
    const char *running;        /* the running request's id, or NULL */
    int cancel;                 /* a cancel line named the running request */
} serve_conn;

/* 0, or -1 out of memory. */
int serve_conn_open(serve_conn *c, int in, int out, int sock, int *served);
/* Frees what is queued (not answered: the client is gone or done). */
void serve_conn_close(serve_conn *c);
/* Waits up to wait_ms for the client: its lines split, a cancel line acted
 * on (a queued request dropped and answered, the running one marked in
 * c->cancel, an unknown id answered with an error), the others queued;
 * sets c->eof, and c->gone when the client left. */
void serve_conn_read(serve_conn *c, int wait_ms);
/* The next queued request into *r (its line the caller's to free): 1, or 0 for none. */
int serve_conn_pop(serve_conn *c, serve_req *r);
/* text and a newline, under SERVE_SEND_S: 0, or -1 when the client is gone (c->gone). */
int serve_send(serve_conn *c, const char *text);
/* An answer without a check: exit and error, under id (NULL or "": null). */
int serve_send_error(serve_conn *c, const char *id, int code, const char *msg);

#endif
