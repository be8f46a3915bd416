/* Statistics over timing samples and the stopping rule (nvbench's stdrel
 * criterion: enough samples and GPU time, then stop when the relative
 * standard deviation is small or has stopped changing; a wall cap bounds it). */
#include "stats.h"
#include "../base/kg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double kg_quantile_sorted(const double *s, int n, double q)
{
    if (n <= 0)
        return NAN;
    double pos = q * (n - 1);
    int lo = (int)floor(pos);
    int hi = lo + 1 < n ? lo + 1 : lo;
    double f = pos - lo;
    return s[lo] * (1 - f) + s[hi] * f;
}

int kg_stats_compute(const double *x, int n, kg_stats *o)
{
    memset(o, 0, sizeof *o);
    if (n < 1)
        return -1;
    double *s = malloc(sizeof(double) * (size_t)n);
    if (!s)
        return -1;
    memcpy(s, x, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += s[i];
    o->n = n;
    o->mean = sum / n;
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += (s[i] - o->mean) * (s[i] - o->mean);
    o->stdev = n > 1 ? sqrt(ss / (n - 1)) : 0;
    o->relstd = o->mean > 0 ? o->stdev / o->mean : 0;
    o->min = s[0];
    o->max = s[n - 1];
    o->median = kg_quantile_sorted(s, n, 0.5);
    o->p10 = kg_quantile_sorted(s, n, 0.1);
    o->p90 = kg_quantile_sorted(s, n, 0.9);
    o->spread = o->median > 0 ? (o->p90 - o->p10) / o->median : 0;
    /* Distribution-free CI of the median: ranks n/2 -+ 0.98 sqrt(n). */
    double h = 0.98 * sqrt((double)n);
    int lo = (int)floor(n / 2.0 - h), hi = (int)ceil(n / 2.0 + h);
    if (lo < 0)
        lo = 0;
    if (hi > n - 1)
        hi = n - 1;
    o->ci_lo = s[lo];
    o->ci_hi = s[hi];
    free(s);
    return 0;
}

static const char *stop_names[] = {
#define X(e, s, d) s,
    KG_STOP_REASONS(X)
#undef X
};
static const char *stop_desc[] = {
#define X(e, s, d) d,
    KG_STOP_REASONS(X)
#undef X
};

const char *kg_stop_name(kg_stop_reason r) { return stop_names[r]; }
const char *kg_stop_describe(kg_stop_reason r) { return stop_desc[r]; }

void kg_stop_defaults(kg_stop_cfg *c)
{
    c->min_samples = 10;
    c->min_gpu_s = 0.25;
    c->max_noise = 0.005;
    c->max_wall_s = 15.0;
    c->max_samples = 20000;
}

void kg_stop_init(kg_stopper *st, const kg_stop_cfg *cfg)
{
    memset(st, 0, sizeof *st);
    st->cfg = *cfg;
}

static double relstd_of(const double *x, int n)
{
    double m = 0, ss = 0;
    for (int i = 0; i < n; i++)
        m += x[i];
    m /= n;
    for (int i = 0; i < n; i++)
        ss += (x[i] - m) * (x[i] - m);
    return n > 1 && m > 0 ? sqrt(ss / (n - 1)) / m : 0;
}

kg_stop_reason kg_stop_check(kg_stopper *st, const double *x, int n, double gpu_s, double wall_s)
{
    const kg_stop_cfg *c = &st->cfg;
    if (n >= c->max_samples)
        return KG_STOP_MAX_SAMPLES;
    if (wall_s >= c->max_wall_s && n >= 1)
        return KG_STOP_WALL;
    if (n < c->min_samples || gpu_s < c->min_gpu_s)
        return KG_STOP_NONE;
    double noise = relstd_of(x, n);
    if (noise <= c->max_noise)
        return KG_STOP_NOISE;
    /* Record the noise every 10 samples; once the last KG_STOP_HISTORY
     * records agree within 5% of their mean, more samples will not help. */
    if (n - st->last_n >= 10) {
        st->hist[st->n_hist % KG_STOP_HISTORY] = noise;
        st->n_hist++;
        st->last_n = n;
        if (st->n_hist >= KG_STOP_HISTORY) {
            double lo = st->hist[0], hi = st->hist[0], m = 0;
            for (int i = 0; i < KG_STOP_HISTORY; i++) {
                lo = fmin(lo, st->hist[i]);
                hi = fmax(hi, st->hist[i]);
                m += st->hist[i] / KG_STOP_HISTORY;
            }
            if (hi - lo <= 0.05 * m)
                return KG_STOP_CONVERGED;
        }
    }
    return KG_STOP_NONE;
}

int kg_recheck_pick(const kg_stop_cfg *sc, int r_min, int r_max, unsigned long long seed, int i, int n_kept,
                    double gpu_s, double wall_s, int n_checks, double checks_s)
{
    const double per_gpu = n_kept > 0 ? gpu_s / n_kept : 0, per_wall = wall_s > 0 ? wall_s / (i + 1) : 0;
    double n_est = sc->max_samples;
    if (per_gpu > 0)
        n_est = fmin(n_est, ceil(sc->min_gpu_s / per_gpu));
    if (per_wall > 0)
        n_est = fmin(n_est, floor(sc->max_wall_s / per_wall));
    n_est = fmax(n_est, sc->min_samples > 1 ? sc->min_samples : 1);
    double r = r_min;
    if (n_checks > 0 && checks_s > 0 && per_wall > 0)
        r = fmin(fmax(r, 0.05 * n_est * per_wall / (checks_s / n_checks)), r_max);
    unsigned long long x = seed ^ ((unsigned long long)i * 0xD1B54A32D192ED03ull); /* a draw of (seed, i) */
    return (double)(kg_splitmix64(&x) >> 11) * (1.0 / 9007199254740992.0) < r / n_est;
}
