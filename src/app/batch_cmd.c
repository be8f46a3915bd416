/* `kgate batch`: many candidates, every local GPU, shards across nodes
 * (docs/scale.md). Each job is one `kgate check` process on one GPU, so it
 * gets exactly the worker, checks and gate of `kgate check`; this file only
 * schedules: one supervisor process per GPU pulls jobs from a dispatcher
 * (this process), appends each job's results as one line of the results
 * file (store/batch.h), and a GPU that fails its health check is drained and
 * its job handed to the others. Each job sees only its GPU (gpu_view).
 * Test hooks (documented there): KG_BATCH_RUNNER replaces the `kgate` that
 * runs each job and each health check, KG_BATCH_GPUS fakes the GPU count
 * (GPU g's UUID is then "GPU-fake-g"). */
#include "batch_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cuda_runtime_api.h>

#include "../store/batch.h"
#include "../supervise/gpu_lock.h"
#include "../supervise/job.h"
#include "../base/kg.h"
#include "options.h"
#include "../catalog/plugin_check.h"
#include "../base/text.h"
#include "../supervise/zygote.h"
#include "../gpu/check.h"
#include "../gpu/device.h"

#define MAX_GPUS 64
#define MAX_PER_GPU 4 /* --jobs-per-gpu */
#define KG_STOP_GRACE_S 5.0 /* a job past --timeout, or stopped: from SIGTERM to SIGKILL */
#define KG_BATCH_KILL_WAIT_S 10.0 /* a job's exit after SIGKILL (then it is given up on, its GPU drained) */
/* the batch's wait for its supervisors to stop: a job's grace and kill, its leftovers' reaping */
#define KG_SUPERVISORS_STOP_S (KG_STOP_GRACE_S + KG_BATCH_KILL_WAIT_S + KG_REAP_WAIT_S + 2 * KG_SLOT_END_S + 5.0) /* + the warm slot's end */
#define KG_HEALTH_WAIT_S 50.0 /* a health check's wait for the GPU's lock (its run is cut at 60 s) */
#define KG_HEALTH_RUN_S 60.0
#define KG_HEALTH_UNKNOWN 1 /* `kgate __health`'s exit when the GPU's lock stayed held: health not checked */
#define KG_RESULTS_TURN_S 60.0 /* a supervisor's wait for its turn to append to the results file */
#define KG_DOC_MAX (KG_BATCH_LINE_MAX / 2) /* a job's results document, read whole into its line */
#define MAX_SLOTS (MAX_GPUS * MAX_PER_GPU)

/* A supervisor's message to the dispatcher. job is the job it was given
 * (-1 with READY); anything else is a violation, and the supervisor is
 * killed and its GPU drained. */
typedef struct msg {
    int kind;
    int slot, job;
} msg;
enum {
    M_READY, /* give me a job */
    M_DONE,  /* the job's line is in the results file */
    M_DRAIN, /* the GPU failed its health check after the job: drained, the job to move on (charged) */
    M_LOST,  /* an environment failure (fork, a process that would not die): drained, the job moved on uncharged */
    M_FATAL, /* the results file could not be written: the whole batch stops (exit 6) */
};

#define MAX_DONE 64 /* --done files */

/* The supervisors' turns at the results file, in memory they share: a
 * robust mutex, and whether an append failed (the batch stops: no other
 * line is written, nor the failure said again). */
typedef struct results_turn {
    pthread_mutex_t m;
    int failed;
} results_turn;

typedef struct cfg {
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
    struct results_turn *turn; /* the supervisors' turns at the results file (shared memory) */
} cfg;

/* How a supervisor's jobs see their GPU: CUDA_VISIBLE_DEVICES=cvd and
 * --device dev (cvd the GPU's UUID and dev 0), or, where that did not
 * select the GPU, every GPU and --device g (cvd NULL). */
typedef struct gpu_view {
    const char *cvd;
    int dev;
} gpu_view;

static int usage(const char *m)
{
    fprintf(stderr, "kgate: %s\n", m);
    return KG_EXIT_USAGE;
}

static const char *runner(const cfg *c)
{
    const char *r = getenv("KG_BATCH_RUNNER");
    return r && *r ? r : c->exe;
}

static void nap(void)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* run_timed's answers besides an exit code; RUN_STUCK: the run, or what it
 * left, did not end after SIGKILL (a process in the driver, likely on a
 * wedged GPU): a drain charged to the job, as a failed health check is */
enum { RUN_FAILED = -1, RUN_STOPPED = -2, RUN_STUCK = -3 };

/* ------------------------------------------------------- the warm slot */

/* A Python job's `kgate check` spends seconds starting its fork server
 * (torch's imports: supervise/zygote.h) before its first worker. While a Python
 * job runs, its supervisor forks the next job's process ahead: the slot
 * starts that fork server at once and waits for its job, which it execs as
 * `kgate check` with the server handed over (supervise/job.h,
 * kg_job_take_zygote); the server is the check's child across the exec. A
 * supervisor has one slot at most; the next job takes it, or it is dropped
 * (a job that is not Python, the supervisor's end). */
#define KG_SLOT_MSG_MAX (1 << 20) /* a job's log path, arguments and environment */
#define KG_SLOT_ARGS_MAX 64       /* what a slot takes: slot_take sends no more, else it forks */
#define KG_SLOT_ENV_MAX 4090
#define KG_SLOT_SEND_S 5.0        /* the slot reads its job at once: five seconds is a dead slot */
#define KG_SLOT_END_S 2.0         /* a dropped slot's exit: it stops its fork server, milliseconds */

static struct {
    pid_t pid; /* 0: none */
    int fd;    /* the pipe its job goes down */
} next_slot = {0, -1};

/* Reads exactly n bytes: 0, or -1 at an end of file or an error. */
static int read_full(int fd, void *buf, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r > 0)
            got += (size_t)r;
        else if (!(r < 0 && errno == EINTR))
            return -1;
    }
    return 0;
}

/* A count, then that many NUL-ended fields, from *p (before end) into v:
 * the count, or -1 when it is over max or the fields run past end. */
static int take_fields(char **p, char *end, char **v, int max)
{
    int n = *p < end ? atoi(*p) : -1;
    *p += *p < end ? strlen(*p) + 1 : 0;
    if (n < 0 || n > max)
        return -1;
    for (int i = 0; i < n; i++) {
        if (*p >= end)
            return -1;
        v[i] = *p;
        *p += strlen(*p) + 1;
    }
    return n;
}

/* The slot's whole life: start the fork server, read the job, exec it. */
static void slot_main(int in, const char *exe, const char *cvd)
{
    char python[PATH_MAX], *msg = malloc(KG_SLOT_MSG_MAX), *argv[80], *env[4096], handed[64];
    kg_err e = {0, ""};
    kg_zygote *z = NULL;
    if (!msg)
        _exit(127);
    if (cvd) /* the job's view of the GPUs, as the check's own server would have it */
        setenv("CUDA_VISIBLE_DEVICES", cvd, 1);
    if (kg_job_python(exe, python, sizeof python, &e) == 0 && kg_zygote_start(python, &z, &e) == 0 &&
        fcntl(kg_zygote_sock(z), F_SETFD, 0) != 0) { /* it must cross the exec */
        kg_zygote_stop(z);
        z = NULL;
    }
    uint32_t len = 0; /* the supervisor's end closed: no job comes */
    if (read_full(in, &len, sizeof len) || len < 4 || len >= KG_SLOT_MSG_MAX || read_full(in, msg, len))
        goto none;
    msg[len] = '\0';
    /* log NUL argc NUL argv... NUL envc NUL env... NUL (the supervisor's own) */
    char *p = msg, *end = msg + len;
    const char *log = p;
    p += strlen(p) + 1;
    int argc = take_fields(&p, end, argv, KG_SLOT_ARGS_MAX);
    if (argc < 1)
        goto bad;
    argv[argc] = NULL;
    int envc = take_fields(&p, end, env, KG_SLOT_ENV_MAX);
    if (envc < 0)
        goto bad;
    if (z) {
        static char py_var[PATH_MAX + 32], path_var[8192];
        const char *pp = getenv("PYTHONPATH");
        snprintf(handed, sizeof handed, "KGATE_ZYGOTE_HANDED=%d:%ld", kg_zygote_sock(z), (long)kg_zygote_pid(z));
        snprintf(py_var, sizeof py_var, "KGATE_ZYGOTE_PYTHON=%s", python);
        snprintf(path_var, sizeof path_var, "KGATE_ZYGOTE_PYTHONPATH=%s", pp ? pp : "");
        env[envc++] = handed;
        env[envc++] = py_var;
        env[envc++] = path_var;
    }
    env[envc] = NULL;
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
    }
    close(in);
    execve(argv[0], argv, env);
    fprintf(stderr, "kgate: batch: %s: execve: %s\n", argv[0], strerror(errno));
    _exit(127);
bad: /* a job it was handed but cannot read: said in the job's log, an environment error */
    fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0)
        dprintf(fd, "kgate: batch: the warm slot could not read its job (%u bytes)\n", len);
    kg_zygote_stop(z);
    _exit(KG_EXIT_ENV);
none:
    kg_zygote_stop(z);
    _exit(0);
}

/* Forks the slot for the next job (exe: the `kgate check` it will exec). */
static void slot_spawn(const char *exe, const char *cvd)
{
    int p[2];
    if (next_slot.pid > 0 || pipe2(p, O_CLOEXEC))
        return;
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* a slot never outlives its supervisor */
        signal(SIGPIPE, SIG_DFL);
        signal(SIGXFSZ, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        close(p[1]);
        slot_main(p[0], exe, cvd);
    }
    close(p[0]);
    if (pid < 0) {
        close(p[1]);
        return;
    }
    setpgid(pid, pid);
    next_slot.pid = pid;
    next_slot.fd = p[1];
}

