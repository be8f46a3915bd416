/* A loop's trajectory read from its files (results files, batch or service
 * answers, iteration folders) and printed as a table (trajectory.h). */
#include "trajectory.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


#include "../base/text.h"
#include "../diagnose/diag_json.h"
#include "../store/batch.h"

/* A new iteration labelled label, or NULL with err set. */
static kg_traj_iter *traj_new(kg_trajectory *t, const char *label, kg_err *err)
{
    if (t->n == KG_TRAJ_MAX) {
        kg_err_set(err, KG_EXIT_USAGE, "a trajectory of more than %d iterations", KG_TRAJ_MAX);
        return NULL;
    }
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        kg_traj_iter *v = realloc(t->v, sizeof *v * (size_t)cap);
        if (!v) {
            kg_err_set(err, KG_EXIT_ENV, "out of memory for the trajectory");
            return NULL;
        }
        t->v = v;
        t->cap = cap;
    }
    kg_traj_iter *it = &t->v[t->n++];
    memset(it, 0, sizeof *it);
    kg_report_init(&it->rep);
    it->code = -1;
    kg_text_clean(it->label, sizeof it->label, label);
    return it;
}

typedef struct traj_lines {
    kg_trajectory *t;
    const char *path;
    kg_err *err;
    int line;
    int events; /* progress lines read: an answer's label counts lines without them */
} traj_lines;

/* One batch or service answer: its id, exit code, error and check. */
static int traj_line(void *ud, const char *l)
{
    traj_lines *b = ud;
    char label[160];
    kg_batch_answer a;
    int line = ++b->line;
    int rc = kg_report_answer(l, b->path, line, &a, b->err);
    if (rc == 1)
        return 0; /* torn */
    if (!rc && a.event) {
        b->events++; /* a service's progress line: its answer follows */
        return 0;
    }
    kg_traj_iter *it = NULL;
    if (!rc) {
        snprintf(label, sizeof label, "%s", a.id);
        if (!label[0])
            snprintf(label, sizeof label, "line %d", line - b->events);
        if (!(it = traj_new(b->t, label, b->err)))
            rc = b->err->code;
    }
    if (it) {
        it->code = a.code;
        snprintf(it->error, sizeof it->error, "%s", a.error[0] ? a.error : a.doc_error);
        if (a.has_check) {
            it->rep = a.rep; /* the iteration owns the check's results now */
            kg_report_init(&a.rep);
        }
    }
    kg_report_free(&a.rep);
    return rc;
}

/* A file: answers (one iteration a line) or one results file (label: its
 * name, or the folder's when it is one of several of a folder). */
static int traj_file(kg_trajectory *t, const char *path, kg_traj_iter *into, kg_err *err)
{
    kg_report r;
    char head[256] = "";
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(head, 1, sizeof head - 1, f);
        head[n] = '\0';
        fclose(f);
    }
    if (kg_report_is_batch(head) && !into) {
        traj_lines b = {t, path, err, 0, 0};
        int torn = 0;
        return kg_results_each(path, traj_line, &b, &torn, err);
    }
    if (kg_report_read_json(path, &r, err))
        return err->code;
    kg_traj_iter *it = into;
    if (!it) {
        const char *base = strrchr(path, '/');
        if (!(it = traj_new(t, base ? base + 1 : path, err))) {
            kg_report_free(&r);
            return err->code;
        }
    }
    return kg_report_merge(&it->rep, &r, err);
}

static int json_name(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return d->d_name[0] != '.' && n > 5 && strcmp(d->d_name + n - 5, ".json") == 0;
}

static int any_name(const struct dirent *d) { return d->d_name[0] != '.'; }

/* A folder of iterations, or (depth 1) an iteration's folder: its results
 * files together. Entries in natural order (versionsort). */
