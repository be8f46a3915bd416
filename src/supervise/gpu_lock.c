/* One GPU's work, one kgate process at a time (the rules are in gpu_lock.h):
 * the lock file's place, its turns, the wait and its ends. */
#include "gpu_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define POLL_S 0.005     /* between two tries of a held lock */
#define STUCK_S 1.0      /* the turn out of reach this long: is its holder moving? */
#define STUCK_FREE_S 0.1 /* not when it leaves the GPU's lock free this long */

/* KG_EXIT_IO for system call `call` on path that failed (errno) at file:line;
 * *fd, when open, is closed first (letting go of its flock). */
static int sys_fail(kg_err *err, int *fd, const char *call, const char *path, const char *file, int line)
{
    int e = errno;
    if (fd && *fd >= 0) {
        close(*fd);
        *fd = -1;
    }
    return kg_err_set(err, KG_EXIT_IO, "GPU lock: %s(%s) failed at %s:%d: %s", call, path, file, line, strerror(e));
}
#define SYS_FAIL(fd, call, path) sys_fail(err, fd, call, path, __FILE__, __LINE__)

int kg_gpu_lock_path(const char *uuid, char *buf, size_t size, kg_err *err)
{
    const char *set = getenv("KGATE_LOCK_DIR");
    char dir[1024];
    struct stat st;
    if (!uuid[0] || strpbrk(uuid, "/\\") || strlen(uuid) > 80)
        return kg_err_set(err, KG_EXIT_IO, "GPU lock: not a GPU UUID: '%.80s'", uuid);
    if (set && set[0] == '/')
        snprintf(dir, sizeof dir, "%s", set);
    else
        snprintf(dir, sizeof dir, "/tmp/kgate-%ld", (long)getuid());
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return SYS_FAIL(NULL, "mkdir", dir);
    /* the directory must be this user's own: another user's (made first in
     * /tmp) could hold or replace the lock files */
    if (lstat(dir, &st) != 0)
        return SYS_FAIL(NULL, "lstat", dir);
    if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 0077))
        return kg_err_set(err, KG_EXIT_IO,
                          "GPU lock: %s is not a directory of this user's own with mode 0700 (a link, another "
                          "user's, or open to others)",
                          dir);
    snprintf(buf, size, "%s/gpu-%s.lock", dir, uuid);
    return 0;
}

/* One try at the flock of path, through *fd (opened when -1, and kept open
 * between tries): 0 taken, 1 held by another process, KG_EXIT_IO on an
 * error (*fd closed). The file taken has its times set to now and must
 * still be the one at path (one unlinked or replaced is opened again). */
static int try_take(const char *path, int *fd, kg_err *err)
{
    for (;;) {
        if (*fd < 0 && (*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0)
            return SYS_FAIL(NULL, "open", path);
        if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
            if (errno == EWOULDBLOCK || errno == EINTR)
                return 1;
            return SYS_FAIL(fd, "flock", path);
        }
        /* flock changes no time of the file: without this an age-based
         * cleaner of /tmp would remove a lock file in constant use, and a
         * newcomer would lock a new one beside its holder */
        if (futimens(*fd, NULL) != 0)
            return SYS_FAIL(fd, "futimens", path);
        struct stat held, now;
        if (fstat(*fd, &held) != 0)
            return SYS_FAIL(fd, "fstat", path);
        if (stat(path, &now) == 0) {
            if (held.st_dev == now.st_dev && held.st_ino == now.st_ino)
                return 0;
        } else if (errno != ENOENT) {
            return SYS_FAIL(fd, "stat", path);
        }
        close(*fd); /* the file went away under it: take the new one */
        *fd = -1;
    }
}

/* Whether a wait that began at t0 is over: KG_EXIT_STOPPED for a stop
 * asked, KG_EXIT_ENV past timeout_s, else 0. */
static int wait_over(const char *uuid, const char *path, double t0, double timeout_s, kg_err *err)
{
    int sig = kg_stop_requested();
    if (sig)
        return kg_err_set(err, KG_EXIT_STOPPED, "stopped by %s while waiting for GPU %s's lock",
                          sig > 1 ? strsignal(sig) : "request", uuid);
    if (kg_mono() - t0 >= timeout_s)
        return kg_err_set(err, KG_EXIT_ENV, "GPU %s busy: another kgate process held its lock (%s) for %.0f s", uuid,
                          path, kg_mono() - t0);
    return 0;
}

static void poll_pause(void)
{
    struct timespec ts = {0, (long)(POLL_S * 1e9)};
    nanosleep(&ts, NULL);
}

int kg_gpu_lock_off(void)
{
    const char *off = getenv("KGATE_GPU_LOCK");
    return off && strcmp(off, "0") == 0;
}

int kg_gpu_lock_required(void)
{
    const char *v = getenv("KGATE_GPU_LOCK");
    return v && strcmp(v, "require") == 0;
}

int kg_gpu_lock_take(const char *uuid, double timeout_s, kg_gpu_lock *l, kg_err *err)
{
    char path[1200], turn[1300];
    int tfd = -1, fd = -1, rc;
    l->fd = -1;
    l->waited_s = 0;
    if (kg_gpu_lock_off())
        return 0;
    if (kg_gpu_lock_path(uuid, path, sizeof path, err))
        return err->code;
    /* waiters take a turn on a second file first, so that one polls the
     * GPU's lock (others only look, past STUCK_S): a holder that lets go
     * and takes it again waits behind that one, and the lock goes round
     * instead of back to its holder; among waiters in no set order */
    snprintf(turn, sizeof turn, "%s.turn", path);
    double t0 = kg_mono(), free_since = -1;
    int past = 0; /* the GPU's lock taken past a turn holder that is not moving */
    while ((rc = try_take(turn, &tfd, err)) == 1) {
        /* a turn holder tries the GPU's lock every POLL_S: one that leaves
         * it free for STUCK_FREE_S is not moving (stopped by Ctrl-Z, a
         * debugger, a frozen cgroup), and the lock is taken past it. The
         * lock is only tried, as the turn holder tries it: flock lets one
         * of them hold it, never both. */
        if (kg_mono() - t0 >= STUCK_S) {
            if ((rc = try_take(path, &fd, err)) > 1)
                break;
            if (rc == 0 && free_since >= 0 && kg_mono() - free_since >= STUCK_FREE_S) {
                past = 1;
                break;
            }
            if (rc == 0) {
                if (free_since < 0)
                    free_since = kg_mono();
                flock(fd, LOCK_UN); /* only a look, so far: the turn holder may take it yet */
            } else {
                free_since = -1;
            }
        }
        if ((rc = wait_over(uuid, path, t0, timeout_s, err)))
            break;
        poll_pause();
    }
    while (rc == 0 && !past && (rc = try_take(path, &fd, err)) == 1) {
        if ((rc = wait_over(uuid, path, t0, timeout_s, err)))
            break;
        poll_pause();
    }
    if (tfd >= 0) {
        flock(tfd, LOCK_UN);
        close(tfd);
    }
    if (rc) {
        if (fd >= 0)
            close(fd);
        return rc;
    }
    l->fd = fd;
    l->waited_s = kg_mono() - t0;
    return 0;
}

void kg_gpu_lock_drop(kg_gpu_lock *l)
{
    if (l->fd >= 0) {
        flock(l->fd, LOCK_UN);
        close(l->fd);
    }
    l->fd = -1;
}
