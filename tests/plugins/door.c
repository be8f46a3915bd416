/* Candidates whose constructor tries one way out of --sandbox (DOOR picks
 * which, tests/CMakeLists.txt builds one library each; tests/sandbox.sh
 * runs them). The constructor says on stderr what it tried; if the way was
 * open it aborts, so that kgate refuses the file (exit 4), and otherwise it
 * loads and its one kernel does nothing (INCORRECT where it runs).
 *   1 io_uring   io_uring_setup makes a ring (whose operations seccomp
 *                never sees: IORING_OP_SOCKET makes an IP socket)
 *   2 tty        /dev/tty opens: the worker has a controlling terminal
 *   3 tiocsti    TIOCSTI pushes a byte into a terminal (a pty of its own),
 *                or TIOCLINUX is answered by the terminal, not refused
 *   4 unix       a Unix socket is made (socket, or a datagram socketpair
 *                that connect could aim at docker.sock or D-Bus), or
 *                connect is not refused
 *   5 shm        a file in /dev/shm opens for writing ($KG_DOOR_VICTIM,
 *                another program's, or one of its own)
 *   6 signal     signal 0 reaches $KG_DOOR_PID, a process of the same user
 *                that is not kgate
 *   7 sysv       the System V shared memory segment $KG_DOOR_SHMID (another
 *                program's) attaches
 *   8 hang       (not a way out) forks a child that leaves the worker's
 *                session and sleeps, then hangs: kgate's timeout must end
 *                both
 *   9 inet       an IPv4 socket is made, asked for plainly or with the
 *                family's upper 32 bits set (which the kernel drops)
 *  10 self       (not a way out) a signal it raises does not reach its own
 *                handler (the worker is pid 1 of its PID namespace: the
 *                rules against signalling pid 1 must spare it) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <kgate/plugin.h>

#ifndef DOOR
#error "DOOR must be defined (1 to 10)"
#endif

#if DOOR == 10
static volatile sig_atomic_t usr1;
static void got_usr1(int sig) { usr1 = sig; }
#endif

/* 1 when the way was open; `what` says what was seen */
static int door(char *what, size_t n)
{
#if DOOR == 1
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    long fd = syscall(SYS_io_uring_setup, 4, &p);
    snprintf(what, n, "io_uring_setup: %s", fd >= 0 ? "a ring" : strerror(errno));
    if (fd >= 0)
        close((int)fd);
    return fd >= 0;
#elif DOOR == 2
    int fd = open("/dev/tty", O_RDONLY | O_NOCTTY);
    snprintf(what, n, "/dev/tty: %s", fd >= 0 ? "opened" : strerror(errno));
    if (fd >= 0)
        close(fd);
    return fd >= 0;
#elif DOOR == 3
    /* a pty pair of its own, opened for reading only (the sandbox lets
     * nothing under /dev but the GPU's files and /dev/null be opened for
     * writing); as the leader of its session it takes the pty as its
     * controlling terminal, which TIOCSTI needs without CAP_SYS_ADMIN */
    signal(SIGHUP, SIG_IGN); /* closing its controlling pty hangs it up */
    int m = open("/dev/ptmx", O_RDONLY | O_NOCTTY), s = -1, unlock = 0;
    unsigned num = 0;
    char name[64] = "", c = 'x', sub = 0;
    if (m >= 0 && ioctl(m, TIOCSPTLCK, &unlock) == 0 && ioctl(m, TIOCGPTN, &num) == 0) {
        snprintf(name, sizeof name, "/dev/pts/%u", num);
        s = open(name, O_RDONLY);
    }
    if (s < 0) { /* no pty here: TIOCSTI is tried on nothing */
        snprintf(what, n, "no pty (%s)", strerror(errno));
        int sti = ioctl(-1, TIOCSTI, &c) == 0 || errno != EPERM;
        if (m >= 0)
            close(m);
        return sti;
    }
    int sti = ioctl(s, TIOCSTI, &c), sti_e = errno;
    int lin = ioctl(s, TIOCLINUX, &sub), lin_e = errno;
    snprintf(what, n, "%s: TIOCSTI %s, TIOCLINUX %s", name, sti == 0 ? "pushed a byte" : strerror(sti_e),
             lin == 0 ? "answered" : strerror(lin_e));
    close(s);
    close(m);
    return sti == 0 || lin_e != EPERM;
#elif DOOR == 4
    int s = socket(AF_UNIX, SOCK_STREAM, 0), se = errno, sv[2] = {-1, -1};
    int dg = socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), de = errno;
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    snprintf(a.sun_path, sizeof a.sun_path, "/run/docker.sock");
    /* on no descriptor: refused by the sandbox (EACCES), else the kernel's EBADF */
    int c = connect(-1, (struct sockaddr *)&a, sizeof a), ce = errno;
    snprintf(what, n, "socket(AF_UNIX): %s, socketpair(AF_UNIX, SOCK_DGRAM): %s, connect: %s",
             s >= 0 ? "made" : strerror(se), dg == 0 ? "made" : strerror(de), c == 0 ? "connected" : strerror(ce));
    if (s >= 0)
        close(s);
    if (dg == 0) {
        close(sv[0]);
        close(sv[1]);
    }
    /* a stream pair (connected, it reaches nothing else) stays allowed */
    int st = socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    if (st == 0) {
        close(sv[0]);
        close(sv[1]);
    } else {
        snprintf(what + strlen(what), n - strlen(what), "; a stream socketpair was refused too (%s)", strerror(errno));
    }
    return s >= 0 || dg == 0 || ce != EACCES || st != 0;