/* Ends the slot: it reads no job, stops its fork server and exits; killed
 * where it does not within KG_SLOT_END_S, or at once when the batch is
 * asked to stop (its fork server dies with it: PR_SET_PDEATHSIG). */
static void slot_drop(void)
{
    int st;
    if (next_slot.pid <= 0)
        return;
    close(next_slot.fd);
    if (kg_stop_requested() || kg_wait_child(next_slot.pid, &st, KG_SLOT_END_S) != 1) {
        kill(-next_slot.pid, SIGKILL);
        kill(next_slot.pid, SIGKILL);
        (void)kg_wait_child(next_slot.pid, &st, KG_SLOT_END_S);
    }
    next_slot.pid = 0;
    next_slot.fd = -1;
}

/* Hands the slot its job: the slot's pid (now the job's), or 0 when it
 * could not take it (it is then dropped: the caller forks as before). */
static pid_t slot_take(char *const argv[], char **env, const char *log)
{
    char num[16];
    size_t len = 4;
    int argc = 0, envc = 0, bad = 0;
    char *msg = next_slot.pid > 0 ? malloc(KG_SLOT_MSG_MAX) : NULL;
    if (!msg) {
        slot_drop();
        return 0;
    }
    while (argv[argc])
        argc++;
    while (env[envc])
        envc++;
    bad |= argc > KG_SLOT_ARGS_MAX || envc > KG_SLOT_ENV_MAX; /* more than the slot takes: fork */
    bad |= kg_put_field(msg, KG_SLOT_MSG_MAX - 1, &len, log);
    snprintf(num, sizeof num, "%d", argc);
    bad |= kg_put_field(msg, KG_SLOT_MSG_MAX - 1, &len, num);
    for (int i = 0; i < argc; i++)
        bad |= kg_put_field(msg, KG_SLOT_MSG_MAX - 1, &len, argv[i]);
    snprintf(num, sizeof num, "%d", envc);
    bad |= kg_put_field(msg, KG_SLOT_MSG_MAX - 1, &len, num);
    for (int i = 0; i < envc; i++)
        bad |= kg_put_field(msg, KG_SLOT_MSG_MAX - 1, &len, env[i]);
    uint32_t body = (uint32_t)(len - 4);
    memcpy(msg, &body, 4);
    double end = kg_mono() + KG_SLOT_SEND_S;
    size_t sent = 0;
    fcntl(next_slot.fd, F_SETFL, O_NONBLOCK);
    while (!bad && sent < len && kg_mono() < end) {
        ssize_t w = write(next_slot.fd, msg + sent, len - sent);
        if (w > 0)
            sent += (size_t)w;
        else if (w < 0 && errno != EAGAIN && errno != EINTR)
            break; /* EPIPE: the slot is gone */
        else {
            struct pollfd pf = {next_slot.fd, POLLOUT, 0};
            poll(&pf, 1, 50);
        }
    }
    free(msg);
    if (sent != len) {
        slot_drop();
        return 0;
    }
    pid_t p = next_slot.pid;
    close(next_slot.fd);
    next_slot.pid = 0;
    next_slot.fd = -1;
    return p;
}

/* Runs argv with a time limit, stdout+stderr to `log`, CUDA_VISIBLE_DEVICES
 * set to cvd unless NULL; returns the exit code, 128+signal, 124 on the
 * time limit, RUN_STOPPED when a stop was asked (SIGINT, SIGTERM: the run
 * asked to stop, then killed after a grace), RUN_FAILED with err naming
 * the call that failed (fork, malloc), or RUN_STUCK with err naming the
 * process that would not die.
 * Whatever the run left behind is reaped (the supervisor is a subreaper).
 * warm: -1 for a health check (the warm slot stays as it is), 0 for a job
 * that is not Python (the slot is dropped), 1 for a Python job (it takes the
 * slot, and a slot for the next job starts beside it). */
static int run_timed(char *const argv[], const char *log, double timeout_s, const char *cvd, int warm,
                     kg_err *err)
{
    /* the child's environment, made before the fork: this one with
     * CUDA_VISIBLE_DEVICES=cvd in place of any it had */
    extern char **environ;
    char **env = environ, *cvd_var = NULL;
    if (cvd) {
        size_t n = 0, k = 0;
        while (environ[n])
            n++;
        env = malloc(sizeof *env * (n + 2));
        cvd_var = malloc(strlen(cvd) + sizeof "CUDA_VISIBLE_DEVICES=");
        if (!env || !cvd_var) {
            free(env);
            free(cvd_var);
            kg_err_set(err, KG_EXIT_ENV, "malloc: out of memory for %s's environment", argv[0]);
            return RUN_FAILED;
        }
        for (size_t i = 0; i < n; i++)
            if (strncmp(environ[i], "CUDA_VISIBLE_DEVICES=", 21) != 0)
                env[k++] = environ[i];
        sprintf(cvd_var, "CUDA_VISIBLE_DEVICES=%s", cvd);
        env[k++] = cvd_var;
        env[k] = NULL;
    }
    /* a Python job takes the warm slot, where there is one; any other job
     * ends it (its fork server is no use to that job) */
    pid_t p = 0;
    if (warm == 1)
        p = slot_take(argv, env, log);
    else if (warm == 0)
        slot_drop();
    if (p == 0)
        p = fork();
    if (p == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* a job never outlives its supervisor (a kill) */
        signal(SIGPIPE, SIG_DFL);         /* the batch ignores these; the job gets the defaults */
        signal(SIGXFSZ, SIG_DFL);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execve(argv[0], argv, env);
        fprintf(stderr, "kgate: batch: %s: execve: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int fork_errno = errno;
    if (env != environ) /* the child has its copy (or there is no child) */
        free(env);
    free(cvd_var);
    if (p < 0) {
        kg_err_set(err, KG_EXIT_ENV, "fork: %s", strerror(fork_errno));
        return RUN_FAILED;
    }
    setpgid(p, p);
    if (warm == 1) /* the next job's, while this one runs */
        slot_spawn(argv[0], cvd);
    double end = kg_mono() + timeout_s;
    int st = 0, rc = 0;
    for (;;) {
        if (waitpid(p, &st, WNOHANG) == p) {
            rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            break;
        }
        if (kg_stop_requested() || kg_mono() > end) {
            /* asked to stop first: kgate check kills its worker, waits for
             * it to be gone and lets the GPU's lock go only then (exit 7);
             * one that does not within a grace is killed, its workers dying
             * with it (PR_SET_PDEATHSIG); they and anything else it left
             * come here and are reaped before the next job */
            rc = kg_stop_requested() ? RUN_STOPPED : 124;
            kill(-p, SIGTERM);
            if (kg_wait_child(p, &st, KG_STOP_GRACE_S) != 1) {
                kill(-p, SIGKILL);
                kill(p, SIGKILL);
                if (kg_wait_child(p, &st, KG_BATCH_KILL_WAIT_S) != 1) {
                    kg_err_set(err, KG_EXIT_ENV, "%s (pid %d) did not end within %g s of SIGKILL", argv[0], (int)p,
                               KG_BATCH_KILL_WAIT_S);
                    return RUN_STUCK;
                }
            }
            break;
        }
        nap();
    }
    if (kg_reap_children(next_slot.pid) != 0) { /* it said which (the warm slot is spared) */
        kg_err_set(err, KG_EXIT_ENV, "what %s left behind did not end", argv[0]);
        return RUN_STUCK;
    }
    return rc;
}

/* The last non-empty line of a file, for a job's error. */
static void last_line(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    buf[0] = '\0';
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0])
            kg_text_clean(buf, size, line); /* a job's output: one printable line of UTF-8 */
    }
    if (f)
        fclose(f);
}

/* A health check's answers */
enum { H_BAD, H_OK, H_UNKNOWN, H_STOPPED, H_FAILED };

/* Whether a GPU still works: `kgate __health DEV` as the view sees it,
 * which prints the UUID of the GPU it checked; with want, that must be it.
 * H_UNKNOWN: the GPU's lock stayed held (it is in use), its health not
 * checked; H_STOPPED: a stop was asked; H_FAILED: err says what failed. */
static int health(const cfg *c, const gpu_view *v, const char *want, const char *dir, kg_err *err)
{
    char num[16], log[PATH_MAX + 32], said[600];
    snprintf(num, sizeof num, "%d", v->dev);
    snprintf(log, sizeof log, "%s/health.log", dir);
    char *argv[] = {(char *)runner(c), "__health", num, NULL};
    int rc = run_timed(argv, log, KG_HEALTH_RUN_S, v->cvd, -1, err);
    if (rc == RUN_STOPPED)
        return H_STOPPED;
    if (rc == RUN_FAILED)
        return H_FAILED;
    if (rc == KG_EXIT_IO) { /* its lock file cannot be used (KGATE_GPU_LOCK=require): not the GPU's fault */
        last_line(log, said, sizeof said);
        kg_err_set(err, KG_EXIT_IO, "kgate __health: %s", said);
        return H_FAILED;
    }
    if (rc != 0 && rc != KG_HEALTH_UNKNOWN) /* RUN_STUCK too: a health check that would not die */
        return H_BAD;
    last_line(log, said, sizeof said);
    if (want && strcmp(said, want) != 0)
        return H_BAD;
    return rc == 0 ? H_OK : H_UNKNOWN;
}

