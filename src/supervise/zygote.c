/* The Python workers' fork server, the supervisor's side: start, request a
 * worker, stop (the rules are in zygote.h). */
#include "zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define ZY_MSG_MAX (1 << 18) /* the server's receive buffer (_zygote.py MAX_MSG) */
#define ZY_ANSWER_S 10.0     /* a fork takes milliseconds; ten seconds is a dead server */

struct kg_zygote {
    pid_t pid;
    int sock;
    int ready;
};

int kg_zygote_start(const char *python, kg_zygote **out, kg_err *err)
{
    int sv[2];
    *out = NULL;
    kg_zygote *z = calloc(1, sizeof *z);
    if (!z)
        return kg_err_set(err, KG_EXIT_ENV, "out of memory for the fork server");
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
        free(z);
        return kg_err_set(err, KG_EXIT_ENV, "socketpair: %s", strerror(errno));
    }
    prctl(PR_SET_CHILD_SUBREAPER, 1); /* the workers it orphans come to us */
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        free(z);
        return kg_err_set(err, KG_EXIT_ENV, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        /* a session of its own: no controlling terminal, for it or the
         * workers it forks, and a terminal's ^C is the supervisor's to handle */
        setsid();
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
        }
        if (dup2(sv[1], 3) != 3) /* dup2 clears close-on-exec */
            _exit(127);
        kg_close_from(4); /* nothing kgate, or its caller, holds open stays open in it */
        char *args[] = {(char *)python, "-m", "kgate._zygote", "--fd", "3", NULL};
        execv(python, args);
        _exit(127);
    }
    close(sv[1]);
    z->pid = pid;
    z->sock = sv[0];
    *out = z;
    return 0;
}

int kg_zygote_adopt(int sock, pid_t pid, kg_zygote **out, kg_err *err)
{
    int type = 0;
    socklen_t len = sizeof type;
    long ppid, pgrp;
    *out = NULL;
    if (sock < 3 || getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &len) || type != SOCK_SEQPACKET)
        return kg_err_set(err, KG_EXIT_ENV, "descriptor %d is not a fork server's socket", sock);
    /* its parent must be this process: the workers it orphans come here */
    if (pid <= 1 || kg_proc_parent(pid, &ppid, &pgrp) || ppid != (long)getpid())
        kg_err_set(err, KG_EXIT_ENV, "process %ld is not this process's child", (long)pid);
    else if (fcntl(sock, F_SETFD, FD_CLOEXEC))
        kg_err_set(err, KG_EXIT_ENV, "fcntl(F_SETFD) on the fork server's socket: %s", strerror(errno));
    else if (prctl(PR_SET_CHILD_SUBREAPER, 1))
        kg_err_set(err, KG_EXIT_ENV, "prctl(PR_SET_CHILD_SUBREAPER): %s", strerror(errno));
    else if (!(*out = calloc(1, sizeof **out)))
        kg_err_set(err, KG_EXIT_ENV, "out of memory for the fork server");
    if (err->code) {
        close(sock); /* a fork server's socket not taken: the server ends with this process */
        return err->code;
    }
    (*out)->pid = pid;
    (*out)->sock = sock;
    return 0;
}

int kg_zygote_sock(const kg_zygote *z) { return z ? z->sock : -1; }

pid_t kg_zygote_pid(const kg_zygote *z) { return z ? z->pid : 0; }

/* Closes the server's socket, kills and reaps it; z stays, marked dead. */
static void shut(kg_zygote *z)
{
    if (z->sock >= 0)
        close(z->sock);
    z->sock = -1;
    if (z->pid > 0) {
        kill(z->pid, SIGKILL);
        waitpid(z->pid, NULL, 0);
    }
    z->pid = 0;
}

void kg_zygote_stop(kg_zygote *z)
{
    if (!z)
        return;
    shut(z);
    free(z);
}

/* One message from the server within `secs`, NUL-terminated; its length, or
 * -1 with the reason in err. */
