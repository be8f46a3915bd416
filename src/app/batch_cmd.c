/* `kgate batch`, the command: its arguments, its GPUs, the jobs this rank
 * runs (its shard's, not done before), the run and the exit code of its
 * end; and `kgate batch --merge`. batch_int.h says how the batch's files
 * divide the work. */
#include "batch_cmd.h"
#include "batch_int.h"
#include "optable.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../gpu/device.h"
#include "../supervise/gpu_lock.h"
#include "options.h"

static int usage(const char *m)
{
    fprintf(stderr, "kgate: %s\n", m);
    return KG_EXIT_USAGE;
}

/* Each GPU's UUID, for the jobs' view of it (kg_batch_pick_view) and its lock;
 * asked before the supervisors fork, with no CUDA context made (fake GPUs,
 * KG_BATCH_GPUS: GPU-fake-g). */
static void gpu_uuids(kg_batch_cfg *c)
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

static int parse_gpus(kg_batch_cfg *c, const char *spec)
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

/* SIGINT and SIGTERM stop the batch (exit 7): the dispatcher passes SIGTERM
 * to its supervisors, each stops its job as at --job-timeout, and the summary of
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

/* --done FILE (repeatable, bounded) and --timeout, a check's option in
 * the wrong place: refused, saying where it goes. */
static int batch_opt(void *ctx, const char *name, const char *v, kg_err *err)
{
    kg_batch_cfg *c = ctx;
    if (strcmp(name, "--timeout") == 0)
        return kg_err_set(err, KG_EXIT_USAGE, "batch: each job's limit is --job-timeout S; a check's --timeout "
                          "(each candidate's) goes after -- (kgate help batch)");
    if (c->n_done == MAX_DONE)
        return kg_err_set(err, KG_EXIT_USAGE, "--done: at most %d files (merge them first: kgate batch --merge)",
                          MAX_DONE);
    c->done[c->n_done++] = v;
    return 0;
}

/* kgate batch's arguments into c (gpus: --gpus's text), through the option
 * table every command uses. 0, or an exit code (-1: --help was printed). */
static int batch_args(int argc, char **argv, kg_batch_cfg *c, const char **gpus)
{
    const kg_optdef opts[] = {
        {"-o", KG_OPT_STR, &c->out, 0, 0, NULL, "batch", NULL},
        {"--gpus", KG_OPT_STR, gpus, 0, 0, NULL, "batch", NULL},
        {"--done", KG_OPT_FN, NULL, 0, 0, NULL, "batch", batch_opt},
        {"--shard", KG_OPT_STR, &c->shard, 0, 0, NULL, "batch", NULL},
        {"--job-timeout", KG_OPT_NUM, &c->timeout_s, 0.001, 1e6, NULL, "batch", NULL},
        {"--jobs-per-gpu", KG_OPT_INT, &c->per_gpu, 1, MAX_PER_GPU, NULL, "batch", NULL},
        {"--timeout", KG_OPT_FN, NULL, 0, 0, NULL, "batch", batch_opt},
    };
    kg_err err = {0, ""};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(kg_usage("batch"), stdout);
            return -1;
        }
        if (strcmp(a, "--") == 0) {
            c->check = argv + i + 1;
            c->n_check = argc - i - 1;
            break;
        }
        if (a[0] == '-') {
            if (kg_opt_one(opts, sizeof opts / sizeof opts[0], "batch", argc, argv, &i, c, &err))
                return usage(err.msg);
        } else if (!c->input) {
            c->input = a;
        } else {
            return usage("batch: one manifest or directory");
        }
    }
    if (!c->input || !c->out)
        return usage("batch: usage: kgate batch MANIFEST.jsonl|DIR -o RESULTS.jsonl [--gpus all|0,1] "
                     "[--jobs-per-gpu N] [--shard I/N] [--done R.jsonl]... [--job-timeout S] [-- CHECK OPTIONS]");
    return 0;
}

/* Several jobs a GPU are safe only while their workers take turns: the GPU
 * lock must be on, and each GPU's lock nameable. Sets KGATE_GPU_LOCK=require
 * for the jobs, so that one whose lock file turns unusable midway fails
 * rather than running beside the GPU's other jobs. */
static int batch_lock_needed(const kg_batch_cfg *c, kg_err *err)
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
static int batch_done(const kg_batch_cfg *c, kg_idset *done, int *fd, int *torn, long *cut)
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
static int batch_todo(const kg_batch_cfg *c, const kg_batch_jobs *jobs, int rank, int size, const kg_idset *done,
                      int *todo, int *skipped, int *missing)
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
static int batch_run(kg_batch_cfg *c, const kg_batch_jobs *jobs, const int *todo, int n_todo, int fd, int *drained,
                     kg_batch_outcome *o)
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
        drc = kg_batch_dispatch(c, jobs, todo, n_todo, fd, drained, o);
    }
    munmap(c->turn, sizeof *c->turn);
    return drc;
}

/* The run's end: the summary, a stop said, and the exit code. */
static int batch_end(const kg_batch_cfg *c, const kg_batch_outcome *o, int skipped, int missing, int bad_lines,
                     double t0, const int *drained)
{
    kg_batch_summarize(c->results, o->n_done, skipped, o->lost, kg_mono() - t0, c, drained);
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
static int batch_results_path(kg_batch_cfg *c, int rank, int size)
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
    kg_batch_cfg c;
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
    kg_batch_outcome o = {0};
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