/* The view of a supervisor's GPU (slot). Each job sees only its GPU,
 * through CUDA_VISIBLE_DEVICES=UUID and --device 0: a candidate cannot put
 * work on another GPU of the batch (a hard-coded cuda:0, a stray
 * cudaSetDevice), and CUDA in the job's processes sets up one GPU, not every
 * GPU of the node. A health check under that view, once at the start, must
 * name that UUID (and pass, or find the GPU in use); where it does not but
 * the GPU is healthy seen whole (a driver or a kind of device that takes no
 * UUID there), the jobs see every GPU and --device g, and stderr says so. A
 * GPU that fails both is left to its first job, whose failure drains it as
 * before. */
static gpu_view pick_view(const cfg *c, int gi, const char *dir)
{
    gpu_view whole = {NULL, c->gpus[gi]}, alone = {c->uuid[gi], 0};
    kg_err e = {0, ""};
    if (!c->uuid[gi][0])
        return whole;
    int h = health(c, &alone, c->uuid[gi], dir, &e);
    if (h == H_OK || h == H_UNKNOWN || h == H_STOPPED)
        return alone;
    if (h == H_FAILED) { /* not the view's fault (a fork, the lock file): its jobs say more */
        fprintf(stderr, "kgate: batch: GPU %d: its health check could not run: %s\n", c->gpus[gi], e.msg);
        return alone;
    }
    h = health(c, &whole, NULL, dir, &e);
    if (h == H_OK || h == H_UNKNOWN)
        fprintf(stderr, "kgate: batch: GPU %d: CUDA_VISIBLE_DEVICES=%s did not select it: its jobs see every GPU\n",
                c->gpus[gi], c->uuid[gi]);
    return whole;
}

/* A job's results document (`kgate check --json`), read whole and checked:
 * a JSON object under KG_DOC_MAX bytes; else NULL and why in why. */
