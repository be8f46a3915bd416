/* One worker process, start to reaping: its pipes, the fork (here, into
 * the sandbox, or by the Python fork server), the job on its standard
 * input, the watchdog loop over its event and stderr pipes, and its end
 * (killed with its process group and orphans, its status and the last
 * line of its stderr). */
#include "spawn.h"

#include "../base/text.h"
#include "../protocol/proto.h"
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static struct {
    kg_spawn_tick fn;
    void *ud;
    double period_s;
} tick;

void kg_spawn_watch(kg_spawn_tick fn, void *ud, double period_s)
{
    tick.fn = fn;
    tick.ud = ud;
    tick.period_s = period_s;
}

/* A running worker: its pipes' read ends (-1: closed) and what was read. */
typedef struct spawn_io {
    int evp[2], errp[2], inp[2];
    char *evbuf;
    size_t evlen, ev_cap;
    char errbuf[4096 + 1];
    size_t errlen;
    pid_t pid;
    int status, reaped;
    double t0;
} spawn_io;

/* Feeds complete lines of buf to the callback; keeps the partial tail.
 * Returns non-zero when the callback asked to stop. */
static int drain_lines(char *buf, size_t *len, kg_line_fn fn, void *ud)
{
    char *start = buf, *nl;
    int stop = 0;
    while (!stop && (nl = memchr(start, '\n', *len - (size_t)(start - buf)))) {
        *nl = '\0';
        stop = fn(ud, start);
        start = nl + 1;
    }
    size_t rest = *len - (size_t)(start - buf);
    memmove(buf, start, rest);
    *len = rest;
    return stop;
}

static int open_pipes(spawn_io *io, kg_err *err)
{
    if (pipe2(io->evp, O_CLOEXEC) || pipe2(io->errp, O_CLOEXEC) || pipe2(io->inp, O_CLOEXEC))
        return kg_err_set(err, KG_EXIT_ENV, "pipe: %s", strerror(errno));
    return 0;
}

/* The child: a session of its own, so no controlling terminal (nothing to
 * push keystrokes into) and a process group of its own, which the watchdog
 * kills; the job on stdin, events on descriptor 3, stdout and stderr to the
 * capture pipe. */
static void exec_child(const spawn_io *io, const kg_spawn_req *q, char **args, int n)
{
    char fdbuf[16];
    setsid();
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* no orphan keeps the GPU if kgate dies */
    int hi = fcntl(io->evp[1], F_DUPFD, 10); /* out of the way of 0..3, without CLOEXEC */
    dup2(io->inp[0], 0);
    dup2(io->errp[1], 1); /* what a candidate prints must not reach kgate's output */
    dup2(io->errp[1], 2);
    dup2(hi, 3);
    kg_close_from(4); /* hi, the pipes' other ends, and anything inherited */
    snprintf(fdbuf, sizeof fdbuf, "%d", 3);
    if (q->fd_index >= 0 && q->fd_index < n)
        args[q->fd_index] = fdbuf;
    execv(q->exe, args);
    fprintf(stderr, "exec %s: %s\n", q->exe, strerror(errno));
    _exit(127);
}

/* The worker started: by the fork server when it answers, else forked and
 * exec'd here (into the sandbox's namespaces when asked). */
static int start_worker(spawn_io *io, const kg_spawn_req *q, kg_err *err)
{
    char *args[64], fdbuf[16];
    int n = 0;
    for (; q->argv[n] && n < 62; n++)
        args[n] = q->argv[n];
    args[n] = NULL;
    io->pid = -1;
    if (q->zygote) {
        /* the worker's descriptors: stdin, stdout and stderr, events on 3 */
        int fds[3] = {io->inp[0], io->errp[1], io->evp[1]};
        kg_err zerr = {0, ""};
        snprintf(fdbuf, sizeof fdbuf, "%d", 3);
        if (q->fd_index >= 0 && q->fd_index < n)
            args[q->fd_index] = fdbuf;
        if (kg_zygote_spawn(q->zygote, args, fds, KG_ZYGOTE_READY_S, &io->pid, &zerr)) {
            /* fork and exec it here instead, on fresh pipes: a worker the
             * server forked before it failed to answer reads no job from
             * the old ones and exits (and is reaped as an orphan) */
            io->pid = -1;
            int *all[3] = {io->evp, io->errp, io->inp};
            for (int i = 0; i < 3; i++) {
                close(all[i][0]);
                close(all[i][1]);
            }
            if (open_pipes(io, err))
                return err->code;
        }
    }
    if (io->pid < 0 && (io->pid = q->sandbox ? kg_sandbox_fork() : fork()) < 0)
        return kg_err_set(err, KG_EXIT_ENV, "fork%s: %s", q->sandbox ? " into the sandbox's namespaces" : "",
                          strerror(errno));
    if (io->pid == 0)
        exec_child(io, q, args, n);
    close(io->evp[1]);
    close(io->errp[1]);
    close(io->inp[0]);
    return 0;
}

