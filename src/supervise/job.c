/* Worker jobs: the Python fork server, and a worker's events turned into a
 * result, library times or a kernel table (one process's run is spawn.c's).
 * The rules for what a worker may say are in protocol/proto.h. */
#include "job.h"

#include "../diagnose/diag_json.h"
#include "../catalog/plugin_check.h"
#include "../judge/worker_end.h"
#include "sandbox.h"
#include "spawn.h"
#include "zygote.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static kg_zygote *py_zygote; /* the Python workers' fork server, once started */

int kg_worker_exits_normally(int argc, char *const argv[])
{
#ifdef KG_SANITIZED
    (void)argc;
    (void)argv;
    return 1;
#else
    for (int i = 0; i < argc; i++)
        if (argv[i] && strcmp(argv[i], "--under-tool") == 0)
            return 1;
    return getenv("CUDA_INJECTION64_PATH") != NULL;
#endif
}

void kg_job_watch(kg_job_tick fn, void *ud, double period_s) { kg_spawn_watch(fn, ud, period_s); }

/* A worker run by spawn.c, the fork server spared when orphans are reaped. */
static int spawn_worker(kg_zygote *z, int sandbox, const char *exe, char *const argv[], int fd_index,
                        const char *input, double timeout_s, kg_line_fn on_line, void *ud, kg_child *st,
                        kg_err *err)
{
    kg_spawn_req q = {z, sandbox, exe, argv, fd_index, input, timeout_s, on_line, ud, kg_zygote_pid(py_zygote)};
    return kg_spawn_run(&q, st, err);
}

int kg_spawn(const char *exe, char *const argv[], int fd_index, const char *input, double timeout_s,
             kg_line_fn on_line, void *ud, kg_child *st, kg_err *err)
{
    return spawn_worker(NULL, 0, exe, argv, fd_index, input, timeout_s, on_line, ud, st, err);
}

typedef struct first_line {
    char *buf;
    size_t size;
    int got;
} first_line;

static int keep_first_line(void *ud, const char *line)
{
    first_line *f = ud;
    if (!f->got++)
        snprintf(f->buf, f->size, "%s", line);
    return 0;
}

int kg_python_package_version(const char *python, const char *package, char *buf, size_t size)
{
    static const char prog[] = "import importlib.metadata as m, os, sys\n"
                               "try:\n    v = m.version(sys.argv[2])\n"
                               "except Exception:\n    v = ''\n"
                               "os.write(int(sys.argv[1]), (v + '\\n').encode())\n";
    char *argv[] = {(char *)python, "-c", (char *)prog, "-1", (char *)package, NULL};
    char line[128] = "";
    first_line f = {line, sizeof line, 0};
    kg_child st;
    kg_err e = {0, ""};
    buf[0] = '\0';
    if (kg_spawn(python, argv, 3, NULL, 10, keep_first_line, &f, &st, &e) || !st.exited || st.code != 0)
        return -1;
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    if (n == 0 || n >= 64 || n >= size || strspn(line, "0123456789abcdefghijklmnopqrstuvwxyz"
                                                      "ABCDEFGHIJKLMNOPQRSTUVWXYZ.+_-") != n)
        return -1;
    memcpy(buf, line, n + 1);
    return 0;
}

/* The interpreter and PYTHONPATH the fork server started with, and whether
 * it was handed over (kg_job_take_zygote) rather than started here. */
static char started_python[PATH_MAX], started_path[4096];
static int handed;

int kg_job_take_zygote(void)
{
    const char *h = getenv("KGATE_ZYGOTE_HANDED"), *py = getenv("KGATE_ZYGOTE_PYTHON"),
               *pp = getenv("KGATE_ZYGOTE_PYTHONPATH");
    long fd = -1, pid = 0;
    char tail = 0;
    int ok = h && py && pp && sscanf(h, "%ld:%ld%c", &fd, &pid, &tail) == 2 && fd > 2 && fd < 65536 && pid > 1;
    char python[PATH_MAX], path[4096];
    snprintf(python, sizeof python, "%s", ok ? py : "");
    snprintf(path, sizeof path, "%s", ok ? pp : "");
    /* none of the three reaches a worker, whatever becomes of them */
    unsetenv("KGATE_ZYGOTE_HANDED");
    unsetenv("KGATE_ZYGOTE_PYTHON");
    unsetenv("KGATE_ZYGOTE_PYTHONPATH");
    kg_zygote *z;
    kg_err e = {0, ""};
    if (!ok || kg_zygote_adopt((int)fd, (pid_t)pid, &z, &e))
        return -1;
    if (py_zygote) { /* one of this process's own already: the one handed over ends */
        kg_zygote_stop(z);
        return -1;
    }
    py_zygote = z;
    handed = 1;
    snprintf(started_python, sizeof started_python, "%s", python);
    snprintf(started_path, sizeof started_path, "%s", path);
    return 0;
}