static cJSON *read_doc(const char *path, char *why, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    cJSON *doc = NULL;
    if (fd < 0) {
        if (errno == ENOENT)
            snprintf(why, size, "its results document (--json) is missing");
        else
            snprintf(why, size, "its results document (--json): open: %s", strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        snprintf(why, size, "its results document (--json) is not a file");
    else if (st.st_size >= KG_DOC_MAX)
        snprintf(why, size, "its results document (--json) is over the %d MiB cap (%lld bytes)", KG_DOC_MAX >> 20,
                 (long long)st.st_size);
    else {
        char *t = malloc((size_t)st.st_size + 1);
        ssize_t n = t ? read(fd, t, (size_t)st.st_size + 1) : -1;
        if (!t)
            snprintf(why, size, "its results document (--json): malloc: out of memory");
        else if (n != st.st_size)
            snprintf(why, size, "its results document (--json): read: %s",
                     n < 0 ? strerror(errno) : "its size changed while read");
        else {
            t[n] = '\0';
            doc = cJSON_Parse(t);
            if (!cJSON_IsObject(doc)) {
                cJSON_Delete(doc);
                doc = NULL;
                snprintf(why, size, "its results document (--json) is not valid JSON (an object)");
            }
        }
        free(t);
    }
    close(fd);
    return doc;
}

/* Whether a check under this option starts no fork server. */
static int forkless(const char *opt) { return strcmp(opt, "--sandbox") == 0 || strcmp(opt, "--memcheck") == 0; }

/* 1 when the job is a Python candidate whose check would start a fork
 * server (not off, not under --sandbox or --memcheck): the warm slot's */
static int python_job(const cfg *c, const kg_batch_job *j)
{
    const char *off = getenv("KGATE_ZYGOTE");
    if ((off && strcmp(off, "0") == 0) || !kg_source_is_python(j->candidate))
        return 0;
    for (int i = 0; i < j->n_opts; i++)
        if (forkless(j->opts[i]))
            return 0;
    for (int i = 0; i < c->n_check; i++)
        if (forkless(c->check[i]))
            return 0;
    return 1;
}

/* One job on GPU g, seen through v: `kgate check ... --device DEV --json
 * TMP`; *text gets its results line (malloc'd). Returns the job's exit code
 * (124: time limit), RUN_STOPPED (no line), or RUN_FAILED with err. */
static int run_job(const cfg *c, const kg_batch_job *j, int g, const gpu_view *v, const char *dir, char **text,
                   kg_err *err)
{
    char *argv[64], spec[PATH_MAX + 100], dev[16], json[PATH_MAX + 32], log[PATH_MAX + 32];
    int n = 0;
    snprintf(spec, sizeof spec, "%s%s%s", j->candidate, j->kernel[0] ? ":" : "", j->kernel);
    snprintf(dev, sizeof dev, "%d", v->dev);
    snprintf(json, sizeof json, "%s/job.json", dir);
    snprintf(log, sizeof log, "%s/job.log", dir);
    unlink(json);
    unlink(log); /* no earlier job's text can pass for this one's */
    argv[n++] = (char *)runner(c);
    argv[n++] = "check";
    argv[n++] = spec;
    if (j->op[0]) {
        argv[n++] = "--op";
        argv[n++] = (char *)j->op;
    }
    if (j->dtype[0]) {
        argv[n++] = "--dtype";
        argv[n++] = (char *)j->dtype;
    }
    if (j->shape[0]) {
        argv[n++] = "--shape";
        argv[n++] = (char *)j->shape;
    }
    for (int i = 0; i < j->n_opts && n < 40; i++)
        argv[n++] = (char *)j->opts[i];
    for (int i = 0; i < c->n_check && n < 56; i++)
        argv[n++] = c->check[i];
    argv[n++] = "--device";
    argv[n++] = dev;
    argv[n++] = "--json";
    argv[n++] = json;
    argv[n] = NULL;
    double t0 = kg_mono();
    int rc = run_timed(argv, log, c->timeout_s, v->cvd, python_job(c, j), err);
    double wall = kg_mono() - t0;
    if (rc < 0)
        return rc;
    cJSON *line = cJSON_CreateObject();
    cJSON_AddStringToObject(line, "schema", KG_BATCH_SCHEMA);
    cJSON_AddStringToObject(line, "id", j->id);
    cJSON_AddNumberToObject(line, "gpu", g);
    cJSON_AddNumberToObject(line, "exit", rc);
    cJSON_AddNumberToObject(line, "wall_s", wall);
    /* the check's own results document, whole (device, roofs, results) */
    char why[600], doc_why[300] = "";
    cJSON *doc = read_doc(json, doc_why, sizeof doc_why);
    if (doc)
        cJSON_AddItemToObject(line, "check", doc);
    if (rc >= 3) {
        last_line(log, why, sizeof why);
        if (rc == 124)
            snprintf(why, sizeof why, "no result within %g s: killed", c->timeout_s);
        cJSON_AddStringToObject(line, "error", why);
    } else if (!doc) { /* a verdict's exit without its verdicts: it could not be judged */
        snprintf(why, sizeof why, "exit %d, but %s", rc, doc_why);
        cJSON_AddStringToObject(line, "error", why);
    }
    kg_json_clean(line); /* the job's document and log are anyone's text (base/text.h) */
    *text = cJSON_PrintUnformatted(line);
    if (*text && strlen(*text) >= KG_BATCH_LINE_MAX - 1) { /* re-encoded, a document can grow */
        free(*text);
        cJSON_DeleteItemFromObjectCaseSensitive(line, "check");
        cJSON_DeleteItemFromObjectCaseSensitive(line, "error");
        snprintf(why, sizeof why, "its results line would be over the %d MiB cap", KG_BATCH_LINE_MAX >> 20);
        cJSON_AddStringToObject(line, "error", why);
        *text = cJSON_PrintUnformatted(line);
    }
    cJSON_Delete(line);
    if (!*text) {
        kg_err_set(err, KG_EXIT_ENV, "cJSON_PrintUnformatted: out of memory");
        return RUN_FAILED;
    }
    return rc;
}

/* Appends a results line in this supervisor's turn (a process-shared
 * mutex: a line cut short is cut off exactly, kg_results_append): 0, an
 * error, or 1 when an earlier append failed (nothing written, nothing to
 * say: that one said why). */
static int append_line(const cfg *c, int fd, const char *text, kg_err *err)
{
    struct timespec ts; /* a monotonic deadline: a step of the wall clock does not end the wait */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)KG_RESULTS_TURN_S;
    int rc = pthread_mutex_clocklock(&c->turn->m, CLOCK_MONOTONIC, &ts);
    if (rc == EOWNERDEAD) /* its holder died: a fragment it left is cut off by kg_results_append */
        rc = pthread_mutex_consistent(&c->turn->m);
    if (rc)
        return kg_err_set(err, KG_EXIT_IO, "pthread_mutex_clocklock (a turn at the file): %s", strerror(rc));
    if (c->turn->failed) {
        rc = 1; /* another supervisor's append failed and said so: the batch stops */
    } else if ((rc = kg_results_append(fd, text, err)) != 0) {
        c->turn->failed = 1;
    }
    pthread_mutex_unlock(&c->turn->m);
    return rc;
}

static void tell(int status, int kind, int slot, int job)
{
    msg m = {kind, slot, job};
    if (write(status, &m, sizeof m) != sizeof m) {
        /* the batch is gone: PR_SET_PDEATHSIG stops this supervisor */
    }
}

/* Removes a supervisor's directory and what its jobs wrote there. */
static void remove_dir(const char *dir)
{
    static const char *files[] = {"job.json", "job.log", "health.log"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* A supervisor for one slot of a GPU: asks for jobs until told there are
 * none, or asked to stop (SIGINT, SIGTERM, or its batch gone): then its
 * running job is asked to stop, killed after a grace, its leftovers
 * reaped, and the job is not recorded (a rerun runs it). */
static void supervise(const cfg *c, const kg_batch_jobs *jobs, int slot, int in, int status, int fd,
                      const char *dir, pid_t batch)
{
    prctl(PR_SET_PDEATHSIG, SIGTERM); /* the batch killed (SIGKILL): stop as if asked */
    if (getppid() != batch)
        kg_stop_request(SIGTERM);
    prctl(PR_SET_CHILD_SUBREAPER, 1); /* what a job leaves behind comes back here (run_timed) */
    int g = c->gpus[slot / c->per_gpu], said_unknown = 0;
    gpu_view v = pick_view(c, slot / c->per_gpu, dir);
    while (!kg_stop_requested()) {
        tell(status, M_READY, slot, -1);
        int job;
        if (read(in, &job, sizeof job) != sizeof job || job < 0 || job >= jobs->n)
            break;
        kg_err err = {0, ""};
        char *text = NULL;
        int rc = run_job(c, &jobs->v[job], g, &v, dir, &text, &err);
        if (rc == RUN_STOPPED)
            break;
        int h = H_OK;
        /* an environment failure, a killed check or one past --timeout: is
         * it the GPU? Then the job is not recorded here but handed to
         * another GPU */
        if (rc == KG_EXIT_ENV || rc == 124 || rc > 128)
            h = health(c, &v, v.cvd, dir, &err);
        if (h == H_STOPPED) { /* asked to stop during the health check: the job is not recorded */
            free(text);
            break;
        }
        if (rc == RUN_STUCK) { /* the job's processes would not die: its GPU likely wedged, by it */
            fprintf(stderr, "kgate: batch: GPU %d: %s: drained, job %s charged\n", g, err.msg, jobs->v[job].id);
            free(text);
            tell(status, M_DRAIN, slot, job);
            break;
        }
        if (rc == RUN_FAILED || h == H_FAILED) {
            fprintf(stderr, "kgate: batch: GPU %d: %s: drained, job %s moved on\n", g, err.msg, jobs->v[job].id);
            free(text);
            tell(status, M_LOST, slot, job);
            break;
        }
        if (h == H_BAD) {
            free(text);
            tell(status, M_DRAIN, slot, job);
            break;
        }
        if (h == H_UNKNOWN && !said_unknown++)
            fprintf(stderr, "kgate: batch: GPU %d: its health could not be checked after job %s (its lock stayed "
                            "held): not drained, the job's result recorded\n",
                    g, jobs->v[job].id);
        rc = append_line(c, fd, text, &err);
        free(text);
        if (rc) {
            if (rc != 1)
                fprintf(stderr, "kgate: batch: %s: %s: the batch stops\n", c->results, err.msg);
            tell(status, M_FATAL, slot, job);
            break;
        }
        tell(status, M_DONE, slot, job);
    }
    slot_drop();
    remove_dir(dir);
    _exit(0);
}

static void progress(int done, int total, int drained)
{
    if (!isatty(2) || total == 0)
        return;
    int w = 30, k = done * w / total;
    fprintf(stderr, "\r[%.*s%*s] %d/%d jobs%s", k, "##############################", w - k, "", done, total,
            drained ? " (a GPU drained)" : "");
    if (done == total)
        fputc('\n', stderr);
}

/* What a dispatch did. */
typedef struct outcome {
    int n_done;  /* jobs recorded by this run */
    int lost;    /* jobs no GPU could take (or that drained two) */
    int stopped; /* jobs cut short by a stop (or a fatal error), not recorded */
    int unrun;   /* jobs not started because of a stop */
    int fatal;   /* the results file could not be written */
} outcome;

/* Each slot's directory for its jobs' files: $TMPDIR (else /tmp)/kgate-batch-XXXXXX. */
static int make_dirs(char (*dirs)[PATH_MAX], int n)
{
    const char *tmp = getenv("TMPDIR");
    for (int s = 0; s < n; s++) {
        snprintf(dirs[s], PATH_MAX, "%s/kgate-batch-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        char tmpl[PATH_MAX];
        snprintf(tmpl, sizeof tmpl, "%s", dirs[s]); /* mkdtemp may change it when it fails */
        if (!mkdtemp(dirs[s])) {
            fprintf(stderr, "kgate: batch: %s: mkdtemp: %s\n", tmpl, strerror(errno));
            while (s-- > 0)
                rmdir(dirs[s]);
            return KG_EXIT_IO;
        }
    }
    return 0;
}

/* The dispatcher's state: the slots (--jobs-per-gpu supervisors per GPU),
 * the shared queue and each GPU's queue of the jobs pinned to it, what each
 * slot runs, and what drained the GPUs. */
typedef struct disp {
    const cfg *c;
    const kg_batch_jobs *jobs;
    int n_todo, n_slots, per;
    int status[2], in[MAX_SLOTS][2];
    pid_t pid[MAX_SLOTS];
    int inflight[MAX_SLOTS], waiting[MAX_SLOTS], bad[MAX_SLOTS], alive, attempts_left;
    int slots_left[MAX_GPUS]; /* each GPU's supervisors still alive */
    /* the shared queue, and one per GPU for the jobs pinned to it ("gpu") */
    int *queue, head, tail, *pinned, phead[MAX_GPUS], ptail[MAX_GPUS], lost_pinned;
    /* the GPUs each job was charged with draining (in flight there when it
     * drained): the first (index + 1), and whether a second one: a job
     * moves on once; one charged on two GPUs is left undone, so that a
     * candidate that breaks GPUs cannot drain them one by one */
    short *charged;
    unsigned char *twice;
    char (*dirs)[PATH_MAX];
    int breakers, stopping, killed;
    double stop_by;
    int *drained;
    outcome *o;
} disp;

/* The queues filled, the slots' directories made. 0, or an exit code. */
static int disp_init(disp *d, const int *todo)
{
    const cfg *c = d->c;
    d->queue = malloc(sizeof(int) * (size_t)(2 * d->n_todo + MAX_SLOTS + 1));
    d->pinned = malloc(sizeof(int) * (size_t)(d->n_todo + 1) * (size_t)c->n_gpus);
    d->charged = calloc((size_t)d->jobs->n + 1, sizeof *d->charged);
    d->twice = calloc((size_t)d->jobs->n + 1, 1);
    d->dirs = malloc((size_t)d->n_slots * PATH_MAX);
    d->attempts_left = 2 * d->n_todo + 4;
    if (!d->queue || !d->pinned || !d->charged || !d->twice || !d->dirs) {
        fprintf(stderr, "kgate: batch: malloc: out of memory\n");
        return KG_EXIT_ENV;
    }
    if (pipe2(d->status, O_CLOEXEC)) {
        fprintf(stderr, "kgate: batch: pipe2: %s\n", strerror(errno));
        return KG_EXIT_ENV;
    }
    int rc = make_dirs(d->dirs, d->n_slots);
    if (rc) {
        close(d->status[0]);
        close(d->status[1]);
        return rc;
    }
    for (int i = 0; i < d->n_todo; i++) {
        int s = -1;
        for (int k = 0; k < c->n_gpus && d->jobs->v[todo[i]].gpu >= 0; k++)
            if (c->gpus[k] == d->jobs->v[todo[i]].gpu)
                s = k;
        if (s >= 0)
            d->pinned[(size_t)s * (size_t)(d->n_todo + 1) + (size_t)d->ptail[s]++] = todo[i];
        else
            d->queue[d->tail++] = todo[i];
    }
    for (int g = 0; g < c->n_gpus; g++)
        d->slots_left[g] = d->per;
    return 0;
}

/* A GPU's last supervisor is gone: the jobs pinned to it are lost. */
static void disp_gpu_gone(disp *d, int gi)
{
    if (--d->slots_left[gi] == 0) {
        d->lost_pinned += d->ptail[gi] - d->phead[gi];
        d->phead[gi] = d->ptail[gi];
    }
}

/* Forks every slot's supervisor (those that cannot be forked are gone). */
static void disp_start(disp *d, int fd)
{
    pid_t batch = getpid();
    for (int s = 0; s < d->n_slots; s++) {
        d->inflight[s] = -1;
        d->pid[s] = -1;
        d->in[s][0] = d->in[s][1] = -1;
        if (pipe2(d->in[s], O_CLOEXEC) == 0)
            d->pid[s] = fork();
        if (d->pid[s] < 0) { /* the slots forked so far work; this one is gone */
            fprintf(stderr, "kgate: batch: GPU %d: %s: %s: one of its supervisors not started\n",
                    d->c->gpus[s / d->per], d->in[s][0] < 0 ? "pipe2" : "fork", strerror(errno));
            if (d->in[s][0] >= 0) {
                close(d->in[s][0]);
                close(d->in[s][1]);
            }
            d->in[s][1] = -1;
            disp_gpu_gone(d, s / d->per);
            continue;
        }
        if (d->pid[s] == 0) {
            close(d->status[0]);
            for (int k = 0; k <= s; k++) /* the other slots' ends: only the batch writes to them */
                if (d->in[k][1] >= 0)
                    close(d->in[k][1]);
            supervise(d->c, d->jobs, s, d->in[s][0], d->status[1], fd, d->dirs[s], batch);
        }
        close(d->in[s][0]);
        d->alive++;
    }
    close(d->status[1]);
    fcntl(d->status[0], F_SETFL, fcntl(d->status[0], F_GETFL) | O_NONBLOCK);
}

/* A stop (a signal, a fatal error): every supervisor told (SIGTERM), waited
 * for KG_SUPERVISORS_STOP_S, then killed. 1 when they are past waiting for. */
static int disp_stop(disp *d)
{
    if (!d->stopping && (kg_stop_requested() || d->o->fatal)) {
        d->stopping = 1;
        d->stop_by = kg_mono() + KG_SUPERVISORS_STOP_S;
        for (int s = 0; s < d->n_slots; s++) {
            if (d->pid[s] > 0)
                kill(d->pid[s], SIGTERM);
            if (d->in[s][1] >= 0) { /* an idle supervisor's read of its next job ends (EOF) */
                close(d->in[s][1]);
                d->in[s][1] = -1;
            }
        }
    } else if (d->stopping && kg_mono() > d->stop_by) {
        if (d->killed) {
            fprintf(stderr, "kgate: batch: %d supervisor(s) did not end after SIGKILL: left\n", d->alive);
            return 1;
        }
        fprintf(stderr, "kgate: batch: %d supervisor(s) had not stopped %g s after SIGTERM: killed\n", d->alive,
                KG_SUPERVISORS_STOP_S);
        for (int s = 0; s < d->n_slots; s++)
            if (d->pid[s] > 0)
                kill(d->pid[s], SIGKILL);
        d->killed = 1;
        d->stop_by = kg_mono() + KG_BATCH_KILL_WAIT_S;
    }
    return 0;
}

/* A job that cannot run where it was: requeued (once more, while attempts
 * last), or lost when it is pinned to its GPU. */
static void disp_requeue(disp *d, int job)
{
    if (d->jobs->v[job].gpu >= 0)
        d->lost_pinned++;
    else if (d->attempts_left-- > 0)
        d->queue[d->tail++] = job;
}

/* A DRAIN: every job in flight on the GPU when it drained is charged with
 * it (the breaker need not be the first to report); one charged on two GPUs
 * is left undone, the others move on. */
static void disp_drain(disp *d, int s, int job)
{
    int gi = s / d->per, first = !d->drained[gi];
    d->drained[gi] = 1;
    for (int k = gi * d->per; k < (gi + 1) * d->per; k++) {
        int j = d->inflight[k];
        if (j >= 0 && (first || k == s)) { /* the reporting job, whatever drained it first */
            if (!d->charged[j])
                d->charged[j] = (short)(gi + 1);
            else if (d->charged[j] != gi + 1)
                d->twice[j] = 1;
        }
    }
    if (d->jobs->v[job].gpu >= 0)
        d->lost_pinned++; /* pinned to this GPU: nowhere else to go */
    else if (d->twice[job])
        d->breakers++; /* the second GPU this job drained: not moved again */
    else if (d->attempts_left-- > 0)
        d->queue[d->tail++] = job; /* the job goes to another GPU */
    d->inflight[s] = -1;
    if (d->twice[job])
        fprintf(stderr, "kgate: GPU %d failed its health check after job %s, the second GPU it drained: drained, "
                        "the job left undone\n",
                d->c->gpus[gi], d->jobs->v[job].id);
    else if (first)
        fprintf(stderr, "kgate: GPU %d failed its health check: drained, its job moved on\n", d->c->gpus[gi]);
}

/* One message from a supervisor; one out of turn gets it killed and its
 * GPU drained. */
static void disp_message(disp *d, const msg *m)
{
    if (m->slot < 0 || m->slot >= d->n_slots || d->pid[m->slot] <= 0 || d->bad[m->slot])
        return;
    int s = m->slot, gi = s / d->per;
    int ok = m->kind == M_READY ? m->job == -1 && d->inflight[s] < 0
                                : m->kind >= M_DONE && m->kind <= M_FATAL && m->job >= 0 && m->job < d->jobs->n &&
                                      m->job == d->inflight[s];
    if (!ok) { /* a supervisor out of step is not trusted with its GPU */
        fprintf(stderr, "kgate: batch: the supervisor of GPU %d sent a message out of turn (kind %d, job %d): "
                        "killed, its GPU drained\n",
                d->c->gpus[gi], m->kind, m->job);
        d->bad[s] = 1;
        kill(d->pid[s], SIGKILL);
        d->drained[gi] = 1;
        return;
    }
    if (m->kind == M_READY) {
        d->waiting[s] = 1;
        return;
    }
    if (m->kind == M_DRAIN && !d->stopping) {
        disp_drain(d, s, m->job);
        return;
    }
    d->inflight[s] = -1;
    if (m->kind == M_DONE) {
        d->o->n_done++;
        progress(d->o->n_done, d->n_todo, d->drained[gi]);
    } else if (m->kind == M_FATAL) {
        d->o->stopped++;
        d->o->fatal = 1;
    } else if (d->stopping) { /* a drain or a loss while stopping: the job is not moved */
        d->o->stopped++;
        d->drained[gi] = 1;
    } else { /* M_LOST: not the job's doing, it moves on uncharged */
        disp_requeue(d, m->job);
        d->drained[gi] = 1;
    }
}

/* A supervisor that died (wait status st): its job goes back to the queue once. */
static void disp_died(disp *d, int s, int st)
{
    int gi = s / d->per;
    d->pid[s] = -1;
    d->alive--;
    d->waiting[s] = 0;
    if (d->inflight[s] >= 0) {
        if (d->stopping)
            d->o->stopped++; /* cut short: not recorded, a rerun runs it */
        else
            disp_requeue(d, d->inflight[s]);
        if (!d->drained[gi] && !d->stopping)
            fprintf(stderr, "kgate: the supervisor of GPU %d died (%s): its job moved on\n", d->c->gpus[gi],
                    WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "exited");
        if (!d->stopping)
            d->drained[gi] = 1;
        d->inflight[s] = -1;
    }
    if (d->in[s][1] >= 0)
        close(d->in[s][1]);
    d->in[s][1] = -1;
    disp_gpu_gone(d, gi); /* the jobs pinned to a GPU that is gone */
}

/* Work handed out to the waiting slots; when none is left and none is in
 * flight, the idle are stopped, and the idle slots of a drained GPU. */
static void disp_hand_out(disp *d)
{
    int busy = 0;
    for (int s = 0; s < d->n_slots; s++)
        busy += d->inflight[s] >= 0;
    for (int s = 0; s < d->n_slots; s++) {
        int gi = s / d->per;
        if (!d->waiting[s] || d->pid[s] <= 0 || d->bad[s])
            continue;
        int job = -1, from = 0; /* 1: the pinned queue, 2: the shared one */
        if (d->drained[gi])
            job = -1;
        else if (d->phead[gi] < d->ptail[gi])
            job = d->pinned[(size_t)gi * (size_t)(d->n_todo + 1) + (size_t)d->phead[gi]++], from = 1;
        else if (d->head < d->tail)
            job = d->queue[d->head++], from = 2;
        else if (busy)
            continue; /* a job in flight may come back */
        if (write(d->in[s][1], &job, sizeof job) == sizeof job) {
            d->waiting[s] = 0;
            d->inflight[s] = job;
            busy += job >= 0;
        } else { /* EPIPE: it is dying, and comes back as died; the job stays queued */
            d->waiting[s] = 0;
            if (from == 1)
                d->phead[gi]--;
            else if (from == 2)
                d->head--;
        }
    }
}

/* One round: the stop's steps, the supervisors that died (noted first and
 * handled after every message they wrote before dying: a DRAIN's job must
 * not also come back as a dead supervisor's), the messages, and work handed
 * out. 1 when the supervisors are past waiting for. */
static int disp_round(disp *d)
{
    if (disp_stop(d))
        return 1;
    struct pollfd p = {d->status[0], POLLIN, 0};
    poll(&p, 1, 200);
    int died[MAX_SLOTS], dst[MAX_SLOTS], n_died = 0;
    for (int s = 0; s < d->n_slots; s++)
        if (d->pid[s] > 0 && waitpid(d->pid[s], &dst[n_died], WNOHANG) == d->pid[s])
            died[n_died++] = s;
    msg m;
    while (read(d->status[0], &m, sizeof m) == (ssize_t)sizeof m)
        disp_message(d, &m);
    for (int k = 0; k < n_died; k++)
        disp_died(d, died[k], dst[k]);
    if (!d->stopping)
        disp_hand_out(d);
    return 0;
}

/* The dispatcher: --jobs-per-gpu supervisors (slots) per GPU, jobs on
 * demand, drained GPUs' jobs requeued. drained[] is by GPU. A stop
 * (SIGINT, SIGTERM) or a supervisor's failure to write the results file is
 * passed to every supervisor (SIGTERM), which are waited for
 * KG_SUPERVISORS_STOP_S, then killed. Returns 0, or an exit code before
 * any job ran. */
static int dispatch(const cfg *c, const kg_batch_jobs *jobs, const int *todo, int n_todo, int fd, int *drained,
                    outcome *o)
{
    disp *d = calloc(1, sizeof *d);
    if (!d) {
        fprintf(stderr, "kgate: batch: malloc: out of memory\n");
        return KG_EXIT_ENV;
    }
    d->c = c, d->jobs = jobs, d->n_todo = n_todo, d->per = c->per_gpu, d->n_slots = c->n_gpus * c->per_gpu;
    d->drained = drained, d->o = o;
    memset(o, 0, sizeof *o);
    int rc = disp_init(d, todo);
    if (!rc) {
        disp_start(d, fd);
        progress(0, n_todo, 0);
        while (d->alive > 0 && !disp_round(d))
            ;
        close(d->status[0]);
        for (int s = 0; s < d->n_slots; s++)
            if (d->in[s][1] >= 0)
                close(d->in[s][1]);
        for (int s = 0; s < d->n_slots; s++) /* a killed supervisor's directory too */
            remove_dir(d->dirs[s]);
        o->lost = d->stopping ? d->breakers : d->tail - d->head + d->lost_pinned + d->breakers;
        if (d->stopping) {
            o->unrun = d->tail - d->head;
            for (int g = 0; g < c->n_gpus; g++)
                o->unrun += d->ptail[g] - d->phead[g];
        }
        progress(o->n_done, n_todo, 0);
    }
    free(d->queue);
    free(d->pinned);
    free(d->charged);
    free(d->twice);
    free(d->dirs);
    free(d);
    return rc;
}

/* One timed result of the batch, for the cross-GPU comparison. */
typedef struct timed {
    char key[400]; /* kernel|source|op|dtype|shape */
    int gpu;
    double t;
} timed;

static int by_key(const void *a, const void *b)
{
    const timed *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    if (x->gpu != y->gpu)
        return (x->gpu > y->gpu) - (x->gpu < y->gpu);
    return (x->t > y->t) - (x->t < y->t);
}

/* The same kernels judged on several GPUs: their medians must agree within
 * 1%; the ones that do not are named. A kernel judged more than once on one
 * GPU counts there with the median of its medians: run-to-run noise on one
 * GPU is not a difference between GPUs. */
static void cross_gpu(timed *v, long n)
{
    long groups = 0, agree = 0;
    if (n > 1) /* qsort of NULL, even of none, is undefined */
        qsort(v, (size_t)n, sizeof *v, by_key);
    for (long i = 0; i < n;) {
        long j = i;
        double lo = 0, hi = 0;
        int gpus = 0;
        while (j < n && strcmp(v[j].key, v[i].key) == 0) {
            long k = j; /* v[j..k) is one GPU's, sorted by time */
            while (k < n && v[k].gpu == v[j].gpu && strcmp(v[k].key, v[i].key) == 0)
                k++;
            long m = k - j;
            double med = m % 2 ? v[j + m / 2].t : 0.5 * (v[j + m / 2 - 1].t + v[j + m / 2].t);
            lo = gpus && lo < med ? lo : med;
            hi = gpus && hi > med ? hi : med;
            gpus++;
            j = k;
        }
        j--; /* the group's last */
        if (gpus > 1) {
            groups++;
            if (hi <= lo * 1.01)
                agree++;
            else
                printf("cross-GPU: %.200s: medians %.4g to %.4g s (%.1f%% apart) on %d GPUs: flagged\n", v[i].key,
                       lo, hi, 100 * (hi / lo - 1), gpus);
        }
        i = j + 1;
    }
    if (groups)
        printf("cross-GPU: %ld kernel(s) judged on several GPUs, %ld agree within 1%%, %ld flagged\n", groups, agree,
               groups - agree);
}

static const char *verdict_names[] = {"OK", "SLOW", "INCORRECT", "IMPOSSIBLE", "CRASH", "TIMEOUT", "SKIPPED"};

/* What the summary counts over the results file's lines. */
typedef struct tally {
    long counts[7], lines, errors, n_timed, cap;
    long lib_reused, lib_timed; /* results whose library times came from --lib-cache, or were timed */
    long shared;                /* results flagged shared-gpu: another process held a context on the GPU */
    timed *tv;
    /* where the jobs' wall time went, summed over the lines whose results say
     * (list/wall): the fork server's imports, the listing, the library jobs,
     * the kernels' workers, the kernels' waits for the GPU lock */
    long n_phased;
    double t_wall, t_warm, t_list, t_lib, t_kern, t_lock;
} tally;

static double sum_value(const cJSON *sums, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sums, name), "value");
    return cJSON_IsNumber(v) && v->valuedouble > 0 && v->valuedouble < 1e6 ? v->valuedouble : 0;
}

/* A line's share of the phases: its wall, its file's listing (the same in
 * every result: taken once) and each result's jobs. */
static void tally_phases(tally *y, const cJSON *line)
{
    const cJSON *wall = cJSON_GetObjectItemCaseSensitive(line, "wall_s"), *r;
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(line, "check"), "results");
    const cJSON *first = cJSON_GetArrayItem(results, 0);
    const cJSON *s0 = cJSON_GetObjectItemCaseSensitive(first, "summaries");
    if (!cJSON_IsNumber(wall) || !(wall->valuedouble > 0) || !(sum_value(s0, "list/wall") > 0))
        return;
    y->n_phased++;
    y->t_wall += wall->valuedouble;
    y->t_warm += sum_value(s0, "list/warm");
    y->t_list += sum_value(s0, "list/wall");
    cJSON_ArrayForEach(r, results)
    {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(r, "summaries");
        y->t_lib += sum_value(s, "lib/job/wall");
        y->t_kern += sum_value(s, "job/wall");
        y->t_lock += sum_value(s, "job/gpu_wait");
    }
}

static int tally_line(void *ud, const char *line)
{
    tally *y = ud;
    cJSON *o = cJSON_Parse(line), *r;
    if (!o)
        return 0;
    y->lines++;
    y->errors += cJSON_GetObjectItemCaseSensitive(o, "error") != NULL;
    tally_phases(y, o);
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(o, "gpu");
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "check"), "results"))
    {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "verdict");
        for (int k = 0; k < 7; k++)
            if (cJSON_IsString(v) && strcmp(v->valuestring, verdict_names[k]) == 0)
                y->counts[k]++;
        const cJSON *sums = cJSON_GetObjectItemCaseSensitive(r, "summaries"), *fl;
        int shared = 0;
        cJSON_ArrayForEach(fl, cJSON_GetObjectItemCaseSensitive(r, "flags"))
            shared |= cJSON_IsString(fl) && strcmp(fl->valuestring, "shared-gpu") == 0;
        y->shared += shared;
        y->lib_reused += cJSON_GetObjectItemCaseSensitive(sums, "lib/cache/age") != NULL;
        y->lib_timed += cJSON_GetObjectItemCaseSensitive(sums, "lib/job/wall") != NULL;
        double t = sum_value(sums, "time/gpu/median");
        if (!(t > 0) || !cJSON_IsNumber(gpu) || shared)
            continue; /* a time measured beside another process does not compare across GPUs */
        if (y->n_timed == y->cap) {
            long cap = y->cap ? 2 * y->cap : 256;
            timed *nv = realloc(y->tv, sizeof *nv * (size_t)cap);
            if (!nv)
                break;
            y->tv = nv;
            y->cap = cap;
        }
        timed *x = &y->tv[y->n_timed++];
        const char *fields[] = {"kernel", "source", "op", "dtype", "shape"};
        size_t u = 0;
        x->key[0] = '\0';
        for (int k = 0; k < 5; k++) {
            const cJSON *f = cJSON_GetObjectItemCaseSensitive(r, fields[k]);
            kg_append(x->key, sizeof x->key, &u, "%s%s", k ? "|" : "", cJSON_IsString(f) ? f->valuestring : "");
        }
        x->gpu = (int)gpu->valuedouble;
        x->t = t;
    }
    cJSON_Delete(o);
    return 0;
}