/* The job written to the worker's standard input, which is then closed (a
 * job is at most KG_JOB_MAX bytes: it fits in the pipe). */
static void feed_input(spawn_io *io, const char *input)
{
    if (input) {
        signal(SIGPIPE, SIG_IGN);
        size_t len = strlen(input), off = 0;
        while (off < len) {
            ssize_t k = write(io->inp[1], input + off, len - off);
            if (k <= 0)
                break;
            off += (size_t)k;
        }
    }
    close(io->inp[1]);
}

/* One read of the event pipe: 1 when the worker is to be stopped (a
 * violation, or a line too long to be an event). */
static int read_events(spawn_io *io, const kg_spawn_req *q, int *open_fds)
{
    ssize_t k = read(io->evp[0], io->evbuf + io->evlen, io->ev_cap - 1 - io->evlen);
    if (k <= 0) {
        close(io->evp[0]);
        io->evp[0] = -1;
        (*open_fds)--;
        return 0;
    }
    io->evlen += (size_t)k;
    return drain_lines(io->evbuf, &io->evlen, q->on_line, q->ud) || io->evlen >= io->ev_cap - 1;
}

/* One read of the stderr pipe: its tail kept. */
static void read_stderr(spawn_io *io, int *open_fds)
{
    char tmp[1024];
    ssize_t k = read(io->errp[0], tmp, sizeof tmp);
    if (k <= 0) {
        close(io->errp[0]);
        io->errp[0] = -1;
        (*open_fds)--;
        return;
    }
    if (io->errlen + (size_t)k > sizeof io->errbuf - 1) {
        size_t drop = io->errlen + (size_t)k - (sizeof io->errbuf - 1);
        memmove(io->errbuf, io->errbuf + drop, io->errlen - drop);
        io->errlen -= drop;
    }
    memcpy(io->errbuf + io->errlen, tmp, (size_t)k);
    io->errlen += (size_t)k;
}

/* The watchdog loop: the pipes read until both close, the budget runs out,
 * kgate is asked to stop or the line callback says so. */
static void watch(spawn_io *io, const kg_spawn_req *q, kg_child *st)
{
    int open_fds = 2, last_round = 0;
    double next_tick = kg_mono();
    /* the ticks' times are jittered (half to one and a half periods apart),
     * so that a process cannot time its work between two of them */
    unsigned jitter = (unsigned)io->pid * 2654435761u ^ (unsigned)(unsigned long long)(kg_mono() * 1e9);
    while (open_fds > 0) {
        if (tick.fn && !io->reaped && kg_mono() >= next_tick) {
            tick.fn(tick.ud, (long)io->pid);
            jitter = jitter * 1664525u + 1013904223u;
            next_tick = kg_mono() + tick.period_s * (0.5 + (jitter >> 8) / 16777216.0);
        }
        double left = q->timeout_s - (kg_mono() - io->t0);
        if (left <= 0) {
            st->timed_out = 1;
            break;
        }
        if (kg_stop_requested()) {
            st->interrupted = 1;
            break;
        }
        /* once the worker is gone, what is left in the pipes is read without
         * waiting: a process it left behind may hold them open */
        if (!io->reaped && waitpid(io->pid, &io->status, WNOHANG) == io->pid)
            io->reaped = 1;
        struct pollfd p[2] = {{io->evp[0], POLLIN, 0}, {io->errp[0], POLLIN, 0}};
        double wait_ms = fmin(left * 1000 + 1, 100);
        if (tick.fn && !io->reaped)
            wait_ms = fmin(wait_ms, fmax(0, (next_tick - kg_mono()) * 1000) + 1);
        int rc = poll(p, 2, io->reaped ? 0 : (int)wait_ms);
        if (rc < 0 && errno != EINTR)
            break;
        if (io->reaped && rc == 0) {
            if (last_round++)
                break;
            continue;
        }
        if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && read_events(io, q, &open_fds)) {
            st->stopped = 1;
            break;
        }
        if (p[1].revents & (POLLIN | POLLHUP | POLLERR))
            read_stderr(io, &open_fds);
    }
}

