/* A supervisor of `kgate batch`: one process per GPU slot, which asks the
 * dispatcher for jobs, runs each as `kgate check` on its GPU, checks the
 * GPU's health after a job that failed, and appends each job's results as
 * one line of the results file in its turn. */
#include "batch_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../base/text.h"
#include "../catalog/plugin_check.h"

#define KG_RESULTS_TURN_S 60.0 /* a supervisor's wait for its turn to append to the results file */
#define KG_DOC_MAX (KG_BATCH_LINE_MAX / 2) /* a job's results document, read whole into its line */

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

int kg_batch_zygote_wanted(const kg_batch_cfg *c)
{
    const char *off = getenv("KGATE_ZYGOTE");
    if (off && strcmp(off, "0") == 0)
        return 0;
    for (int i = 0; i < c->n_check; i++)
        if (forkless(c->check[i]))
            return 0;
    return 1;
}

/* The job's warm slot (kg_batch_run_timed's warm): 1 when it is a Python
 * candidate whose check would start a fork server (not off, not under
 * --sandbox or --memcheck): it takes the slot; else 0 (the slot is
 * dropped), or -1 under keep_slot (kgate serve: the slot stays for the
 * next request) */
static int python_job(const kg_batch_cfg *c, const kg_batch_job *j)
{
    int other = c->keep_slot ? -1 : 0;
    if (!kg_batch_zygote_wanted(c) || !kg_source_is_python(j->candidate))
        return other;
    for (int i = 0; i < j->n_opts; i++)
        if (forkless(j->opts[i]))
            return other;
    return 1;
}

int kg_batch_run_job(const kg_batch_cfg *c, const kg_batch_job *j, int g, const kg_batch_view *v, const char *dir,
                     kg_batch_watch *w, char **text, kg_err *err)
{
    char *argv[96], spec[PATH_MAX + 100], dev[16], json[PATH_MAX + 32], log[PATH_MAX + 32];
    int n = 0;
    snprintf(spec, sizeof spec, "%s%s%s", j->candidate, j->kernel[0] ? ":" : "", j->kernel);
    snprintf(dev, sizeof dev, "%d", v->dev);
    snprintf(json, sizeof json, "%s/job.json", dir);
    snprintf(log, sizeof log, "%s/job.log", dir);
    unlink(json);
    unlink(log); /* no earlier job's text can pass for this one's */
    argv[n++] = (char *)kg_batch_runner(c);
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
    for (int i = 0; i < c->n_check && n < 88; i++)
        argv[n++] = c->check[i];
    argv[n++] = "--device";
    argv[n++] = dev;
    argv[n++] = "--json";
    argv[n++] = json;
    argv[n] = NULL;
    double t0 = kg_mono();
    int rc = kg_batch_run_timed(argv, log, c->timeout_s, v->cvd, python_job(c, j), w, err);
    double wall = kg_mono() - t0;
    int cancelled = rc == RUN_CANCELLED;
    if (cancelled)
        rc = KG_EXIT_STOPPED; /* as a check stopped by a signal: what it measured is in its document */
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
        kg_batch_last_line(log, why, sizeof why);
        if (rc == 124)
            snprintf(why, sizeof why, "no result within %g s: killed", c->timeout_s);
        if (cancelled)
            snprintf(why, sizeof why, "cancelled: %s", w->why);
        cJSON_AddStringToObject(line, "error", why);
    } else if (!doc) { /* a verdict's exit without its verdicts: it could not be judged */
        snprintf(why, sizeof why, "exit %d, but %s", rc, doc_why);
        cJSON_AddStringToObject(line, "error", why);
    }
    const cJSON *said = cJSON_GetObjectItemCaseSensitive(line, "error");
    cJSON *notes = kg_batch_notes(log, cJSON_IsString(said) ? said->valuestring : NULL);
    if (notes)
        cJSON_AddItemToObject(line, "notes", notes);
    kg_json_clean(line); /* the job's document and log are anyone's text (base/text.h) */
    *text = cJSON_PrintUnformatted(line);
    if (*text && strlen(*text) >= KG_BATCH_LINE_MAX - 1) { /* re-encoded, a document can grow */
        free(*text);
        cJSON_DeleteItemFromObjectCaseSensitive(line, "check");
        cJSON_DeleteItemFromObjectCaseSensitive(line, "error");
        cJSON_DeleteItemFromObjectCaseSensitive(line, "notes");
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
static int append_line(const kg_batch_cfg *c, int fd, const char *text, kg_err *err)
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
    kg_batch_msg m = {kind, slot, job};
    if (write(status, &m, sizeof m) != sizeof m) {
        /* the batch is gone: PR_SET_PDEATHSIG stops this supervisor */
    }
}

/* Removes a supervisor's directory and what its jobs wrote there. */
void kg_batch_remove_dir(const char *dir)
{
    static const char *files[] = {"job.json", "job.log", "health.log", "events.jsonl"};
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
void kg_batch_supervise(const kg_batch_cfg *c, const kg_batch_jobs *jobs, int slot, int in, int status, int fd,
                        const char *dir, pid_t batch)
{
    prctl(PR_SET_PDEATHSIG, SIGTERM); /* the batch killed (SIGKILL): stop as if asked */
    if (getppid() != batch)
        kg_stop_request(SIGTERM);
    prctl(PR_SET_CHILD_SUBREAPER, 1); /* what a job leaves behind comes back here (kg_batch_run_timed) */
    int g = c->gpus[slot / c->per_gpu], said_unknown = 0;
    kg_batch_view v = kg_batch_pick_view(c, slot / c->per_gpu, dir);
    while (!kg_stop_requested()) {
        tell(status, M_READY, slot, -1);
        int job;
        if (read(in, &job, sizeof job) != sizeof job || job < 0 || job >= jobs->n)
            break;
        kg_err err = {0, ""};
        char *text = NULL;
        int rc = kg_batch_run_job(c, &jobs->v[job], g, &v, dir, NULL, &text, &err);
        if (rc == RUN_STOPPED)
            break;
        int h = H_OK;
        /* an environment failure, a killed check or one past --job-timeout: is
         * it the GPU? Then the job is not recorded here but handed to
         * another GPU */
        if (rc == KG_EXIT_ENV || rc == 124 || rc > 128)
            h = kg_batch_health(c, &v, v.cvd, dir, &err);
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
    kg_batch_slot_drop();
    kg_batch_remove_dir(dir);
    _exit(0);
}
