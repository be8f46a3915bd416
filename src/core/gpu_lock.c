/* One GPU's work, one kgate process at a time (the rules are in gpu_lock.h). */
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

#define POLL_S 0.005 /* between two tries of a held lock */

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
        return kg_err_set(err, KG_EXIT_IO, "GPU lock: cannot create %s: %s", dir, strerror(errno));
    /* the directory must be this user's own: another user's (made first in
     * /tmp) could hold or replace the lock files */
    if (lstat(dir, &st) != 0)
        return kg_err_set(err, KG_EXIT_IO, "GPU lock: %s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 0077))
        return kg_err_set(err, KG_EXIT_IO,
                          "GPU lock: %s is not a directory of this user's own with mode 0700 (a link, another "
                          "user's, or open to others)",
                          dir);
    snprintf(buf, size, "%s/gpu-%s.lock", dir, uuid);
    return 0;
}

/* Opens path and polls flock on it until taken (0), the deadline passes
 * or a stop is asked (KG_EXIT_ENV), or an error (KG_EXIT_IO); the file
 * taken must still be the one at path (one unlinked or replaced while this
 * waited is opened again). */
static int take_file(const char *path, const char *uuid, double t0, double timeout_s, int *out, kg_err *err)
{
    for (;;) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
            return kg_err_set(err, KG_EXIT_IO, "GPU lock: %s: %s", path, strerror(errno));
        for (;;) {
            if (flock(fd, LOCK_EX | LOCK_NB) == 0)
                break;
            if (errno != EWOULDBLOCK && errno != EINTR) {
                int e = errno;
                close(fd);
                return kg_err_set(err, KG_EXIT_IO, "GPU lock: flock %s: %s", path, strerror(e));
            }
            if (kg_mono() - t0 >= timeout_s || kg_stop_requested()) {
                close(fd);
                return kg_err_set(err, KG_EXIT_ENV,
                                  "GPU %s busy: another kgate process held its lock (%s) for %.0f s", uuid, path,
                                  kg_mono() - t0);
            }
            struct timespec ts = {0, (long)(POLL_S * 1e9)};
            nanosleep(&ts, NULL);
        }
        struct stat held, now;
        if (fstat(fd, &held) == 0 && stat(path, &now) == 0 && held.st_dev == now.st_dev && held.st_ino == now.st_ino) {
            *out = fd;
            return 0;
        }
        close(fd); /* the file went away under it: take the new one */
    }
}

int kg_gpu_lock_off(void)
{
    const char *off = getenv("KGATE_GPU_LOCK");
    return off && strcmp(off, "0") == 0;
}

int kg_gpu_lock_take(const char *uuid, double timeout_s, kg_gpu_lock *l, kg_err *err)
{
    char path[1200], turn[1300];
    int tfd = -1, fd = -1;
    l->fd = -1;
    l->waited_s = 0;
    if (kg_gpu_lock_off())
        return 0;
    if (kg_gpu_lock_path(uuid, path, sizeof path, err))
        return err->code;
    /* waiters queue on a second file first, so that at most one polls the
     * GPU's lock: a holder that lets go and takes it again queues behind
     * that one, and the lock goes round instead of back to its holder */
    snprintf(turn, sizeof turn, "%s.turn", path);
    double t0 = kg_mono();
    if (take_file(turn, uuid, t0, timeout_s, &tfd, err))
        return err->code;
    int rc = take_file(path, uuid, t0, timeout_s, &fd, err);
    flock(tfd, LOCK_UN);
    close(tfd);
    if (rc)
        return rc;
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