/* The worker killed if it must be, waited for and reaped with what it left
 * behind; KG_EXIT_ENV when it would not die. */
static int finish(spawn_io *io, const kg_spawn_req *q, kg_child *st, kg_err *err)
{
    pid_t pid = io->pid;
    if (st->timed_out || st->stopped || st->interrupted) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
    }
    if (io->evp[0] >= 0)
        close(io->evp[0]);
    if (io->errp[0] >= 0)
        close(io->errp[0]);
    /* the pipes are closed: the child exits; a worker that closed them and
     * lives on is killed after a short grace */
    if (!io->reaped && kg_wait_child(pid, &io->status, 2.0) == 0) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        /* a process in the driver's uninterruptible sleep may not die at
         * once, or ever: waited for KG_KILL_WAIT_S, then said */
        if (kg_wait_child(pid, &io->status, KG_KILL_WAIT_S) != 1)
            return kg_err_set(err, KG_EXIT_ENV, "worker pid %ld did not exit %.0f s after SIGKILL (stuck in the driver?)",
                              (long)pid, KG_KILL_WAIT_S);
        if (!st->stopped && !st->interrupted)
            st->timed_out = st->timed_out || kg_mono() - io->t0 >= q->timeout_s;
    }
    kill(-pid, SIGKILL); /* whatever of its group is left */
    /* and whatever left the group: kgate is a child subreaper, so a process
     * the candidate forked, even one that called setsid(), is kgate's child
     * now; every child but the fork server is killed and reaped (one stuck
     * in the driver is named on stderr by kg_reap_children) */
    (void)kg_reap_children(q->spare);
    return 0;
}

/* The worker's exit, and the last line of its stderr (UTF-8, no controls). */
static void describe(spawn_io *io, kg_child *st)
{
    st->wall_s = kg_mono() - io->t0;
    if (WIFEXITED(io->status)) {
        st->exited = 1;
        st->code = WEXITSTATUS(io->status);
    } else if (WIFSIGNALED(io->status)) {
        st->signaled = 1;
        st->sig = WTERMSIG(io->status);
    }
    size_t n = io->errlen;
    char *b = io->errbuf;
    while (n && (b[n - 1] == '\n' || b[n - 1] == ' '))
        n--;
    b[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)b[i] < 32 && b[i] != '\n')
            b[i] = '?';
    char *last = strrchr(b, '\n');
    kg_text_clean(st->stderr_tail, sizeof st->stderr_tail, last ? last + 1 : b);
}

int kg_spawn_run(const kg_spawn_req *q, kg_child *st, kg_err *err)
{
    spawn_io io;
    memset(&io, 0, sizeof io);
    memset(st, 0, sizeof *st);
    io.ev_cap = KG_EVENT_MAX + 2;
    io.evbuf = malloc(io.ev_cap);
    if (!io.evbuf)
        return kg_err_set(err, KG_EXIT_ENV, "out of memory for the event buffer");
    prctl(PR_SET_CHILD_SUBREAPER, 1); /* orphans of the worker come back to us */
    io.t0 = kg_mono();
    if (open_pipes(&io, err) || start_worker(&io, q, err)) {
        free(io.evbuf);
        return err->code;
    }
    feed_input(&io, q->input);
    watch(&io, q, st);
    int rc = finish(&io, q, st, err);
    free(io.evbuf);
    if (rc)
        return rc;
    describe(&io, st);
    return 0;
}
