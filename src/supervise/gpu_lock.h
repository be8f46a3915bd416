/* One GPU's work, one kgate process at a time. Every job that may put work
 * on a GPU (a kernel or library job's worker, the list job's, which loads
 * the candidate, a diagnosis, --memcheck, the roofs' measurement, a batch's
 * health check) holds that GPU's lock: flock(2) on a file named after the
 * GPU's UUID, in a directory of the user's own on a local file system
 * (/tmp/kgate-UID, the same whatever else the environment says, or
 * KGATE_LOCK_DIR; mode 0700, owned by the user, not a link). So two kgate
 * commands on one GPU (two batches, a check beside a batch, a batch's
 * several jobs a GPU) never run their GPU work beside each other, and the
 * time one waited for the other is not in anything timed. The lock goes
 * with the process that holds it, however it ends; a wait has a deadline.
 * Every take sets the lock files' times to now, so an age-based cleaner of
 * /tmp (systemd-tmpfiles, 10 days) leaves the files of a lock in use; a
 * file unlinked or replaced while a process waited for it is opened again.
 * What remains: a process of the same user that removes the files by hand
 * (or a cleaner, of one lock held longer than its age) lets a newcomer
 * make a new file and hold its lock beside the holder.
 * KGATE_GPU_LOCK=0 turns it off; KGATE_GPU_LOCK=require makes a lock that
 * cannot be used an error. */
#ifndef KG_GPU_LOCK_H
#define KG_GPU_LOCK_H

#include "../base/kg.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kg_gpu_lock {
    int fd;          /* -1: not held */
    double waited_s; /* how long taking it waited */
} kg_gpu_lock;

/* The lock file of GPU uuid into buf (its directory made, and checked:
 * KG_EXIT_IO naming the problem when it is not the user's own). */
int kg_gpu_lock_path(const char *uuid, char *buf, size_t size, kg_err *err);

/* Whether KGATE_GPU_LOCK=0 turns the lock off. */
int kg_gpu_lock_off(void);

/* Whether KGATE_GPU_LOCK=require makes a lock file that cannot be used an
 * error rather than a line on stderr (jobs going on without the lock):
 * kgate batch sets it for its jobs under --jobs-per-gpu, whose jobs share
 * a GPU and rely on the lock to take turns. */
int kg_gpu_lock_required(void);

/* Takes GPU uuid's lock, waiting at most timeout_s (polling every 5 ms).
 * Waiters take turns on a second file (the lock's name and .turn): the one
 * holding the turn polls the lock, so a holder that lets go and takes it
 * again finds a waiter there first, and the waiter has it next. Among
 * several waiters the order is not kept (whichever tries the turn first
 * once it is let go has it); each wait is bounded by its own deadline. A
 * turn holder that is not moving (stopped: Ctrl-Z, a debugger, a frozen
 * cgroup) keeps nobody from a free GPU: a waiter without the turn for 1 s
 * that finds the lock free at every poll for 0.1 s takes it past it (still
 * one holder at a time: flock). Returns 0 with l->fd the lock; KG_EXIT_ENV
 * when it stayed held that long ("GPU ... busy"); KG_EXIT_STOPPED when a
 * stop was asked (kg_stop_requested) while it waited; KG_EXIT_IO for a
 * lock file that cannot be used (the message names the failing call, file
 * and line). l->fd is -1 then, and also, with 0 returned, when
 * KGATE_GPU_LOCK=0. */
int kg_gpu_lock_take(const char *uuid, double timeout_s, kg_gpu_lock *l, kg_err *err);

/* Lets it go (nothing when not held). */
void kg_gpu_lock_drop(kg_gpu_lock *l);

#ifdef __cplusplus
}
#endif
#endif