#elif DOOR == 5
    const char *victim = getenv("KG_DOOR_VICTIM");
    char own[64];
    snprintf(own, sizeof own, "/dev/shm/kgate-door-%d", (int)getpid());
    int v = victim ? open(victim, O_WRONLY) : -1, ve = errno;
    int o = open(own, O_CREAT | O_WRONLY | O_EXCL, 0600), oe = errno;
    int null = open("/dev/null", O_WRONLY | O_TRUNC), ne = errno;
    snprintf(what, n, "%s: %s, %s: %s, /dev/null: %s", victim ? victim : "(no victim)",
             v >= 0 ? "OPENED" : strerror(ve), own, o >= 0 ? "CREATED" : strerror(oe),
             null >= 0 ? "opened" : strerror(ne));
    if (v >= 0)
        close(v);
    if (o >= 0) {
        close(o);
        unlink(own);
    }
    if (null >= 0)
        close(null);
    return v >= 0 || o >= 0 || null < 0; /* /dev/null must stay writable */
#elif DOOR == 6
    const char *p = getenv("KG_DOOR_PID");
    long pid = p ? atol(p) : 0;
    int k = pid > 1 ? kill((pid_t)pid, 0) : -1;
    snprintf(what, n, "signal 0 to pid %ld: %s", pid, k == 0 ? "SENT" : strerror(errno));
    return k == 0;
#elif DOOR == 7
    const char *p = getenv("KG_DOOR_SHMID");
    int id = p ? atoi(p) : -1;
    void *at = id >= 0 ? shmat(id, NULL, SHM_RDONLY) : (void *)-1;
    snprintf(what, n, "shmat %d: %s", id, at != (void *)-1 ? "ATTACHED" : strerror(errno));
    if (at != (void *)-1)
        shmdt(at);
    return at != (void *)-1;
#elif DOOR == 8
    pid_t c = fork();
    if (c == 0) {
        setsid();
        execl("/bin/sleep", "sleep", "61.37", (char *)NULL);
        _exit(127);
    }
    snprintf(what, n, "forked %d, hanging", (int)c);
    fprintf(stderr, "door hang: %s\n", what);
    sleep(120);
    return 0;
#elif DOOR == 9
    int s = socket(AF_INET, SOCK_DGRAM, 0), se = errno;
    long h = syscall(SYS_socket, (1L << 32) | AF_INET, SOCK_DGRAM, 0);
    snprintf(what, n, "socket(AF_INET): %s, socket(2^32 | AF_INET): %s", s >= 0 ? "MADE" : strerror(se),
             h >= 0 ? "MADE" : strerror(errno));
    if (s >= 0)
        close(s);
    if (h >= 0)
        close((int)h);
    return s >= 0 || h >= 0;
#elif DOOR == 10
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = got_usr1;
    int r = sigaction(SIGUSR1, &sa, NULL) == 0 ? raise(SIGUSR1) : -1;
    snprintf(what, n, "raise(SIGUSR1) from pid %d: %s, %s", (int)getpid(), r == 0 ? "sent" : strerror(errno),
             usr1 ? "handled" : "NOT HANDLED");
    return !usr1;
#else
#error "unknown DOOR"
#endif
}

__attribute__((constructor)) static void try_door(void)
{
    char what[512];
    int open_ = door(what, sizeof what);
    fprintf(stderr, "door %d: %s: %s\n", DOOR, open_ ? "OPEN" : "closed", what);
    if (open_)
        abort();
}

static int noop(const DLTensor *i, int ni, DLTensor *o, int no, const kgate_params *p, kgate_stream s)
{
    (void)i, (void)ni, (void)o, (void)no, (void)p, (void)s;
    return 0;
}

static const kgate_kernel kernels[] = {{"noop", "softmax", "fp16", NULL, 1, 1, noop, NULL, NULL, NULL}};
static const kgate_plugin plugin = KGATE_PLUGIN(kernels);
const kgate_plugin *kgate_plugin_v2(void) { return &plugin; }