/* Counts the verdicts of the results file's lines for the summary. */
static void summarize(const char *path, int ran, int skipped, int lost, double wall_s, const cfg *c,
                      const int *drained)
{
    tally y;
    int torn = 0;
    kg_err err = {0, ""};
    memset(&y, 0, sizeof y);
    if (kg_results_each(path, tally_line, &y, &torn, &err))
        fprintf(stderr, "kgate: %s\n", err.msg);
    printf("batch: %d job(s) run, %d already done, %ld in %s", ran, skipped, y.lines, path);
    if (lost)
        printf(", %d left undone (no GPU left to take them, or a job that drained two)", lost);
    printf("\nverdicts:");
    for (int k = 0; k < 7; k++)
        printf(" %s %ld", verdict_names[k], y.counts[k]);
    printf("; jobs that could not be judged: %ld\n", y.errors);
    if (ran > 0 && wall_s > 0)
        printf("time: %d job(s) in %.1f s on %d GPU(s): %.1f verdicts a minute\n", ran, wall_s, c->n_gpus,
               60.0 * ran / wall_s);
    if (y.n_phased) {
        double n = (double)y.n_phased, w = y.t_wall;
        double rest = w - y.t_warm - y.t_list - y.t_lib - y.t_kern - y.t_lock;
        const struct {
            const char *what;
            double t;
        } part[] = {{"the Python fork server's imports", y.t_warm}, {"listing", y.t_list},
                    {"library jobs", y.t_lib},                      {"kernels' workers", y.t_kern},
                    {"waiting for the GPU lock", y.t_lock},        {"the rest", rest > 0 ? rest : 0}};
        printf("job time over the file's %ld job(s): %.2f s a job:", y.n_phased, w / n);
        for (size_t k = 0; k < sizeof part / sizeof part[0]; k++)
            printf("%s %s %.2f s (%.0f%%)", k ? "," : "", part[k].what, part[k].t / n, 100 * part[k].t / w);
        printf("\n");
    }
    if (y.lib_reused)
        printf("library times: reused from --lib-cache by %ld result(s) of the file, timed by %ld\n", y.lib_reused,
               y.lib_timed);
    if (y.shared)
        printf("shared GPUs: %ld result(s) of the file measured while another process held a context on their "
               "GPU (flag shared-gpu)\n",
               y.shared);
    cross_gpu(y.tv, y.n_timed);
    free(y.tv);
    for (int s = 0; s < c->n_gpus; s++)
        if (drained[s])
            printf("GPU %d: drained\n", c->gpus[s]);
}