/* The fork server for this Python job, started at the first one (or taken
 * over from kgate batch); NULL where it is off (KGATE_ZYGOTE=0), cannot
 * serve the job (--sandbox, or another interpreter or PYTHONPATH than it
 * started with) or has failed. Jobs under a wrapper (--memcheck) never ask
 * for it. */
static kg_zygote *python_zygote(const char *python, int sandbox)
{
    static int failed;
    const char *off = getenv("KGATE_ZYGOTE"), *pp = getenv("PYTHONPATH");
    if (sandbox || failed || (off && strcmp(off, "0") == 0))
        return NULL;
    if (py_zygote && kg_zygote_pid(py_zygote) == 0) {
        kg_zygote_stop(py_zygote);
        py_zygote = NULL;
        if (!handed) { /* it failed: exec from now on */
            failed = 1;
            return NULL;
        }
        handed = 0; /* the one handed over failed: start one here */
    }
    int same = strcmp(started_python, python) == 0 && strcmp(started_path, pp ? pp : "") == 0;
    if (py_zygote && handed && !same) { /* handed over for another interpreter or path: start one here */
        kg_zygote_stop(py_zygote);
        py_zygote = NULL;
        handed = 0;
    }
    if (!py_zygote) {
        kg_err e = {0, ""};
        if (kg_zygote_start(python, &py_zygote, &e)) {
            failed = 1;
            return NULL;
        }
        snprintf(started_python, sizeof started_python, "%s", python);
        snprintf(started_path, sizeof started_path, "%s", pp ? pp : "");
        same = 1;
    }
    return same ? py_zygote : NULL;
}

void kg_job_shutdown(void)
{
    kg_zygote_stop(py_zygote);
    py_zygote = NULL;
    handed = 0;
}

/* ------------------------------------------------------------- job state */

typedef struct job_state {
    const kg_job *job;
    kg_result *r;
    kg_libref *lib;
    kg_table_entry *table;
    int n_table;
    kg_err fatal;
    char violation[512];
    int incorrect, crashed, done, hello;
    int unsupported; /* the done event said the kernel does not take the job's shape */
    int timed;       /* the kernel's timing event came (once) */
    double t_start, hello_s; /* spawn, and seconds from it to the hello */
    char crash[1024];
    char seen[KG_MAX_SUMMARIES][48]; /* the kernel's summaries so far: each may come once */
    int n_seen;
    double lib_foreign_noted; /* lib->foreign at the last library timing event */
} job_state;

