/* The dispatcher of `kgate batch`, in the batch's own process: a
 * supervisor process forked per GPU slot, jobs handed to them on demand,
 * the jobs of a drained GPU moved on, and a stop passed to every
 * supervisor. */
#include "batch_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_SLOTS (MAX_GPUS * MAX_PER_GPU)
/* the batch's wait for its supervisors to stop: a job's grace and kill, its leftovers' reaping */
#define KG_SUPERVISORS_STOP_S (KG_STOP_GRACE_S + KG_BATCH_KILL_WAIT_S + KG_REAP_WAIT_S + 2 * KG_SLOT_END_S + 5.0) /* + the warm slot's end */

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
    const kg_batch_cfg *c;
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
    kg_batch_outcome *o;
} disp;

/* The queues filled, the slots' directories made. 0, or an exit code. */
static int disp_init(disp *d, const int *todo)
{
    const kg_batch_cfg *c = d->c;
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
            kg_batch_supervise(d->c, d->jobs, s, d->in[s][0], d->status[1], fd, d->dirs[s], batch);
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
static void disp_message(disp *d, const kg_batch_msg *m)
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
    kg_batch_msg m;
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
int kg_batch_dispatch(const kg_batch_cfg *c, const kg_batch_jobs *jobs, const int *todo, int n_todo, int fd,
                      int *drained, kg_batch_outcome *o)
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
            kg_batch_remove_dir(d->dirs[s]);
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
