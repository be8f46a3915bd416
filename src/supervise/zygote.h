/* The Python workers' fork server (the supervisor's side; the server is
 * python/kgate/_zygote.py, which states the protocol). kgate batch starts
 * one ahead for the next job and hands it over across the exec of that
 * job's check (kg_zygote_adopt; supervise/job.h kg_job_take_zygote).
 *
 * The rules:
 *   - a server is started once per supervisor (or handed over to it by
 *     kgate batch, started by the same process before its exec), for Python
 *     workers only, and never under --sandbox or a wrapper
 *     (compute-sanitizer): those workers are exec'd as before; a handed
 *     server that fails is replaced by one the supervisor starts;
 *   - a worker it forks is this process's child (the server forks twice and
 *     this process is a child subreaper), in its own process group, with the
 *     job's descriptors as 0, 1, 2 and 3 and this process's environment at
 *     the time of the request: the supervisor watches, kills and reaps it as
 *     one it forked itself;
 *   - every wait has a deadline (its readiness, each answer); a server that
 *     misses one, answers badly or dies is stopped and not used again, and
 *     the job falls back to fork and exec: the server only saves time;
 *   - KGATE_ZYGOTE=0 turns it off. */
#ifndef KG_ZYGOTE_H
#define KG_ZYGOTE_H

#include <sys/types.h>

#include "../base/kg.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kg_zygote kg_zygote;

/* How long the first job waits for the server's imports (torch: 3 to 5 s on
 * the H200 machine, more from a cold disk) before it is exec'd instead. */
#define KG_ZYGOTE_READY_S 60.0

/* Starts `python -m kgate._zygote`; its imports go on while the caller works. */
int kg_zygote_start(const char *python, kg_zygote **out, kg_err *err);

/* Takes over a server that kg_zygote_start made in this process before an
 * exec (kgate batch warms the next job's server while a job runs): sock is
 * its socket, pid its pid, which must be this process's child. The socket
 * is made close-on-exec; this process becomes a child subreaper, as
 * kg_zygote_start makes it. 0, or why it cannot be taken: sock is then
 * closed when it is a fork server's socket (SOCK_SEQPACKET), never another
 * descriptor, and nothing is killed. */
int kg_zygote_adopt(int sock, pid_t pid, kg_zygote **out, kg_err *err);

/* The server's socket (kgate batch hands it across the exec), or -1. */
int kg_zygote_sock(const kg_zygote *z);

/* Waits up to ready_s for the server's imports (at once when it has said
 * it is ready). 0, or the reason it is not (the server is then stopped). */
int kg_zygote_ready(kg_zygote *z, double ready_s, kg_err *err);

/* A worker running argv (python -m kgate._worker ...) with fds[0] as its
 * stdin, fds[1] as stdout and stderr, fds[2] as descriptor 3. The first call
 * waits up to ready_s for the server's imports. Returns 0 with *pid set, or
 * the reason it could not (the server is then stopped). */
int kg_zygote_spawn(kg_zygote *z, char *const argv[], const int fds[3], double ready_s, pid_t *pid,
                    kg_err *err);

/* The server's pid while it runs, else 0 (the orphan reaper spares it). */
pid_t kg_zygote_pid(const kg_zygote *z);

/* Closes the server's socket, kills and reaps it, frees z (NULL: nothing). */
void kg_zygote_stop(kg_zygote *z);

#ifdef __cplusplus
}
#endif
#endif
