/* A job's process in `kgate batch`, or a health check's: run under a time
 * limit with its output in a log, stopped after a grace, what it left
 * reaped (kg_batch_run_timed); and the warm slot, which forks a Python
 * job's process ahead with its fork server started. */
#include "batch_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../base/text.h"
#include "../supervise/job.h"
#include "../supervise/zygote.h"

const char *kg_batch_runner(const kg_batch_cfg *c)
{
    const char *r = getenv("KG_BATCH_RUNNER");
    return r && *r ? r : c->exe;
}

static void nap(void)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

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
        if (p[0] != 3 && dup2(p[0], 3) != 3)
            _exit(127);
        kg_close_from(4); /* none of its supervisor's: a kgate serve client's socket held here never ends */
        /* nor its standard input and output (kgate serve --stdio: the client's
         * requests and answers): whatever it or its fork server prints goes
         * to stderr, until its job's log takes both */
        int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (nul < 0 || dup2(nul, 0) != 0 || dup2(2, 1) != 1)
            _exit(127);
        if (nul > 2)
            close(nul);
        slot_main(3, exe, cvd);
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

void kg_batch_slot_ahead(const kg_batch_cfg *c, const char *cvd)
{
    if (next_slot.pid <= 0 && kg_batch_zygote_wanted(c))
        slot_spawn(kg_batch_runner(c), cvd);
}

/* Ends the slot: it reads no job, stops its fork server and exits; killed
 * where it does not within KG_SLOT_END_S, or at once when the batch is
 * asked to stop (its fork server dies with it: PR_SET_PDEATHSIG). */
void kg_batch_slot_drop(void)
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
        kg_batch_slot_drop();
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
        kg_batch_slot_drop();
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
 * slot, and a slot for the next job starts beside it). w (or NULL): its
 * tick is called while the run runs; RUN_CANCELLED when it ended it. */
int kg_batch_run_timed(char *const argv[], const char *log, double timeout_s, const char *cvd, int warm,
                       kg_batch_watch *w, kg_err *err)
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
        kg_batch_slot_drop();
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
        int cancel = w && w->tick(w->ud, w->why, sizeof w->why);
        if (kg_stop_requested() || kg_mono() > end || cancel) {
            /* asked to stop first: kgate check kills its worker, waits for
             * it to be gone and lets the GPU's lock go only then (exit 7);
             * one that does not within a grace is killed, its workers dying
             * with it (PR_SET_PDEATHSIG); they and anything else it left
             * come here and are reaped before the next job */
            rc = kg_stop_requested() ? RUN_STOPPED : cancel ? RUN_CANCELLED : 124;
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

/* kgate check's own lines ("kgate: ...") from a job's log, each cleaned
 * to one printable line of at most KG_BATCH_NOTE_MAX bytes, KG_BATCH_NOTES
 * at most, from its first KG_BATCH_LOG_READ bytes: what a job said without
 * failing (a library measurement not kept, a shape skipped), for a client
 * that never sees its stderr. The last is left out when it is the job's
 * error (said once, as the error). A JSON array, or NULL for none. */
cJSON *kg_batch_notes(const char *path, const char *error)
{
    FILE *f = fopen(path, "r");
    cJSON *notes = f ? cJSON_CreateArray() : NULL;
    char line[1024], buf[KG_BATCH_NOTE_MAX];
    long read = 0;
    int n = 0;
    while (notes && n < KG_BATCH_NOTES && read < KG_BATCH_LOG_READ && fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        read += (long)len;
        if (strncmp(line, "kgate: ", 7) != 0 || (len == sizeof line - 1 && line[len - 1] != '\n'))
            continue; /* not check's, or a line over 1 KiB (not one of its messages) */
        line[strcspn(line, "\n")] = '\0';
        kg_text_clean(buf, sizeof buf, line + 7);
        if (buf[0] && cJSON_AddItemToArray(notes, cJSON_CreateString(buf)))
            n++;
    }
    if (f)
        fclose(f);
    const cJSON *last = n ? cJSON_GetArrayItem(notes, n - 1) : NULL;
    if (last && error && strncmp(error, "kgate: ", 7) == 0 &&
        strncmp(error + 7, last->valuestring, strlen(last->valuestring)) == 0)
        cJSON_DeleteItemFromArray(notes, --n);
    if (n == 0) {
        cJSON_Delete(notes);
        return NULL;
    }
    return notes;
}

/* The last non-empty line of a file, for a job's error. */
void kg_batch_last_line(const char *path, char *buf, size_t size)
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