static kg_libpath *lib_path(kg_libref *lib, const char *name)
{
    for (int i = 0; i < lib->n; i++)
        if (strcmp(lib->paths[i].name, name) == 0)
            return &lib->paths[i];
    if (lib->n == KG_MAX_LIBPATHS)
        return NULL;
    kg_libpath *p = &lib->paths[lib->n++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->status = KG_LIB_UNSUPPORTED;
    snprintf(p->note, sizeof p->note, "not measured");
    return p;
}

/* Is a summary name one a kernel job may set? A known one (judge/result.h)
 * under time/ or check/, but not what the gate sets from them (time/judged,
 * time/host/allowance): a worker sending names of its own could otherwise
 * fill the result until the supervisor's did not fit; and none whose mere
 * presence changes a verdict (check/unsupported makes it SKIPPED): candidate
 * code can write on the channel, and a summary the worker never sends in a
 * job is no duplicate. The supervisor sets check/unsupported itself, from
 * the nonce-bearing done event. */
static int kernel_sum_ok(const char *name)
{
    if (!kg_summary_known(name) || strcmp(name, "time/judged") == 0 || strcmp(name, "time/host/allowance") == 0 ||
        strcmp(name, "check/unsupported") == 0)
        return 0;
    return strncmp(name, "time/", 5) == 0 || strncmp(name, "check/", 6) == 0;
}

static int violate(job_state *js, const char *fmt, const char *what)
{
    snprintf(js->violation, sizeof js->violation, fmt, what);
    return 1;
}

/* One event line; returns non-zero to stop the worker. */
/* One handler an event kind: what the event does to the job's state; 1
 * (after violate) to stop the worker. The event was parsed and validated,
 * and its subject fits the job's mode (on_line). */
typedef int (*event_fn)(job_state *js, kg_event *e);

static int on_hello(job_state *js, kg_event *e)
{
    (void)e;
    int stop = js->hello ? violate(js, "%s", "a second hello") : 0;
    js->hello = 1;
    js->hello_s = kg_mono() - js->t_start;
    return stop;
}

static int on_table(job_state *js, kg_event *e)
{
    if (js->job->mode != KG_JOB_LIST || js->table)
        return violate(js, "%s", "an unexpected table");
    js->table = e->entries;
    js->n_table = e->n_entries;
    e->entries = NULL;
    return 0;
}

/* What a library path or the bundled best is (its note). */
static int on_subject(job_state *js, kg_event *e)
{
    if (e->subject == KG_SUBJ_LIB) {
        kg_libpath *p = lib_path(js->lib, e->path);
        if (p)
            snprintf(p->note, sizeof p->note, "%s", e->text);
    } else {
        snprintf(js->lib->best_name, sizeof js->lib->best_name, "%s", e->path);
        snprintf(js->lib->best_note, sizeof js->lib->best_note, "%s", e->text);
    }
    return 0;
}

static int on_unsupported(job_state *js, kg_event *e)
{
    kg_libpath *p = lib_path(js->lib, e->path);
    if (p) {
        p->status = KG_LIB_UNSUPPORTED;
        snprintf(p->note, sizeof p->note, "%s", e->text);
    }
    return 0;
}

static int on_check(job_state *js, kg_event *e)
{
    kg_libpath *p = e->subject == KG_SUBJ_LIB && !e->pass ? lib_path(js->lib, e->path) : NULL;
    if (p) {
        p->status = KG_LIB_WRONG;
        snprintf(p->note, sizeof p->note, "failed the reference check: %.280s", e->text);
    }
    return 0;
}

/* A kernel's summary: each name once, only those a kernel may set. */
static int kernel_sum(job_state *js, const kg_event *e)
{
    for (int i = 0; i < js->n_seen; i++)
        if (strcmp(js->seen[i], e->name) == 0)
            return violate(js, "summary '%s' reported twice", e->name);
    if (js->n_seen < KG_MAX_SUMMARIES)
        snprintf(js->seen[js->n_seen++], sizeof js->seen[0], "%s", e->name);
    if (!kernel_sum_ok(e->name))
        return violate(js, "a kernel may not set summary '%s'", e->name);
    if (!(e->value >= 0) && strcmp(e->name, "time/escaped") != 0)
        return violate(js, "a negative or missing value for '%s'", e->name);
    kg_result_set_unit(js->r, e->name, e->value, e->unit[0] ? e->unit : NULL);
    return 0;
}

/* A library path's or the bundled best's summary: what disturbed its
 * timing, and its time and interval, each once. */
static int lib_sum(job_state *js, const kg_event *e)
{
    double *dst = NULL;
    kg_libpath *p = e->subject == KG_SUBJ_LIB ? lib_path(js->lib, e->path) : NULL;
    int median = strcmp(e->name, "time/gpu/median") == 0;
    if (strcmp(e->name, "time/throttled") == 0 || strcmp(e->name, "time/foreign") == 0 ||
        strcmp(e->name, "time/retimed") == 0) {
        /* what disturbed the library's timing (a first timing, timed again):
         * such a measurement is not cached */
        if (!(e->value >= 0 && e->value < 1e9))
            return violate(js, "a negative or missing value for '%s'", e->name);
        js->lib->disturbed += e->value;
        if (strcmp(e->name, "time/foreign") == 0)
            js->lib->foreign += e->value;
        return 0;
    }
    if (strcmp(e->name, "time/gpu/median") != 0 && strcmp(e->name, "time/gpu/ci_lo") != 0 &&
        strcmp(e->name, "time/gpu/ci_hi") != 0)
        return 0; /* other library summaries are not kept */
    if (!(e->value > 0))
        return violate(js, "a non-positive time for '%s'", e->name);
    if (p) {
        dst = median ? &p->t : strstr(e->name, "lo") ? &p->lo : &p->hi;
        if (median && p->status != KG_LIB_WRONG)
            p->status = KG_LIB_OK;
    } else if (e->subject == KG_SUBJ_BEST) {
        dst = median ? &js->lib->best_t : strstr(e->name, "lo") ? &js->lib->best_lo : &js->lib->best_hi;
        if (median)
            js->lib->have_best = 1;
    }
    /* each library or best time once: a candidate that brings its own
     * library paths (a problem outside the catalog) may not send a path's
     * time again to move E_lib */
    if (dst && *dst > 0)
        return violate(js, "a library time reported twice ('%s')", e->name);
    if (dst)
        *dst = e->value;
    return 0;
}

static int on_sum(job_state *js, kg_event *e)
{
    if (e->subject == KG_SUBJ_KERNEL)
        return kernel_sum(js, e);
    if (e->subject == KG_SUBJ_LIB || e->subject == KG_SUBJ_BEST)
        return lib_sum(js, e);
    return violate(js, "%s", "a summary without a subject");
}

static int on_timing(job_state *js, kg_event *e)
{
    /* one timing a kernel: a forged one first would put its note in the detail */
    if (e->subject == KG_SUBJ_KERNEL && js->timed)
        return violate(js, "%s", "a second timing event for the kernel");
    if (e->subject == KG_SUBJ_KERNEL) {
        kg_result *r = js->r;
        js->timed = 1;
        snprintf(r->stop, sizeof r->stop, "%s", e->stop);
        if (e->escaped)
            r->flags |= KG_FLAG(ESCAPED);
        if (e->throttled > 0)
            r->flags |= KG_FLAG(THROTTLED);
        if (strcmp(r->stop, "wall-cap") == 0 || strcmp(r->stop, "max-samples") == 0)
            r->flags |= KG_FLAG(NOISY);
        if (e->text[0] && !r->detail[0])
            snprintf(r->detail, sizeof r->detail, "%s", e->text);
    } else if (js->lib) { /* the note of the first library timing that saw foreign work */
        if (js->lib->foreign > js->lib_foreign_noted && e->text[0] && !js->lib->timing_note[0])
            snprintf(js->lib->timing_note, sizeof js->lib->timing_note, "%s", e->text);
        js->lib_foreign_noted = js->lib->foreign;
    }
    return 0;
}

/* The diagnosis explains, it never judges: facts are kept as sent
 * (validated by kg_event_parse), at most KG_DIAG_KERNELS_MAX. */
static int on_diag(job_state *js, kg_event *e)
{
    if (!js->r->diag && !(js->r->diag = calloc(1, sizeof *js->r->diag)))
        return violate(js, "%s", "out of memory for the diagnosis");
    kg_diagnosis *d = js->r->diag;
    if (e->kind == KG_EV_KERNEL) {
        if (d->n_kernels >= KG_DIAG_KERNELS_MAX)
            return violate(js, "%s", "more kernels described than KG_DIAG_KERNELS_MAX");
        d->kernels[d->n_kernels++] = *e->kf;
        return 0;
    }
    snprintf(d->note, sizeof d->note, "%.500s", e->text);
    d->passes = e->passes;
    d->launches = e->launches;
    d->busy_s = e->busy_s;
    d->wall_s = e->wall_s;
    return 0;
}

static int on_fail(job_state *js, kg_event *e)
{
    if (e->subject == KG_SUBJ_LIB) {
        /* the library, not the candidate, failed: stop the command */
        kg_err_set(&js->fatal, KG_EXIT_ENV, "library path %s failed: %s", e->path, e->text);
    } else if (e->subject == KG_SUBJ_BEST) {
        js->lib->have_best = 0;
        snprintf(js->lib->best_note, sizeof js->lib->best_note, "bundled %s failed: %.200s", js->lib->best_name,
                 e->text);
    } else if (strcmp(e->fail_kind, "crash") == 0) {
        js->crashed = 1;
        snprintf(js->crash, sizeof js->crash, "%s", e->text);
    } else if (!js->incorrect) {
        /* "CHECK: WHAT WENT WRONG": the check that fired is the reason */
        const char *colon = strstr(e->text, ": ");
        size_t n = colon && colon - e->text < 200 ? (size_t)(colon - e->text) : strlen(e->text);
        js->incorrect = 1;
        snprintf(js->r->reason, sizeof js->r->reason, "%.*s", (int)n, e->text);
        snprintf(js->r->detail, sizeof js->r->detail, "%s", e->text[n] ? e->text + n + 2 : "");
    }
    return 0;
}

/* An error stops the command (no GPU, a file that is no candidate): only
 * the worker's own, which knows the job's nonce; candidate code writing
 * one on the channel to stop a batch is a violation of its job alone. */
static int on_error(job_state *js, kg_event *e)
{
    if (strcmp(e->nonce, js->job->nonce) != 0)
        return violate(js, "an error event that does not carry the job's nonce: %.300s", e->text);
    kg_err_set(&js->fatal, e->code, "%s", e->text);
    return 0;
}

static int on_done(job_state *js, kg_event *e)
{
    int stop = 0;
    if (js->done)
        stop = violate(js, "%s", "a second done");
    else if (strcmp(e->nonce, js->job->nonce) != 0)
        stop = violate(js, "%s", "a done that does not carry the job's nonce");
    else if (e->unsupported && js->job->mode != KG_JOB_KERNEL)
        stop = violate(js, "%s", "an unsupported shape outside a kernel job");
    else
        js->unsupported = e->unsupported;
    js->done = 1;
    return stop;
}

static const event_fn handlers[KG_EV_COUNT] = {
    [KG_EV_HELLO] = on_hello,   [KG_EV_TABLE] = on_table, [KG_EV_SUBJECT] = on_subject,
    [KG_EV_UNSUPPORTED] = on_unsupported, [KG_EV_CHECK] = on_check, [KG_EV_SUM] = on_sum,
    [KG_EV_TIMING] = on_timing, [KG_EV_KERNEL] = on_diag, [KG_EV_DIAG] = on_diag,
    [KG_EV_FAIL] = on_fail,     [KG_EV_ERROR] = on_error, [KG_EV_DONE] = on_done,
};

/* One line from the worker: parsed and validated, its order and subject
 * checked against the job, then handed to its kind's handler. */
static int on_line(void *ud, const char *line)
{
    job_state *js = ud;
    kg_event e;
    kg_err perr = {0, ""};
    if (kg_event_parse(line, &e, &perr))
        return violate(js, "%s", perr.msg);
    int stop = 0;
    const kg_job *jb = js->job;
    if (e.kind != KG_EV_HELLO && !js->hello)
        stop = violate(js, "%s before hello", kg_event_kind_name(e.kind));
    else if (e.subject == KG_SUBJ_KERNEL && jb->mode != KG_JOB_KERNEL)
        stop = violate(js, "a kernel event in a %s job", jb->mode == KG_JOB_LIST ? "list" : "library");
    else if ((e.subject == KG_SUBJ_LIB || e.subject == KG_SUBJ_BEST) && jb->mode != KG_JOB_LIBRARY)
        stop = violate(js, "a %s event outside a library job", e.subject == KG_SUBJ_LIB ? "lib" : "best");
    else if ((unsigned)e.kind < KG_EV_COUNT && handlers[e.kind])
        stop = handlers[e.kind](js, &e);
    kg_event_free(&e);
    return stop;
}

/* Why a list or library job gave no answer: the protocol violation, the
 * deadline, the signal, or the last line of stderr (`none` without one). */
static const char *worker_failure(const job_state *js, const kg_child *ch, const char *none)
{
    return js->violation[0] ? js->violation
           : ch->timed_out  ? "no answer within the time limit"
           : ch->signaled   ? strsignal(ch->sig)
           : ch->stderr_tail[0] ? ch->stderr_tail
                                : none;
}

/* The Python worker's interpreter (KGATE_PYTHON, else python3 on PATH), and
 * its environment: KGATE_LIB names the libkgate.so shipped with `exe`, and
 * the package shipped with it goes first on PYTHONPATH (kg_shipped), so that
 * the worker runs this kgate's package and library. */
static int python_worker_env(const char *exe, char *python, size_t size, kg_err *err)
{
    char lib[PATH_MAX + 16];
    if (kg_python_env(exe, "a Python candidate", python, size, err))
        return err->code;
    if (!getenv("KGATE_LIB") && kg_shipped(exe, KG_SHIP_LIB, "libkgate.so", lib, sizeof lib))
        return kg_err_set(err, KG_EXIT_ENV, "a Python candidate needs %s (build it: make build)", lib);
    if (!getenv("KGATE_LIB"))
        setenv("KGATE_LIB", lib, 1);
    return 0;
}

void kg_job_warm(const char *exe, const kg_job *job)
{
    char python[PATH_MAX];
    kg_err e = {0, ""};
    kg_zygote *z;
    if ((kg_source_is_python(job->plugin) || (job->mode == KG_JOB_LIBRARY && job->torch)) &&
        python_worker_env(exe, python, sizeof python, &e) == 0 && (z = python_zygote(python, job->sandbox)))
        kg_zygote_ready(z, KG_ZYGOTE_READY_S, &e); /* one that fails is stopped: the job then execs its worker */
}

int kg_job_python(const char *exe, char *python, size_t size, kg_err *err)
{
    return python_worker_env(exe, python, size, err);
}

int kg_job_run(const char *exe, const kg_job *job, double timeout_s, kg_result *r, kg_libref *lib,
               kg_table_entry **table, int *n_table, kg_err *err)
{
    return kg_job_run_under(NULL, exe, job, timeout_s, r, lib, table, n_table, err);
}

/* The worker's command line in argv: under `wrapper` (its argv) when given;
 * the Python host for a Python candidate or PyTorch's library paths, else
 * this executable's __worker. *run is what to exec. Returns the index of
 * the --fd value, or -1 with err set. */
static int worker_argv(const char *const *wrapper, const char *exe, const kg_job *job, char **argv, char *python,
                       size_t python_size, const char **run, kg_err *err)
{
    int na = 0;
    for (; wrapper && wrapper[na] && na < 16; na++)
        argv[na] = (char *)wrapper[na];
    *run = na ? argv[0] : exe;
    if (kg_source_is_python(job->plugin) || (job->mode == KG_JOB_LIBRARY && job->torch)) {
        /* a Python candidate: the worker is the Python host, which loads
         * the libkgate.so shipped with this executable */
        if (python_worker_env(exe, python, python_size, err))
            return -1;
        if (!na)
            *run = python;
        argv[na++] = python;
        argv[na++] = "-m";
        argv[na++] = "kgate._worker";
    } else {
        argv[na++] = (char *)exe;
        argv[na++] = "__worker";
    }
    if (wrapper && wrapper[0])
        argv[na++] = "--under-tool"; /* it exits normally, for the tool's exit hooks (kg_worker_exits_normally) */
    argv[na++] = "--fd";
    int fd_index = na;
    argv[na++] = "-1";
    argv[na] = NULL;
    return fd_index;
}

/* The job as sent: the watchdog's budget, a fresh nonce that the done
 * event must carry, and a scratch directory, removed however the worker
 * ends: the sandbox's only writable place, and where a diagnosis writes
 * cubins for cuobjdump (so that a worker killed mid-way leaves none
 * behind). NULL with err set. */
static kg_job *job_to_send(const kg_job *job, double timeout_s, kg_err *err)
{
    kg_job *sent = malloc(sizeof *sent);
    if (!sent) {
        kg_err_set(err, KG_EXIT_ENV, "out of memory for the job");
        return NULL;
    }
    *sent = *job;
    sent->budget_s = timeout_s;
    kg_random_hex(sent->nonce, 33);
    sent->scratch[0] = '\0';
    if (sent->sandbox && kg_sandbox_scratch(sent->scratch, sizeof sent->scratch, err)) {
        free(sent);
        return NULL;
    }
    if (!sent->sandbox && sent->diagnose) {
        kg_err serr = {0, ""};
        if (kg_sandbox_scratch(sent->scratch, sizeof sent->scratch, &serr))
            sent->scratch[0] = '\0'; /* the worker's TMPDIR then, as it would have been */
    }
    return sent;
}

/* A list job's end: its kernel table, or why there is none. */
static int list_end(const kg_job *job, job_state *js, const kg_child *ch, kg_table_entry **table, int *n_table,
                    kg_err *err)
{
    if (js->fatal.code) {
        free(js->table);
        *err = js->fatal;
        return err->code;
    }
    if (!js->table || js->violation[0] || ch->timed_out || ch->signaled || !js->done) {
        free(js->table);
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: loading it did not give a kernel table: %s", job->plugin,
                          worker_failure(js, ch, "the worker exited without one"));
    }
    if (table) {
        *table = js->table;
        *n_table = js->n_table;
    } else {
        free(js->table);
    }
    return 0;
}