/* Each GPU's UUID, for the jobs' view of it (pick_view) and its lock;
 * asked before the supervisors fork, with no CUDA context made (fake GPUs,
 * KG_BATCH_GPUS: GPU-fake-g). */
static void gpu_uuids(cfg *c)
{
    const char *f = getenv("KG_BATCH_GPUS");
    int fake = f && *f;
    for (int s = 0; s < c->n_gpus; s++) {
        kg_device_info d;
        kg_err e = {0, ""};
        if (fake)
            snprintf(c->uuid[s], sizeof c->uuid[s], "GPU-fake-%d", c->gpus[s]);
        else if (kg_device_query(c->gpus[s], &d, &e) == 0)
            snprintf(c->uuid[s], sizeof c->uuid[s], "%s", d.uuid);
        else
            fprintf(stderr, "kgate: batch: GPU %d: its UUID could not be read (%s): its jobs see every GPU\n",
                    c->gpus[s], e.msg);
    }
}

static int parse_gpus(cfg *c, const char *spec)
{
    int n = 0;
    const char *fake = getenv("KG_BATCH_GPUS");
    kg_err e = {0, ""};
    if (fake && *fake) {
        if ((n = atoi(fake)) <= 0)
            kg_err_set(&e, KG_EXIT_ENV, "no CUDA GPU (KG_BATCH_GPUS=%s)", fake);
    } else {
        kg_device_count(&n, &e); /* says why (kg_device_absent) */
    }
    if (e.code) {
        fprintf(stderr, "kgate: batch: %s\n", e.msg);
        return KG_EXIT_ENV;
    }
    c->n_gpus = 0;
    if (!spec || strcmp(spec, "all") == 0) {
        for (int g = 0; g < n && g < MAX_GPUS; g++)
            c->gpus[c->n_gpus++] = g;
        return 0;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *e;
        long g = strtol(t, &e, 10);
        if (*e || g < 0 || t == e) {
            fprintf(stderr, "kgate: --gpus %s: '%s' is not a GPU index\n", spec, t);
            return KG_EXIT_USAGE;
        }
        if (g >= n) {
            fprintf(stderr, "kgate: --gpus %s: GPU %ld does not exist (%d GPU%s here)\n", spec, g, n, n == 1 ? "" : "s");
            return KG_EXIT_USAGE;
        }
        for (int k = 0; k < c->n_gpus; k++)
            if (c->gpus[k] == g) {
                fprintf(stderr, "kgate: --gpus %s: GPU %ld named twice\n", spec, g);
                return KG_EXIT_USAGE;
            }
        if (c->n_gpus == MAX_GPUS)
            return usage("--gpus: too many");
        c->gpus[c->n_gpus++] = (int)g;
    }
    return 0;
}

