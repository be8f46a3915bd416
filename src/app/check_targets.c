/* The kernels a check judges (targets): a candidate listed in a worker,
 * its kernels kept where they match the command's options, and the groups
 * (an operator, its dtypes) that share a library measurement. */
#include "check_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../catalog/plugin_check.h"

static kg_check_target *targets_add(kg_check_targets *t)
{
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        kg_check_target *v = realloc(t->v, sizeof *v * (size_t)cap);
        if (!v)
            return NULL;
        t->v = v;
        t->cap = cap;
    }
    return &t->v[t->n++];
}

/* Lists the kernels of a candidate that match the options (validating it in a worker). */
int kg_check_collect(const kg_options *o, const char *exe, const char *spec, kg_check_targets *out, kg_err *err)
{
    char path[PATH_MAX], want[1024]; /* want: kernel names, comma-separated, or "" for all */
    int too_long = kg_candidate_split(spec, path, sizeof path, want, sizeof want) != 0;
    for (const char *w = want; *w && !too_long; w += strcspn(w, ","), w += *w == ',')
        too_long = strcspn(w, ",") >= sizeof ((kg_table_entry *)0)->name;
    if (too_long)
        return kg_err_set(err, KG_EXIT_USAGE, "%.200s%s: the candidate's file name or kernel name is too long",
                          spec, strlen(spec) > 200 ? "..." : "");
    if (access(path, R_OK) != 0)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: no such readable file", path);
    {
        /* workers get an absolute path: a sandboxed one works in a scratch directory */
        char abs[PATH_MAX];
        if (realpath(path, abs))
            snprintf(path, sizeof path, "%s", abs);
    }
    /* the Python worker host imports the candidate only with this hash (docs/python.md);
     * unset otherwise, so that the variable is kgate's own. Judged on the path the
     * workers open (a link resolved), not the name given. */
    if (o->pin_sha256 && !kg_source_is_python(path))
        return kg_err_set(err, KG_EXIT_USAGE, "--pin-sha256: %s is not a Python candidate (.py)", path);
    if (o->pin_sha256 ? setenv("KGATE_CANDIDATE_SHA256", o->pin_sha256, 1) : unsetenv("KGATE_CANDIDATE_SHA256"))
        return kg_err_set(err, KG_EXIT_ENV, "setenv KGATE_CANDIDATE_SHA256: %s", strerror(errno));
    kg_job js;
    kg_job_defaults(&js);
    js.mode = KG_JOB_LIST;
    js.sandbox = o->sandbox;
    snprintf(js.plugin, sizeof js.plugin, "%s", path);
    kg_table_entry *table = NULL;
    int n = 0;
    kg_cmds_gpu_lock_target(o);
    double t0 = kg_mono();
    kg_job_warm(exe, &js); /* the Python fork server's imports beside another job's GPU work */
    double t1 = kg_mono();
    if (kg_cmds_run_locked(NULL, exe, &js, o->timeout_s, NULL, &table, &n, err))
        return err->code;
    double t2 = kg_mono();
    for (int i = 0; i < n; i++) {
        const kg_table_entry *k = &table[i];
        const kg_op *op = kg_op_find(k->op);
        kg_types ty = {KG_FP16, KG_I64};
        if (!op || kg_dtype_parse(k->dtype, &ty.data) || kg_dtype_parse(k->index_dtype, &ty.index))
            continue; /* the worker validated it: cannot happen */
        if (want[0] && !kg_name_in_list(want, k->name))
            continue;
        if ((o->op && o->op != op) || (o->have_dtype && o->dtype != ty.data))
            continue;
        if (o->suite && ty.data != op->dtypes[0] && !(kg_op_suite_dtypes(op) > 1 && ty.data == op->dtypes[1]) &&
            !(kg_op_suite_dtypes(op) > 2 && ty.data == op->dtypes[2]))
            continue; /* kgate run: the operator's suite dtypes only */
        kg_check_target *t = targets_add(out);
        if (!t) {
            free(table);
            return kg_err_set(err, KG_EXIT_ENV, "out of memory");
        }
        snprintf(t->plugin, sizeof t->plugin, "%s", path);
        snprintf(t->kernel, sizeof t->kernel, "%s", k->name);
        snprintf(t->summary, sizeof t->summary, "%s", k->summary);
        snprintf(t->space, sizeof t->space, "%s", k->space);
        t->op = op;
        t->types = ty;
        t->warm_s = t1 - t0;
        t->list_s = t2 - t1;
    }
    for (const char *w = want; *w;) { /* every kernel named must be there */
        size_t len = strcspn(w, ",");
        int there = 0;
        for (int i = 0; i < n && !there; i++)
            there = strlen(table[i].name) == len && strncmp(table[i].name, w, len) == 0;
        if (!there) {
            free(table);
            return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: no kernel named '%.*s'", path, (int)(len > 96 ? 96 : len), w);
        }
        w += len + (w[len] == ',');
    }
    free(table);
    return 0;
}

int kg_check_same_group(const kg_check_target *a, const kg_check_target *b)
{
    return a->op == b->op && a->types.data == b->types.data &&
           (!kg_op_has_index(a->op) || a->types.index == b->types.index);
}