static int traj_dir(kg_trajectory *t, const char *path, int depth, kg_err *err)
{
    struct dirent **list = NULL;
    int n = scandir(path, &list, depth ? json_name : any_name, versionsort), rc = 0;
    if (n < 0)
        return kg_err_set(err, KG_EXIT_IO, "%s: %s", path, strerror(errno));
    kg_traj_iter *it = NULL;
    if (depth) {
        const char *base = strrchr(path, '/');
        it = traj_new(t, base && base[1] ? base + 1 : path, err);
        rc = it ? 0 : err->code;
    }
    for (int i = 0; i < n && !rc; i++) {
        char p[PATH_MAX];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", path, list[i]->d_name);
        if (stat(p, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode) && !depth)
            rc = traj_dir(t, p, 1, err);
        else if (S_ISREG(st.st_mode) && (depth || json_name(list[i]) || strstr(list[i]->d_name, ".jsonl")))
            rc = traj_file(t, p, it, err);
    }
    for (int i = 0; i < n; i++)
        free(list[i]);
    free(list);
    return rc;
}

int kg_traj_add_path(kg_trajectory *t, const char *path, kg_err *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return kg_err_set(err, KG_EXIT_IO, "%s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return traj_dir(t, path, 0, err);
    if (!S_ISREG(st.st_mode))
        return kg_err_set(err, KG_EXIT_IO, "%s: not a file or a folder", path);
    return traj_file(t, path, NULL, err);
}

static void num(const kg_result *x, const char *name, char *buf, size_t size)
{
    double v;
    if (kg_result_get(x, name, &v))
        snprintf(buf, size, "%.2f", v);
    else
        snprintf(buf, size, "-");
}

void kg_traj_print(const kg_trajectory *t, FILE *f)
{
    int best = -1, fastest = -1;
    double best_e = -1, best_t = 0;
    fprintf(f, "%4s  %-16s %-28s %-14s %-10s %10s %6s %6s %5s  %s\n", "iter", "label", "kernel", "shape", "verdict",
            "time", "E_best", "E_lib", "rho", "cause");
    for (int i = 0; i < t->n; i++) {
        const kg_traj_iter *it = &t->v[i];
        if (it->rep.n == 0)
            fprintf(f, "%4d  %-16.16s %-28s %-14s %-10s  exit %d: %.200s\n", i + 1, it->label, "-", "-", "-", it->code,
                    it->error[0] ? it->error : "no results");
        for (int k = 0; k < it->rep.n; k++) {
            const kg_result *x = &it->rep.results[k];
            char tm[32], eb[16], el[16], rho[16], cause[32] = "";
            double e;
            kg_fmt_time(kg_result_time(x), tm, sizeof tm);
            num(x, "best/efficiency", eb, sizeof eb);
            num(x, "lib/efficiency", el, sizeof el);
            num(x, "roof/fraction", rho, sizeof rho);
            const kg_cause *top = kg_diag_top(x->diag);
            if (top)
                snprintf(cause, sizeof cause, "%s %.2f", top->id, top->score);
            fprintf(f, "%4d  %-16.16s %-28.28s %-14.14s %-10s %10s %6s %6s %5s  %s\n", i + 1, it->label, x->kernel,
                    x->shape, kg_verdict_name(x->verdict), tm, eb, el, rho, cause);
            int judged = x->verdict == KG_V_OK || x->verdict == KG_V_SLOW;
            if (judged && kg_result_get(x, "best/efficiency", &e) && e > best_e) {
                best_e = e;
                best = i;
            }
            if (judged && kg_result_time(x) > 0 && (fastest < 0 || kg_result_time(x) < best_t)) {
                best_t = kg_result_time(x);
                fastest = i;
            }
        }
    }
    char tm[32];
    if (best >= 0)
        fprintf(f, "best: iteration %d (%s), E_best %.2f\n", best + 1, t->v[best].label, best_e);
    else if (fastest >= 0) /* no E_best recorded: the fastest correct one */
        fprintf(f, "best: iteration %d (%s), the fastest at %s (no E_best recorded)\n", fastest + 1,
                t->v[fastest].label, kg_fmt_time(best_t, tm, sizeof tm));
    else
        fprintf(f, "best: none (no correct, timed iteration)\n");
}

void kg_traj_free(kg_trajectory *t)
{
    for (int i = 0; i < t->n; i++)
        kg_report_free(&t->v[i].rep);
    free(t->v);
    memset(t, 0, sizeof *t);
}