static void print_bad(void *ud, const char *m)
{
    (void)ud;
    fprintf(stderr, "kgate: %s (line skipped)\n", m);
}

static int merge_cmd(int argc, char **argv)
{
    const char *out = NULL;
    const char *in[1024];
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            out = argv[++i];
        else if (argv[i][0] == '-')
            return usage("batch --merge: usage: kgate batch --merge -o OUT.jsonl IN.jsonl...");
        else if (n < 1024)
            in[n++] = argv[i];
    }
    if (!out || n == 0)
        return usage("batch --merge: usage: kgate batch --merge -o OUT.jsonl IN.jsonl...");
    long kept, dups;
    kg_err err = {0, ""};
    if (kg_output_path_check("-o", out, in, n, &err) || kg_results_merge(out, in, n, &kept, &dups, &err)) {
        fprintf(stderr, "kgate: %s\n", err.msg);
        return err.code;
    }
    printf("merged %d file(s) into %s: %ld job(s), %ld duplicate line(s) dropped\n", n, out, kept, dups);
    return 0;
}

/* `kgate __health N`: allocate, write, synchronize on device N, holding its
 * GPU lock so that no job of another supervisor of that GPU is timing
 * then; prints the UUID of the GPU it checked (the batch's view check). A
 * GPU whose lock stays held KG_HEALTH_WAIT_S is in use, so not known dead,
 * nor known healthy: said, its UUID printed, and exit KG_HEALTH_UNKNOWN
 * (the supervisor neither drains it nor counts it healthy: it records the
 * job's result as it is and says so once). */
static int health_probe(int g, kg_err *err)
{
    void *p = NULL;
    KG_CUDA(cudaSetDevice(g));
    KG_CUDA(cudaMalloc(&p, 1 << 20));
    KG_CUDA(cudaMemset(p, 0, 1 << 20));
    KG_CUDA(cudaDeviceSynchronize());
    KG_CUDA(cudaFree(p)); /* after a failure, cudaDeviceReset frees it */
out:
    return err->code;
}

int kg_cmd_health(int argc, char **argv)
{
    int g = argc > 1 ? atoi(argv[1]) : 0;
    kg_device_info d;
    kg_gpu_lock l;
    kg_err err = {0, ""}, lerr = {0, ""};
    if (kg_device_query(g, &d, &err)) {
        fprintf(stderr, "kgate: GPU %d: %s\n", g, err.msg);
        return KG_EXIT_ENV;
    }
    int lrc = kg_gpu_lock_take(d.uuid, KG_HEALTH_WAIT_S, &l, &lerr);
    if (lrc == KG_EXIT_ENV) {
        fprintf(stderr, "kgate: %s: its health not checked\n", lerr.msg);
        printf("%s\n", d.uuid);
        return KG_HEALTH_UNKNOWN;
    }
    if (lrc == KG_EXIT_STOPPED) {
        fprintf(stderr, "kgate: %s\n", lerr.msg);
        return KG_EXIT_STOPPED;
    }
    if (lrc) { /* a lock file that cannot be used: checked without it, as a check would go on */
        fprintf(stderr, "kgate: %s (checked without the lock)\n", lerr.msg);
        if (kg_gpu_lock_required())
            return KG_EXIT_IO;
    }
    int bad = health_probe(g, &err) != 0;
    if (bad)
        fprintf(stderr, "kgate: GPU %d: %s\n", g, err.msg);
    cudaError_t reset = cudaDeviceReset(); /* the context gone before the lock is */
    if (reset != cudaSuccess && !bad) {
        fprintf(stderr, "kgate: GPU %d: cudaDeviceReset failed at %s:%d: %s\n", g, __FILE__, __LINE__,
                cudaGetErrorString(reset));
        bad = 1;
    }
    kg_gpu_lock_drop(&l);
    if (bad)
        return KG_EXIT_ENV;
    printf("%s\n", d.uuid);
    return 0;
}

/* SIGINT and SIGTERM stop the batch (exit 7): the dispatcher passes SIGTERM
 * to its supervisors, each stops its job as at --timeout, and the summary of
 * what was recorded is printed. The supervisors inherit the handler; a
 * second signal only records too (a stop of the process group, then the
 * batch's SIGTERM, reach each supervisor). SIGPIPE (a write to a supervisor
 * that just died) and SIGXFSZ (a results file past its size limit) become
 * errors of the call. */
static void catch_stops(void)
{
    kg_catch_stop_signals(0);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);
}

/* kgate batch's arguments into c (gpus: --gpus's text). 0, or an exit code
 * (-1: --help was printed). */
static int batch_args(int argc, char **argv, cfg *c, const char **gpus)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(kg_usage("batch"), stdout);
            return -1;
        }
        if (i + 1 == argc && (strcmp(a, "-o") == 0 || strcmp(a, "--gpus") == 0 || strcmp(a, "--done") == 0 ||
                              strcmp(a, "--shard") == 0 || strcmp(a, "--timeout") == 0 ||
                              strcmp(a, "--jobs-per-gpu") == 0)) {
            fprintf(stderr, "kgate: batch: option %s needs a value\n", a);
            return KG_EXIT_USAGE;
        }
        if (strcmp(a, "--") == 0) {
            c->check = argv + i + 1;
            c->n_check = argc - i - 1;
            break;
        } else if (strcmp(a, "-o") == 0 && i + 1 < argc) {
            c->out = argv[++i];
        } else if (strcmp(a, "--gpus") == 0 && i + 1 < argc) {
            *gpus = argv[++i];
        } else if (strcmp(a, "--done") == 0 && i + 1 < argc) {
            if (c->n_done == MAX_DONE)
                return usage("--done: at most 64 files (merge them first: kgate batch --merge)");
            c->done[c->n_done++] = argv[++i];
        } else if (strcmp(a, "--shard") == 0 && i + 1 < argc) {
            c->shard = argv[++i];
        } else if (strcmp(a, "--timeout") == 0 && i + 1 < argc) {
            char *e;
            c->timeout_s = strtod(argv[++i], &e);
            if (*e || !(c->timeout_s > 0) || c->timeout_s > 1e6)
                return usage("--timeout: seconds, a positive number");
        } else if (strcmp(a, "--jobs-per-gpu") == 0 && i + 1 < argc) {
            char *e;
            long v = strtol(argv[++i], &e, 10);
            if (*e || argv[i] == e || v < 1 || v > MAX_PER_GPU)
                return usage("--jobs-per-gpu: a whole number from 1 to 4");
            c->per_gpu = (int)v;
        } else if (a[0] == '-') {
            fprintf(stderr, "kgate: batch: unknown option '%s' (kgate help batch)\n", a);
            return KG_EXIT_USAGE;
        } else if (!c->input) {
            c->input = a;
        } else {
            return usage("batch: one manifest or directory");
        }
    }
    if (!c->input || !c->out)
        return usage("batch: usage: kgate batch MANIFEST.jsonl|DIR -o RESULTS.jsonl [--gpus all|0,1] "
                     "[--jobs-per-gpu N] [--shard I/N] [--done R.jsonl]... [--timeout S] [-- CHECK OPTIONS]");
    return 0;
}

