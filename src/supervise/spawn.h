/* One worker process run to its end (supervise/spawn.c): started (forked
 * here, into the sandbox, or by the Python fork server), its job written to
 * its standard input, its event lines and stderr tail read under a
 * watchdog, then killed with whatever it left behind and reaped. The
 * job-level rules are in job.c; kg_spawn (job.h) is the public entry. */
#ifndef KG_SPAWN_H
#define KG_SPAWN_H

#include <sys/types.h>

#include "../base/kg.h"
#include "zygote.h"

typedef struct kg_child {
    int exited, code;   /* normal exit and its status */
    int signaled, sig;  /* killed by a signal */
    int timed_out;      /* killed by the watchdog */
    int stopped;        /* killed because the line callback asked */
    int interrupted;    /* killed because kgate was asked to stop (kg_stop_requested) */
    double wall_s;
    char stderr_tail[1024];
} kg_child;

#define KG_KILL_WAIT_S 30.0 /* how long a child killed with SIGKILL is waited for (kg_spawn) */

/* Called for each complete event line; non-zero kills the child. */
typedef int (*kg_line_fn)(void *ud, const char *line);

/* Called with the worker's pid while one runs (kg_spawn_watch). */
typedef void (*kg_spawn_tick)(void *ud, long worker_pid);

typedef struct kg_spawn_req {
    kg_zygote *zygote;   /* fork the worker there when it answers (else here) */
    int sandbox;         /* fork here into the sandbox's namespaces */
    const char *exe;     /* what to exec */
    char *const *argv;   /* argv[0] included, NULL-terminated (at most 62 used) */
    int fd_index;        /* argv[fd_index] becomes the event descriptor's number */
    const char *input;   /* written to its standard input, or NULL */
    double timeout_s;    /* the watchdog's budget */
    kg_line_fn on_line;  /* each complete event line; non-zero kills it */
    void *ud;
    pid_t spare;         /* a child of kgate's never reaped as an orphan (the fork server) */
} kg_spawn_req;

/* kg_spawn's contract (job.h), for the request q. */
int kg_spawn_run(const kg_spawn_req *q, kg_child *st, kg_err *err);

/* Calls fn(ud, worker pid) every period_s (jittered) while a worker runs. */
void kg_spawn_watch(kg_spawn_tick fn, void *ud, double period_s);

#endif