static int answer(kg_zygote *z, char *buf, size_t size, double secs, kg_err *err)
{
    double end = kg_mono() + secs;
    for (;;) {
        double left = end - kg_mono();
        if (left <= 0) {
            kg_err_set(err, KG_EXIT_ENV, "the fork server did not answer within %.0f s", secs);
            return -1;
        }
        struct pollfd p = {z->sock, POLLIN, 0};
        if (poll(&p, 1, (int)(left * 1000) + 1) <= 0)
            continue; /* EINTR, or nothing yet: the deadline decides */
        ssize_t n = recv(z->sock, buf, size - 1, 0);
        if (n <= 0) {
            kg_err_set(err, KG_EXIT_ENV, "the fork server is gone");
            return -1;
        }
        buf[n] = '\0';
        return (int)n;
    }
}

static int request(kg_zygote *z, char *const argv[], const int fds[3], pid_t *pid, kg_err *err)
{
    char num[32], cwd[4096], reply[256];
    size_t len = 0;
    int argc = 0, envc = 0, bad = 0;
    char *msg = malloc(ZY_MSG_MAX);
    if (!msg)
        return kg_err_set(err, KG_EXIT_ENV, "out of memory for a fork request");
    while (argv[argc])
        argc++;
    while (environ && environ[envc])
        envc++;
    if (!getcwd(cwd, sizeof cwd))
        snprintf(cwd, sizeof cwd, "/");
    bad |= kg_put_field(msg, ZY_MSG_MAX, &len, "kgz1");
    snprintf(num, sizeof num, "%ld", (long)getpid());
    bad |= kg_put_field(msg, ZY_MSG_MAX, &len, num);
    bad |= kg_put_field(msg, ZY_MSG_MAX, &len, cwd);
    snprintf(num, sizeof num, "%d", argc);
    bad |= kg_put_field(msg, ZY_MSG_MAX, &len, num);
    for (int i = 0; i < argc; i++)
        bad |= kg_put_field(msg, ZY_MSG_MAX, &len, argv[i]);
    snprintf(num, sizeof num, "%d", envc);
    bad |= kg_put_field(msg, ZY_MSG_MAX, &len, num);
    for (int i = 0; i < envc; i++)
        bad |= kg_put_field(msg, ZY_MSG_MAX, &len, environ[i]);
    if (bad) {
        free(msg);
        return kg_err_set(err, KG_EXIT_ENV, "a fork request longer than %d bytes", ZY_MSG_MAX);
    }
    union {
        char buf[CMSG_SPACE(3 * sizeof(int))];
        struct cmsghdr align;
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct iovec iov = {msg, len};
    struct msghdr mh = {0};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.buf;
    mh.msg_controllen = sizeof ctl.buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(3 * sizeof(int));
    memcpy(CMSG_DATA(c), fds, 3 * sizeof(int));
    ssize_t sent = sendmsg(z->sock, &mh, MSG_NOSIGNAL);
    free(msg);
    if (sent != (ssize_t)len)
        return kg_err_set(err, KG_EXIT_ENV, "the fork server did not take the request: %s",
                          sent < 0 ? strerror(errno) : "a short send");
    if (answer(z, reply, sizeof reply, ZY_ANSWER_S, err) < 0)
        return err->code;
    char *end;
    long p = strncmp(reply, "pid ", 4) == 0 ? strtol(reply + 4, &end, 10) : 0;
    if (p <= 1 || *end != '\0')
        return kg_err_set(err, KG_EXIT_ENV, "the fork server refused: %.200s", reply);
    *pid = (pid_t)p;
    return 0;
}

int kg_zygote_ready(kg_zygote *z, double ready_s, kg_err *err)
{
    char buf[64];
    if (!z || z->pid <= 0)
        return kg_err_set(err, KG_EXIT_ENV, "no fork server");
    if (z->ready)
        return 0;
    if (answer(z, buf, sizeof buf, ready_s, err) < 0 || strncmp(buf, "ready ", 6) != 0 ||
        atol(buf + 6) != (long)z->pid) {
        if (!err->code)
            kg_err_set(err, KG_EXIT_ENV, "the fork server did not say it was ready");
        shut(z);
        return err->code;
    }
    z->ready = 1;
    return 0;
}

int kg_zygote_spawn(kg_zygote *z, char *const argv[], const int fds[3], double ready_s, pid_t *pid,
                    kg_err *err)
{
    if (kg_zygote_ready(z, ready_s, err))
        return err->code;
    if (request(z, argv, fds, pid, err)) {
        shut(z);
        return err->code;
    }
    return 0;
}