/* Several jobs a GPU are safe only while their workers take turns: the GPU
 * lock must be on, and each GPU's lock nameable. Sets KGATE_GPU_LOCK=require
 * for the jobs, so that one whose lock file turns unusable midway fails
 * rather than running beside the GPU's other jobs. */
static int batch_lock_needed(const cfg *c, kg_err *err)
{
    char lock[1200];
    if (kg_gpu_lock_off())
        return kg_err_set(err, KG_EXIT_USAGE, "--jobs-per-gpu %d needs the GPU lock, which KGATE_GPU_LOCK=0 turns off",
                          c->per_gpu);
    for (int g = 0; g < c->n_gpus && !err->code; g++)
        if (!c->uuid[g][0])
            kg_err_set(err, KG_EXIT_ENV, "--jobs-per-gpu %d: GPU %d's UUID, which names its lock, is unknown",
                       c->per_gpu, c->gpus[g]);
        else
            kg_gpu_lock_path(c->uuid[g], lock, sizeof lock, err);
    if (!err->code)
        setenv("KGATE_GPU_LOCK", "require", 1);
    return err->code;
}

/* The jobs --done's files and the results file already hold (done), and the
 * results file opened for appending (fd; torn, cut: what kg_results_open
 * found of a killed run). 0, or an exit code said on stderr. */
static int batch_done(const cfg *c, kg_idset *done, int *fd, int *torn, long *cut)
{
    kg_err err = {0, ""};
    /* --done: jobs another run finished (a lost rank's file, the merge of a
     * batch run with another rank count) are not run again here */
    for (int k = 0; k < c->n_done; k++) {
        int t2 = 0;
        if (kg_results_done(c->done[k], done, &t2, &err)) {
            fprintf(stderr, "kgate: --done %s\n", err.msg);
            return err.code;
        }
        if (t2)
            fprintf(stderr, "kgate: --done %s: %d torn or unreadable line(s) ignored\n", c->done[k], t2);
    }
    if (kg_results_open(c->results, fd, done, torn, cut, &err)) {
        fprintf(stderr, "kgate: %s\n", err.msg);
        return err.code;
    }
    return 0;
}

/* The jobs this rank runs (into todo): its shard's, not done, on one of the
 * batch's GPUs when pinned, with a readable candidate (the others said in
 * one line each and counted in *missing). Returns how many. */
static int batch_todo(const cfg *c, const kg_batch_jobs *jobs, int rank, int size, const kg_idset *done, int *todo,
                      int *skipped, int *missing)
{
    int n_todo = 0;
    for (int i = 0; todo && i < jobs->n; i++) {
        if (!kg_shard_mine(i, rank, size))
            continue;
        if (kg_idset_has(done, jobs->v[i].id)) {
            (*skipped)++;
            continue;
        }
        int pinned_ok = jobs->v[i].gpu < 0;
        for (int k = 0; k < c->n_gpus && !pinned_ok; k++)
            pinned_ok = c->gpus[k] == jobs->v[i].gpu;
        if (!pinned_ok) {
            fprintf(stderr, "kgate: %s:%d: GPU %d is not one of this batch's (--gpus) (job skipped)\n", c->input,
                    jobs->v[i].line, jobs->v[i].gpu);
            (*missing)++;
            continue;
        }
        if (access(jobs->v[i].candidate, R_OK) != 0) { /* said now, in one line; the batch goes on */
            fprintf(stderr, "kgate: %s:%d: %s: no such readable candidate (job skipped)\n", c->input,
                    jobs->v[i].line, jobs->v[i].candidate);
            (*missing)++;
            continue;
        }
        todo[n_todo++] = i;
    }
    return n_todo;
}

/* The supervisors' turns at the results file (a robust mutex, so that one
 * that dies holding it does not stop the others), then the dispatcher.
 * 0, or an exit code before any job ran. */
static int batch_run(cfg *c, const kg_batch_jobs *jobs, const int *todo, int n_todo, int fd, int *drained,
                     outcome *o)
{
    int drc;
    pthread_mutexattr_t ma;
    catch_stops();
    c->turn = mmap(NULL, sizeof *c->turn, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (c->turn == MAP_FAILED) {
        fprintf(stderr, "kgate: batch: mmap: %s\n", strerror(errno));
        return KG_EXIT_ENV;
    }
    if (pthread_mutexattr_init(&ma) || pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED) ||
        pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST) || pthread_mutex_init(&c->turn->m, &ma)) {
        fprintf(stderr, "kgate: batch: pthread_mutex_init: a process-shared robust mutex is not available\n");
        drc = KG_EXIT_ENV;
    } else {
        drc = dispatch(c, jobs, todo, n_todo, fd, drained, o);
    }
    munmap(c->turn, sizeof *c->turn);
    return drc;
}

/* The run's end: the summary, a stop said, and the exit code. */
static int batch_end(const cfg *c, const outcome *o, int skipped, int missing, int bad_lines, double t0,
                     const int *drained)
{
    summarize(c->results, o->n_done, skipped, o->lost, kg_mono() - t0, c, drained);
    int sig = kg_stop_requested();
    if (o->fatal || sig)
        printf("batch: stopped (%s): %d job(s) cut short and not recorded, %d not started: the same command "
               "again runs them\n",
               o->fatal ? "the results file could not be written" : strsignal(sig), o->stopped, o->unrun);
    if (o->fatal)
        return KG_EXIT_IO;
    if (sig)
        return KG_EXIT_STOPPED;
    if (o->lost)
        return KG_EXIT_ENV;
    return bad_lines || missing ? KG_EXIT_USAGE : 0;
}

/* The results file this rank writes (each rank its own; `kgate batch
 * --merge` joins them), checked against the inputs. 0, or an exit code. */
static int batch_results_path(cfg *c, int rank, int size)
{
    kg_err err = {0, ""};
    if (size > 1)
        snprintf(c->results, sizeof c->results, "%s.rank-%05d-of-%05d", c->out, rank, size);
    else
        snprintf(c->results, sizeof c->results, "%s", c->out);
    const char *inputs[MAX_DONE + 1] = {c->input};
    memcpy(inputs + 1, c->done, sizeof(char *) * (size_t)c->n_done);
    if (kg_output_path_check("-o", c->results, inputs, 1 + c->n_done, &err)) {
        fprintf(stderr, "kgate: %s\n", err.msg);
        return err.code;
    }
    return 0;
}

int kg_cmd_batch(int argc, char **argv)
{
    cfg c;
    memset(&c, 0, sizeof c);
    c.timeout_s = 600;
    c.per_gpu = 1;
    const char *gpus = NULL, *src;
    if (argc > 1 && strcmp(argv[1], "--merge") == 0)
        return merge_cmd(argc - 2, argv + 2);
    int rc = batch_args(argc, argv, &c, &gpus), rank, size;
    if (rc)
        return rc < 0 ? 0 : rc;
    kg_self_exe(c.exe, sizeof c.exe);
    kg_err err = {0, ""};
    if (kg_shard_get(c.shard, &rank, &size, &src, &err)) {
        fprintf(stderr, "kgate: %s\n", err.msg);
        return err.code;
    }
    if ((rc = batch_results_path(&c, rank, size)))
        return rc;
    kg_batch_jobs jobs = {0};
    struct stat st;
    rc = stat(c.input, &st) == 0 && S_ISDIR(st.st_mode) ? kg_manifest_dir(c.input, &jobs, &err)
                                                          : kg_manifest_read(c.input, &jobs, print_bad, NULL, &err);
    if (rc)
        fprintf(stderr, "kgate: %s\n", err.msg);
    else if (!(rc = parse_gpus(&c, gpus))) {
        gpu_uuids(&c);
        if (c.per_gpu > 1 && (rc = batch_lock_needed(&c, &err)))
            fprintf(stderr, "kgate: %s\n", err.msg);
    }
    int fd = -1, torn = 0, n_todo = 0, skipped = 0, missing = 0, drained[MAX_GPUS] = {0};
    long cut = 0;
    kg_idset done = {0};
    int *todo = NULL;
    outcome o = {0};
    double t0 = kg_mono();
    if (!rc && !(rc = batch_done(&c, &done, &fd, &torn, &cut))) {
        todo = malloc(sizeof(int) * (size_t)(jobs.n ? jobs.n : 1));
        n_todo = batch_todo(&c, &jobs, rank, size, &done, todo, &skipped, &missing);
        if (cut)
            fprintf(stderr, "kgate: batch: %s: its torn last line (%ld bytes, a killed run's) cut off: its job runs "
                            "again\n",
                    c.results, cut);
        if (size > 1 || torn)
            fprintf(stderr, "kgate: batch: rank %d of %d (%s): %d job(s) to run, %d done before%s\n", rank, size,
                    src, n_todo, skipped, torn ? "; a torn line of a killed run ignored" : "");
        t0 = kg_mono();
        if (n_todo)
            rc = batch_run(&c, &jobs, todo, n_todo, fd, drained, &o); /* nonzero: nothing ran */
        if (!rc)
            rc = batch_end(&c, &o, skipped, missing, jobs.n_bad, t0, drained);
    }
    if (fd >= 0)
        close(fd);
    free(todo);
    kg_idset_free(&done);
    kg_batch_jobs_free(&jobs);
    return rc;
}
