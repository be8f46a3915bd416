/* The summary of `kgate batch`, read back from the results file: the
 * verdicts, where the jobs' time went, and whether the kernels judged on
 * several GPUs agree. */
#include "batch_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../base/text.h"

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
void kg_batch_summarize(const char *path, int ran, int skipped, int lost, double wall_s, const kg_batch_cfg *c,
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
