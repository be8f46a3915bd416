/* What the files of `kgate batch` share (batch_cmd.h has its entry points).
 * The batch: many candidates, every local GPU, shards across nodes
 * (docs/scale.md). Each job is one `kgate check` process on one GPU, so it
 * gets exactly the worker, checks and gate of `kgate check`; the batch only
 * schedules. Its files, in the order of the work:
 *   batch_cmd.c        the command: arguments, GPUs, the rank's jobs, its end
 *   batch_dispatch.c   the dispatcher (the batch's own process): one
 *                      supervisor process per GPU slot, jobs handed out on
 *                      demand, a drained GPU's job handed to the others
 *   batch_supervise.c  a supervisor: each job run, its results appended as
 *                      one line of the results file (store/batch.h)
 *   batch_health.c     a GPU's health check, and the view its jobs get
 *   batch_proc.c       a job's process under a time limit, and the warm slot
 *   batch_summary.c    the summary, read back from the results file
 * Each job sees only its GPU (kg_batch_view).
 * Test hooks (documented in docs/scale.md): KG_BATCH_RUNNER replaces the
 * `kgate` that runs each job and each health check, KG_BATCH_GPUS fakes the
 * GPU count (GPU g's UUID is then "GPU-fake-g"). */
#ifndef KG_BATCH_INT_H
#define KG_BATCH_INT_H

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

#include "../base/kg.h"
#include "../store/batch.h"

#include <cjson/cJSON.h>

#define MAX_GPUS 64
#define MAX_PER_GPU 4 /* --jobs-per-gpu */
#define MAX_DONE 64 /* --done files */
#define KG_STOP_GRACE_S 5.0 /* a job past --job-timeout, or stopped: from SIGTERM to SIGKILL */
#define KG_BATCH_KILL_WAIT_S 10.0 /* a job's exit after SIGKILL (then it is given up on, its GPU drained) */
#define KG_SLOT_END_S 2.0 /* a dropped slot's exit: it stops its fork server, milliseconds */

/* A supervisor's message to the dispatcher. job is the job it was given
 * (-1 with READY); anything else is a violation, and the supervisor is
 * killed and its GPU drained. */
typedef struct kg_batch_msg {
    int kind;
    int slot, job;
} kg_batch_msg;
enum {
    M_READY, /* give me a job */
    M_DONE,  /* the job's line is in the results file */
    M_DRAIN, /* the GPU failed its health check after the job: drained, the job to move on (charged) */
    M_LOST,  /* an environment failure (fork, a process that would not die): drained, the job moved on uncharged */
    M_FATAL, /* the results file could not be written: the whole batch stops (exit 6) */
};

/* The supervisors' turns at the results file, in memory they share: a
 * robust mutex, and whether an append failed (the batch stops: no other
 * line is written, nor the failure said again). */
typedef struct kg_batch_turn {
    pthread_mutex_t m;
    int failed;
} kg_batch_turn;

/* The batch as its arguments and GPUs set it up. */
typedef struct kg_batch_cfg {
    const char *input, *out, *shard;
    char results[PATH_MAX];
    int gpus[MAX_GPUS], n_gpus;
    double timeout_s;
    int n_check;
    char **check; /* options for every job's kgate check */
    char exe[PATH_MAX];
    const char *done[MAX_DONE]; /* --done: results files whose jobs count as finished */
    int n_done;
    char uuid[MAX_GPUS][64]; /* each GPU's UUID ("" where the query failed) */
    int per_gpu;             /* --jobs-per-gpu: supervisors (slots) a GPU; slot s is GPU s / per_gpu */
    struct kg_batch_turn *turn; /* the supervisors' turns at the results file (shared memory) */
    int keep_slot; /* kgate serve: a job that is not Python leaves the warm slot (kg_batch_slot_ahead) */
} kg_batch_cfg;

/* How a supervisor's jobs see their GPU: CUDA_VISIBLE_DEVICES=cvd and
 * --device dev (cvd the GPU's UUID and dev 0), or, where that did not
 * select the GPU, every GPU and --device g (cvd NULL). */