/* A library job's end: the library failed, or its times are in js->lib. */
static int library_end(const kg_job *job, job_state *js, const kg_child *ch, kg_err *err)
{
    if (js->fatal.code) {
        *err = js->fatal;
        return err->code;
    }
    if (js->violation[0] || ch->timed_out || ch->signaled || !js->done)
        return kg_err_set(err, KG_EXIT_ENV, "the library measurement of %s failed: %s", job->op->name,
                          worker_failure(js, ch, ""));
    return 0;
}

/* A kernel job's end: what stops the command, else the result's verdict
 * from how its worker ended (judge/worker_end.h). */
static int kernel_end(const kg_job *job, const job_state *js, const kg_child *ch, double timeout_s, kg_result *r,
                      kg_err *err)
{
    if (js->fatal.code && !js->crashed && !js->incorrect) {
        /* the command cannot go on: bad candidate, no GPU, library failure;
         * what was measured is already in *r for the caller */
        *err = js->fatal;
        return err->code;
    }
    if (!r)
        return 0;
    r->wrapper_exit = ch->exited ? ch->code : -1;
    kg_result_set(r, "job/wall", ch->wall_s);
    if (js->hello)
        kg_result_set(r, "job/startup", js->hello_s);
    snprintf(r->wrapper_tail, sizeof r->wrapper_tail, "%s", ch->stderr_tail);
    kg_worker_end w = {js->violation, ch->timed_out, timeout_s, js->crashed, js->crash, ch->signaled, ch->sig,
                       ch->code, ch->stderr_tail, js->incorrect, js->done, js->unsupported, job->verify_only};
    kg_judge_worker_end(&w, r);
    return 0;
}