typedef struct kg_batch_view {
    const char *cvd;
    int dev;
} kg_batch_view;

/* What a dispatch did. */
typedef struct kg_batch_outcome {
    int n_done;  /* jobs recorded by this run */
    int lost;    /* jobs no GPU could take (or that drained two) */
    int stopped; /* jobs cut short by a stop (or a fatal error), not recorded */
    int unrun;   /* jobs not started because of a stop */
    int fatal;   /* the results file could not be written */
} kg_batch_outcome;

/* kg_batch_run_timed's answers besides an exit code; RUN_STUCK: the run,
 * or what it left, did not end after SIGKILL (a process in the driver,
 * likely on a wedged GPU): a drain charged to the job, as a failed health
 * check is; RUN_CANCELLED: its watch ended it */
enum { RUN_FAILED = -1, RUN_STOPPED = -2, RUN_STUCK = -3, RUN_CANCELLED = -4 };

/* What a job's wait also does (kgate serve): tick(ud, why, size) about
 * every 20 ms while the job runs; non-zero (why said) ends the job as its
 * time limit does: asked to stop, killed after a grace, its results kept. */
typedef struct kg_batch_watch {
    int (*tick)(void *ud, char *why, size_t size);
    void *ud;
    char why[160];
} kg_batch_watch;

/* A health check's answers */
enum { H_BAD, H_OK, H_UNKNOWN, H_STOPPED, H_FAILED };

/* batch_proc.c: a job's process */
const char *kg_batch_runner(const kg_batch_cfg *c); /* KG_BATCH_RUNNER, else this kgate */
int kg_batch_run_timed(char *const argv[], const char *log, double timeout_s, const char *cvd, int warm,
                       kg_batch_watch *w, kg_err *err);
void kg_batch_slot_drop(void);
/* Starts the warm slot (a fork server for the next Python job) where there
 * is none and the checks would use one (kg_batch_zygote_wanted); cvd as
 * for kg_batch_run_timed. kgate serve calls it between requests. */
void kg_batch_slot_ahead(const kg_batch_cfg *c, const char *cvd);
void kg_batch_last_line(const char *path, char *buf, size_t size);
#define KG_BATCH_LOG_READ (1L << 20) /* bytes of a job's log read for its notes */
cJSON *kg_batch_notes(const char *path, const char *error);

/* batch_health.c: a GPU's health, and the view of it its jobs get */
int kg_batch_health(const kg_batch_cfg *c, const kg_batch_view *v, const char *want, const char *dir, kg_err *err);
kg_batch_view kg_batch_pick_view(const kg_batch_cfg *c, int gi, const char *dir);

/* batch_supervise.c: a GPU slot's supervisor (a process of its own) */
void kg_batch_supervise(const kg_batch_cfg *c, const kg_batch_jobs *jobs, int slot, int in, int status, int fd,
                        const char *dir, pid_t batch);
void kg_batch_remove_dir(const char *dir);
/* 1 when every job's check would start a Python fork server (KGATE_ZYGOTE
 * not 0, no --sandbox or --memcheck among the options for every job) */
int kg_batch_zygote_wanted(const kg_batch_cfg *c);
/* One job on GPU g, seen through v: `kgate check ... --device DEV --json
 * DIR/job.json`; *text gets its results line (malloc'd). Returns the job's
 * exit code (124: time limit; 7 with error "cancelled: WHY" when w, where
 * not NULL, ended it), RUN_STOPPED (no line), or RUN_FAILED with err.
 * kgate serve runs its requests through it too. */
int kg_batch_run_job(const kg_batch_cfg *c, const kg_batch_job *j, int g, const kg_batch_view *v, const char *dir,
                     kg_batch_watch *w, char **text, kg_err *err);

/* batch_dispatch.c: the dispatcher */
int kg_batch_dispatch(const kg_batch_cfg *c, const kg_batch_jobs *jobs, const int *todo, int n_todo, int fd,
                      int *drained, kg_batch_outcome *o);

/* batch_summary.c: the summary */
void kg_batch_summarize(const char *path, int ran, int skipped, int lost, double wall_s, const kg_batch_cfg *c,
                        const int *drained);

#endif