int kg_job_run_under(const char *const *wrapper, const char *exe, const kg_job *job, double timeout_s,
                     kg_result *r, kg_libref *lib, kg_table_entry **table, int *n_table, kg_err *err)
{
    char *argv[24], python[PATH_MAX];
    const char *run;
    int fd_index = worker_argv(wrapper, exe, job, argv, python, sizeof python, &run, err);
    if (fd_index < 0)
        return err->code;
    job_state js;
    kg_child ch;
    kg_result dummy_r;
    kg_libref dummy_lib;
    memset(&js, 0, sizeof js);
    memset(&dummy_r, 0, sizeof dummy_r);
    memset(&dummy_lib, 0, sizeof dummy_lib);
    js.r = r ? r : &dummy_r;
    js.lib = lib ? lib : &dummy_lib;
    if (table)
        *table = NULL;
    if (n_table)
        *n_table = 0;
    kg_job *sent = job_to_send(job, timeout_s, err);
    if (!sent)
        return err->code;
    js.job = sent; /* the nonce the done event must carry */
    char *text = kg_job_to_json(sent);
    js.t_start = kg_mono();
    kg_zygote *z = run == python ? python_zygote(python, sent->sandbox) : NULL;
    int rc = text ? spawn_worker(z, sent->sandbox, run, argv, fd_index, text, timeout_s, on_line, &js, &ch, err)
                  : kg_err_set(err, KG_EXIT_ENV, "out of memory for the job");
    free(text);
    kg_sandbox_cleanup(sent->scratch);
    free(sent);
    if (rc)
        return err->code;
    if (ch.interrupted) {
        int sig = kg_stop_requested();
        free(js.table);
        return kg_err_set(err, KG_EXIT_STOPPED, "stopped by %s: the job running then was abandoned",
                          sig > 1 ? strsignal(sig) : "request");
    }
    if (ch.stopped && !js.violation[0])
        snprintf(js.violation, sizeof js.violation, "an event line longer than %d bytes", KG_EVENT_MAX);
    if (job->mode == KG_JOB_LIBRARY) {
        js.lib->measured = 1;
        js.lib->job_wall_s = ch.wall_s;
        js.lib->job_startup_s = js.hello_s;
    }
    if (job->mode == KG_JOB_LIST)
        return list_end(job, &js, &ch, table, n_table, err);
    free(js.table);
    if (job->mode == KG_JOB_LIBRARY)
        return library_end(job, &js, &ch, err);
    return kernel_end(job, &js, &ch, timeout_s, r, err);
}
