/* The diagnosis rules (diagnose/diagnose.h): one function per cause, a table
 * of them, and the ranking. docs/diagnosis.md states every rule. */
#include "diagnose.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/kg.h"
#include "../base/text.h"
#include "../judge/verdict.h"

/* ------------------------------------------------------------ thresholds */

static const struct {
    const char *name, *doc;
    double def;
    size_t off;
} params[] = {
#define X(n, d, doc) {#n, doc, d, offsetof(kg_diag_params, n)},
    KG_DIAG_PARAMS(X)
#undef X
};
#define N_PARAMS ((int)(sizeof params / sizeof params[0]))

void kg_diag_params_defaults(kg_diag_params *p)
{
    for (int i = 0; i < N_PARAMS; i++)
        *(double *)((char *)p + params[i].off) = params[i].def;
}

int kg_diag_params_set(kg_diag_params *p, const char *a, kg_err *err)
{
    const char *eq = strchr(a, '=');
    if (!eq)
        return kg_err_set(err, KG_EXIT_USAGE, "--diag-set '%.100s': want NAME=VALUE", a);
    for (int i = 0; i < N_PARAMS; i++)
        if (strlen(params[i].name) == (size_t)(eq - a) && strncmp(params[i].name, a, (size_t)(eq - a)) == 0) {
            char *end;
            double v = strtod(eq + 1, &end);
            if (end == eq + 1 || *end || !isfinite(v))
                return kg_err_set(err, KG_EXIT_USAGE, "--diag-set %s: '%.60s' is not a finite number",
                                  params[i].name, eq + 1);
            *(double *)((char *)p + params[i].off) = v;
            return 0;
        }
    return kg_err_set(err, KG_EXIT_USAGE, "--diag-set: unknown threshold '%.*s' (kgate explain --rules lists them)",
                      (int)(eq - a > 60 ? 60 : eq - a), a);
}

int kg_diag_param_count(void) { return N_PARAMS; }
const char *kg_diag_param_name(int i) { return i >= 0 && i < N_PARAMS ? params[i].name : NULL; }
const char *kg_diag_param_doc(int i) { return i >= 0 && i < N_PARAMS ? params[i].doc : NULL; }
double kg_diag_param_default(int i) { return i >= 0 && i < N_PARAMS ? params[i].def : NAN; }

/* -------------------------------------------------------- derived values */

/* What the rules read, derived once per kernel; NAN where unknown. */
typedef struct derived {
    double ls, bar;          /* long-scoreboard and barrier shares of warp latency */
    double issue;            /* issue slots active per cycle */
    double dram_pct;         /* DRAM % of peak */
    double occ, occ_theo;    /* achieved and theoretical occupancy, 0..1 */
    double use_ld, use_st;   /* bytes used per sector / 32, loads and stores */
    double share_ld, share_st; /* their shares of the global sectors */
    double width;            /* bytes per thread per global load */
    double local_share;      /* local sectors / (local + global load) sectors */
    double dram_bytes;
    double l2_hit;           /* % */
    double tensor;           /* tensor pipe active % */
    double gmma;             /* HGMMA instructions executed */
    double ctas, warps;      /* blocks launched, warps launched */
    double dur;              /* ns */
} derived;

static double M(const kg_kfacts *k, const char *n) { return kg_kfacts_metric(k, n); }

static void derive(const kg_kfacts *k, derived *d)
{
    double lat = M(k, "smsp__average_warp_latency_per_inst_issued.ratio");
    d->ls = M(k, "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio") / lat;
    d->bar = M(k, "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio") / lat;
    if (!(lat > 0))
        d->ls = d->bar = NAN;
    d->issue = M(k, "smsp__issue_active.avg.per_cycle_active");
    d->dram_pct = M(k, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed");
    if (isnan(d->dram_pct))
        d->dram_pct = M(k, "dram__throughput.avg.pct_of_peak_sustained_elapsed");
    d->occ = M(k, "sm__warps_active.avg.pct_of_peak_sustained_active") / 100;
    d->occ_theo = k->occupancy >= 0 ? k->occupancy : NAN;
    d->use_ld = M(k, "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct") / 100;
    d->use_st = M(k, "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct") / 100;
    {
        double ls_ = M(k, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
               ss_ = M(k, "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum");
        double t_ = (isnan(ls_) ? 0 : ls_) + (isnan(ss_) ? 0 : ss_);
        /* unknown sector counts: each direction weighs fully */
        d->share_ld = t_ > 0 && !isnan(ls_) ? ls_ / t_ : 1;
        d->share_st = t_ > 0 && !isnan(ss_) ? ss_ / t_ : 1;
    }
    double bytes = M(k, "smsp__sass_data_bytes_mem_global_op_ld.sum"),
           inst = M(k, "smsp__sass_inst_executed_op_global_ld.sum");
    d->width = inst > 0 ? bytes / (32 * inst) : NAN;
    double lld = M(k, "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"),
           lst = M(k, "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"),
           gld = M(k, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum");
    double loc = (isnan(lld) ? 0 : lld) + (isnan(lst) ? 0 : lst);
    d->local_share = isnan(lld) && isnan(lst) ? NAN : loc + (isnan(gld) ? 0 : gld) > 0 ? loc / (loc + (isnan(gld) ? 0 : gld)) : 0;
    double rd = M(k, "dram__bytes_read.sum"), wr = M(k, "dram__bytes_write.sum");
    d->dram_bytes = isnan(rd) && isnan(wr) ? NAN : (isnan(rd) ? 0 : rd) + (isnan(wr) ? 0 : wr);
    d->l2_hit = M(k, "lts__t_sector_hit_rate.pct");
    if (d->l2_hit > 100)
        d->l2_hit = 100; /* over 100% seen at low traffic (150%) */
    d->tensor = M(k, "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active");
    d->gmma = M(k, "sm__inst_executed_pipe_tensor_op_gmma.sum");
    d->ctas = M(k, "sm__ctas_launched.sum");
    double threads = k->block[0] > 0 ? (double)k->block[0] * (double)(k->block[1] > 0 ? k->block[1] : 1) *
                                           (double)(k->block[2] > 0 ? k->block[2] : 1)
                                     : NAN;
    double grid = k->grid[0] > 0 ? (double)k->grid[0] * (double)(k->grid[1] > 0 ? k->grid[1] : 1) *
                                       (double)(k->grid[2] > 0 ? k->grid[2] : 1)
                                 : NAN;
    if (isnan(d->ctas))
        d->ctas = grid;
    d->warps = d->ctas * ceil(threads / 32);
    d->dur = M(k, "gpu__time_duration.sum");
}

/* ----------------------------------------------------------------- rules */

/* A rule's verdict on one kernel (or the subject): saving in 0..1, or 0
 * when it does not fire; evidence written when it fires. */
typedef struct rule_in {
    const kg_kfacts *k;   /* NULL for subject-wide rules */
    const derived *d;
    const kg_diag_ctx *c;
    const kg_diag_params *p;
    const kg_kfacts *all; /* every kernel, for subject-wide rules */
    const derived *alld;
    const double *share; /* every kernel's share of the call's time */
    int nk;
    int fired_rc0a;       /* RC0a fired on this kernel (RC2a's few-warps case defers to it) */
    int any_rc1;          /* some kernel is uncoalesced (explains excess DRAM) */
} rule_in;

typedef double (*rule_fn)(const rule_in *in, char *ev, size_t n);

static int sms_of(const kg_kfacts *k) { return k->sms > 0 ? k->sms : 132; }

/* Every thread holds and walks the whole row (TileLang's T.serial over a
 * row-sized fragment): its local memory holds at least a row of the data
 * dtype, each warp issues at least half a row's worth of global load
 * instructions (one element each: the walk), and local memory carries the
 * traffic (the spill is the walk's, and the cooperative rewrite removes it
 * with the walk). A slice of a row in a local array (logsumexp v1's 64
 * threads a row) issues far fewer loads a warp and is RC3's alone. */
static int whole_row_local(const rule_in *in)
{
    const kg_diag_ctx *c = in->c;
    const derived *d = in->d;
    double ld = M(in->k, "smsp__sass_inst_executed_op_global_ld.sum");
    return c->reduction && c->row > 0 && in->k->local_bytes >= (c->elem > 0 ? c->elem : 2) * c->row &&
           ld > 0 && d->warps > 0 && ld / d->warps >= c->row / 2 && !isnan(d->local_share) &&
           d->local_share >= in->p->local_share_min;
}

static double rc0a(const rule_in *in, char *ev, size_t n)
{
    /* a reduction that leaves memory idle because one thread walks each
     * row: either its siblings wait at a barrier while it does, or there
     * are only as many threads as rows (few warps); or every thread holds
     * the whole row in local memory. Other local-memory latency is RC3's,
     * a busy memory system not this cause's */
    const derived *d = in->d;
    const kg_diag_params *p = in->p;
    if (whole_row_local(in)) {
        snprintf(ev, n, "%d B of local memory per thread, a whole row of %.0f elements (%.0f B each), and %.0f "
                 "global load instructions per warp for the row's %.0f: every thread holds and walks the row; "
                 "long-scoreboard stalls %.2f of warp latency, local-memory sectors %.0f%% of L1 traffic (the spill "
                 "is the walk's)",
                 in->k->local_bytes, in->c->row, in->c->elem > 0 ? in->c->elem : 2,
                 M(in->k, "smsp__sass_inst_executed_op_global_ld.sum") / d->warps, in->c->row,
                 isnan(d->ls) ? 0 : d->ls, 100 * d->local_share);
        /* the rewrite removes the walk and the spill: all but the roof
         * (add() caps the saving at 1 - rho) */
        return 1;
    }
    if (!in->c->reduction || (!isnan(d->dram_pct) && d->dram_pct >= p->busy_max) ||
        (!isnan(d->local_share) && d->local_share >= p->local_share_min))
        return 0;
    int waits = !isnan(d->bar) && d->bar >= p->stall_min;
    int few = (!isnan(d->occ) && d->occ < p->occ_low) || (!isnan(d->ctas) && d->ctas < sms_of(in->k));
    if (!waits && !few)
        return 0;
    size_t o = 0;
    ev[0] = '\0';
    if (waits)
        kg_append(ev, n, &o, "barrier stalls %.2f of warp latency (>= %.2f): the block waits while "
                      "one thread walks the row; ", d->bar, p->stall_min);
    if (few)
        kg_append(ev, n, &o, "achieved occupancy %.1f%% (< %.0f%%), %.0f blocks on %d SMs; ",
                      100 * (isnan(d->occ) ? 0 : d->occ), 100 * p->occ_low, d->ctas, sms_of(in->k));
    kg_append(ev, n, &o, "long-scoreboard stalls %.2f; DRAM %.1f%% of peak (< %.0f)",
             isnan(d->ls) ? 0 : d->ls, isnan(d->dram_pct) ? 0 : d->dram_pct, p->busy_max);
    /* what is left of the memory system's time */
    return 1 - (isnan(d->dram_pct) ? 0 : d->dram_pct / 100);
}

static double rc0b(const rule_in *in, char *ev, size_t n)
{
    const derived *d = in->d;
    const kg_kfacts *k = in->k;
    const kg_diag_params *p = in->p;
    int sass_narrow = k->sass.found && k->sass.ldg_128 == 0 && k->sass.ldg_narrow > 0 && k->sass.ldgsts <= 0 &&
                      k->sass.utmaldg <= 0;
    int narrow = !isnan(d->width) ? d->width < p->width_min && (!k->sass.found || k->sass.ldg_128 == 0) : sass_narrow;
    if (!narrow || (!isnan(d->use_ld) && d->use_ld < p->sector_use_min))
        return 0; /* uncoalesced loads are RC1's */
    if (in->c->matrix && (k->sass.hgmma > 0 || k->sass.hmma > 0))
        return 0; /* a tensor-core GEMM stages through shared memory: its LDG width is not the limit */
    /* unmeasured (a long kernel's diagnosis without the SASS-patched
     * counters, an ncu CSV without them): the SASS says narrow, and the
     * headroom assumes 2-byte loads */
    double w = isnan(d->width) ? 2 : d->width;
    size_t o = 0;
    ev[0] = '\0';
    if (isnan(d->width))
        kg_append(ev, n, &o, "global loads narrower than 16 B (width not measured; 2 B assumed)");
    else
        kg_append(ev, n, &o, "global loads of %.1f B per thread (< %.0f)", w, p->width_min);
    if (k->sass.found)
        kg_append(ev, n, &o, "; SASS: %d LDG.128, %d narrower LDG", k->sass.ldg_128, k->sass.ldg_narrow);
    return p->narrow_cost * (1 - fmin(w, 16) / 16);
}

static double rc1(const rule_in *in, char *ev, size_t n)
{
    const derived *d = in->d;
    const kg_diag_params *p = in->p;
    int ld = !isnan(d->use_ld) && d->use_ld < p->sector_use_min;
    int st = !isnan(d->use_st) && d->use_st < p->sector_use_min;
    if (!ld && !st)
        return 0;
    /* the wasted share of the sector traffic, each direction by its share
     * of the sectors (a reduction's few narrow stores do not count) ... */
    double waste = (ld ? (1 - d->use_ld) * d->share_ld : 0) + (st ? (1 - d->use_st) * d->share_st : 0);
    /* ... costs time in proportion to how busy the memory path is: DRAM,
     * or the L1/L2 traffic of many warps (ncu's MemoryCacheAccessPattern
     * weighs by the unit's throughput, which the default set lacks) */
    double busy = fmax(isnan(d->dram_pct) ? 0 : d->dram_pct / 100, isnan(d->occ) ? 0 : d->occ);
    if (isnan(d->dram_pct) && isnan(d->occ))
        busy = 1;
    snprintf(ev, n, "global %s use %.1f of 32 bytes per sector (< %.0f), %.0f%% of the sectors; DRAM %.1f%% of peak, "
             "achieved occupancy %.1f%%",
             ld && st ? "loads and stores" : ld ? "loads" : "stores", 32 * fmin(ld ? d->use_ld : 1, st ? d->use_st : 1),
             32 * p->sector_use_min, 100 * fmin(1, (ld ? d->share_ld : 0) + (st ? d->share_st : 0)),
             isnan(d->dram_pct) ? 0 : d->dram_pct, isnan(d->occ) ? 0 : 100 * d->occ);
    return waste * busy;
}

static double rc2a(const rule_in *in, char *ev, size_t n)
{
    const derived *d = in->d;
    const kg_kfacts *k = in->k;
    const kg_diag_params *p = in->p;
    int sms = sms_of(k);
    double best = 0;
    size_t o = 0;
    ev[0] = '\0';
    /* too few warps for the SMs, unless a serial reduction explains it (a
     * GEMM on tensor cores runs few warps by design: its case is below) */
    if (!in->fired_rc0a && !in->c->matrix && !isnan(d->warps) && d->warps > 0) {
        double want = sms * 32.0; /* half the 64 warps an SM holds: enough to hide DRAM latency */
        if (d->warps < want && (isnan(d->dram_pct) || d->dram_pct < p->busy_max)) {
            best = fmax(best, 1 - d->warps / want);
            kg_append(ev, n, &o, "%.0f blocks, %.0f warps for %d SMs (%.2f waves)", d->ctas,
                          d->warps, sms, k->waves >= 0 ? k->waves : d->ctas / sms);
        }
    }
    if (!in->fired_rc0a && !isnan(d->occ) && !isnan(d->occ_theo) && d->occ_theo - d->occ > p->occ_gap &&
        d->occ < 0.5) {
        best = fmax(best, (d->occ_theo - d->occ) / d->occ_theo);
        kg_append(ev, n, &o, "%sachieved occupancy %.1f%% against %.1f%% theoretical (gap > %.0f)",
                      o ? "; " : "", 100 * d->occ, 100 * d->occ_theo, 100 * p->occ_gap);
    }
    if (in->c->matrix && !isnan(d->tensor) && d->tensor >= p->tensor_min && d->tensor < 0.8 * p->tensor_ref) {
        best = fmax(best, 1 - d->tensor / p->tensor_ref);
        kg_append(ev, n, &o, "%stensor pipe active %.1f%% against a library GEMM's %.1f%%",
                      o ? "; " : "", d->tensor, p->tensor_ref);
    }
    return best;
}

static double rc2b(const rule_in *in, char *ev, size_t n)
{
    const derived *d = in->d;
    const kg_diag_params *p = in->p;
    if (!in->c->matrix || isnan(d->l2_hit) || d->l2_hit >= p->l2_hit_min || isnan(d->dram_bytes) ||
        isnan(d->dram_pct) || d->dram_pct < p->busy_max || /* residency costs only a DRAM-bound GEMM */
        in->c->bytes <= 0 || d->dram_bytes < p->excess_dram * in->c->bytes)
        return 0;
    snprintf(ev, n, "L2 hit rate %.1f%% (< %.0f), DRAM %.1f%% of peak; DRAM moved %.3g GB, %.1fx the %.3g GB "
             "essential (> %.1fx)",
             d->l2_hit, p->l2_hit_min, d->dram_pct, d->dram_bytes * 1e-9, d->dram_bytes / in->c->bytes, in->c->bytes * 1e-9,
             p->excess_dram);
    return 1 - in->c->bytes / d->dram_bytes;
}

static double rc3(const rule_in *in, char *ev, size_t n)
{
    const derived *d = in->d;
    const kg_kfacts *k = in->k;
    const kg_diag_params *p = in->p;
    if (!isnan(d->local_share)) {
        if (d->local_share < p->local_share_min)
            return 0;
        snprintf(ev, n, "local-memory sectors %.0f%% of L1 traffic (>= %.0f%%); %d registers, %d B of local memory "
                 "per thread%s%s%s",
                 100 * d->local_share, 100 * p->local_share_min, k->regs, k->local_bytes,
                 k->limiter[0] ? "; occupancy limited by " : "", k->limiter,
                 whole_row_local(in) ? "; a whole row per thread: RC0a's rewrite removes it" : "");
        return d->local_share;
    }
    /* no counters: the code alone */
    if (k->sass.found && k->sass.ldl + k->sass.stl > 0 && k->local_bytes > 0) {
        snprintf(ev, n, "SASS: %d LDL, %d STL; %d B of local memory per thread (no counters to weigh it)",
                 k->sass.ldl, k->sass.stl, k->local_bytes);
        return 0.1;
    }
    return 0;
}

static double notc(const rule_in *in, char *ev, size_t n)
{
    const derived *d = in->d;
    const kg_kfacts *k = in->k;
    if (!in->c->matrix)
        return 0;
    int idle = !isnan(d->tensor) ? d->tensor < in->p->tensor_min && !(d->gmma > 0)
                                 : k->sass.found && k->sass.hgmma == 0 && k->sass.hmma == 0;
    if (!idle)
        return 0;
    if (!isnan(d->tensor))
        snprintf(ev, n, "tensor pipe active %.1f%% (< %.0f)%s", d->tensor, in->p->tensor_min,
                 k->sass.found ? (k->sass.hgmma + k->sass.hmma ? "" : "; SASS has no HGMMA or HMMA") : "");
    else
        snprintf(ev, n, "SASS has no HGMMA or HMMA instruction");
    return in->p->notc_loss;
}

/* subject-wide */

static double launch_bound(const rule_in *in, char *ev, size_t n)
{
    /* counted from launches, not from the profiled durations: replayed
     * kernels run with warm caches, so their sum says nothing of the gaps
     * in a cold, timed call */
    const kg_diag_ctx *c = in->c;
    const kg_diag_params *p = in->p;
    if (!(c->t_s > 0))
        return 0;
    double lost = c->launches > p->launches_max ? (c->launches - 1) * p->launch_cost : 0;
    /* host work in the launch call that the GPU work does not hide: the
     * verdict's time is the GPU time plus it (judge/verdict.h), with the
     * allowance of the candidate's launch path; a result without time/judged
     * (an older kgate) gets a C launch's */
    double host = c->judged_s > 0   ? fmax(c->judged_s - c->t_s, 0)
                  : c->host_s > 0 ? kg_host_charge(c->t_s, c->host_s, KG_HOST_ALLOWANCE_S) - c->t_s
                                  : 0;
    if (!(lost > 0) && !(host > 0))
        return 0;
    size_t w = 0;
    ev[0] = '\0';
    if (lost > 0)
        kg_append(ev, n, &w, "%d kernel launches per call (more than %.0f): about %.1f of its %.1f us go to launch "
                     "gaps (%.1f us each)",
                     c->launches, p->launches_max, lost * 1e6, c->t_s * 1e6, p->launch_cost * 1e6);
    if (host > 0)
        kg_append(ev, n, &w, "%sthe launch call holds the host %.1f us, past what its %.1f us of GPU work "
                 "and the launch path hide: judged on %.1f us, %.1f us more than its GPU time (host-work)",
                 w ? "; " : "", c->host_s * 1e6, c->t_s * 1e6, (c->t_s + host) * 1e6, host * 1e6);
    return fmin((lost + host) / (c->t_s + host), 1);
}

static double total_dram(const rule_in *in)
{
    double s = 0;
    int any = 0;
    for (int i = 0; i < in->nk; i++)
        if (!isnan(in->alld[i].dram_bytes)) {
            s += in->alld[i].dram_bytes * (in->all[i].launches > 0 ? in->all[i].launches : 1);
            any = 1;
        }
    return any ? s : NAN;
}

static double round_trip(const rule_in *in, char *ev, size_t n)
{
    double dram = total_dram(in);
    int passes = 0;
    double main_share = 0;
    for (int i = 0; i < in->nk; i++) {
        passes += in->all[i].launches > 0 ? in->all[i].launches : 1;
        main_share = fmax(main_share, in->share[i]);
    }
    if (passes < 2 || in->c->matrix || isnan(dram) || in->c->bytes <= 0 || dram < in->p->excess_dram * in->c->bytes)
        return 0;
    snprintf(ev, n, "%d kernels per call moved %.3g GB of DRAM, %.1fx the %.3g GB essential (> %.1fx): extra passes "
             "over the data (dtype conversions, scratch buffers) take %.0f%% of the time",
             passes, dram * 1e-9, dram / in->c->bytes, in->c->bytes * 1e-9, in->p->excess_dram,
             100 * (1 - main_share));
    /* the passes besides the main one are what a fused kernel saves */
    return 1 - main_share;
}

static double excess_dram(const rule_in *in, char *ev, size_t n)
{
    double dram = total_dram(in);
    int passes = 0;
    for (int i = 0; i < in->nk; i++)
        passes += in->all[i].launches > 0 ? in->all[i].launches : 1;
    if (passes >= 2 || in->c->matrix || in->any_rc1 || isnan(dram) || in->c->bytes <= 0 ||
        dram < in->p->excess_dram * in->c->bytes)
        return 0; /* several passes: RC0b; a GEMM: RC2b; uncoalesced: RC1 */
    snprintf(ev, n, "DRAM moved %.3g GB, %.1fx the %.3g GB essential (> %.1fx)", dram * 1e-9, dram / in->c->bytes,
             in->c->bytes * 1e-9, in->p->excess_dram);
    return 1 - in->c->bytes / dram;
}

static double rc4(const rule_in *in, char *ev, size_t n)
{
    const kg_diag_ctx *c = in->c;
    if (!(c->e_best > 0) || c->e_best >= in->p->e_slow || !(c->rho >= in->p->near_roof))
        return 0;
    snprintf(ev, n, "rho %.2f (>= %.2f) yet E_best %.2f (< %.2f): a faster path does less work or a different "
             "algorithm",
             c->rho, in->p->near_roof, c->e_best, in->p->e_slow);
    return 1 - c->e_best;
}

typedef struct rule {
    const char *id, *title, *hint;
    const char *locus; /* where the fix belongs (the paper's taxonomy for DSL kernels): authoring, codegen, library */
    rule_fn fn;
    int subject;  /* 1: once for the whole subject */
    int uncapped; /* 1: its saving may exceed 1 - rho (the work model is what it questions) */
} rule;

static const rule rules[] = {
    {"RC0a", "serial reduction: one thread walks a row, latency exposed",
     "reduce cooperatively: a warp or block per row with shuffle/shared-memory trees (TileLang: T.reduce, not "
     "T.serial), several loads in flight per thread",
     "authoring", rc0a, 0, 0},
    {"RC0b", "unvectorized loads or dtype round trips",
     "load 16 bytes per thread (float4/uint4, LDG.128) in the native dtype; drop the .float() round trip and its "
     "extra passes",
     "codegen", rc0b, 0, 0},
    {"RC0b", "unvectorized loads or dtype round trips",
     "load 16 bytes per thread (float4/uint4, LDG.128) in the native dtype; drop the .float() round trip and its "
     "extra passes",
     "authoring", round_trip, 1, 0},
    {"RC1", "uncoalesced or strided access",
     "make a warp's 32 lanes touch consecutive addresses (transpose through shared memory, swap the loop order, "
     "one warp per row), then vectorize",
     "codegen", rc1, 0, 0},
    {"RC2a", "launch configuration or tile choice",
     "fill the GPU: at least a wave of blocks with enough warps per SM; for GEMMs search tiles, GROUP_SIZE_M, "
     "stages and warps (kgate tune)",
     "codegen", rc2a, 0, 0},
    {"RC2b", "L2 residency: the working set streams from DRAM",
     "block for L2: grouped (swizzled) tile order, tiles sized so A and B panels stay resident", "library", rc2b, 0, 0},
    {"RC3", "register spill or occupancy collapse",
     "cut live registers (smaller per-thread fragments, stream the row in tiles), avoid runtime-indexed local "
     "arrays, cap registers with __launch_bounds__ only where it does not spill",
     "codegen", rc3, 0, 0},
    {"RC4", "algorithm: the library does less or different work",
     "change the algorithm (fusion, Winograd, split-K, fewer passes), not the schedule", "library", rc4, 1, 1},
    {"LAUNCH", "launch-bound: many small launches, or host work in the launch call",
     "fuse the launches into one kernel or a CUDA graph; keep host work out of the launch", "authoring", launch_bound,
     1, 0},
    {"DRAM", "excess DRAM traffic beyond the essential bytes",
     "read each input once: fuse passes, keep the row on chip between phases", "authoring", excess_dram, 1, 0},
    {"NOTC", "no tensor cores on a matrix workload",
     "use tensor cores: wgmma/HGMMA on Hopper (or mma.sync), via a library, CUTLASS/CuTe, Triton tl.dot or "
     "TileLang T.gemm",
     "authoring", notc, 0, 0},
};
#define N_RULES ((int)(sizeof rules / sizeof rules[0]))

int kg_diag_rule_count(void) { return N_RULES; }
const char *kg_diag_rule_id(int i) { return i >= 0 && i < N_RULES ? rules[i].id : NULL; }
const char *kg_diag_rule_title(int i) { return i >= 0 && i < N_RULES ? rules[i].title : NULL; }
const char *kg_diag_rule_hint(int i) { return i >= 0 && i < N_RULES ? rules[i].hint : NULL; }

/* The first rule of an id, or NULL. */
static const rule *by_id(const char *id)
{
    for (int i = 0; i < N_RULES; i++)
        if (strcmp(rules[i].id, id) == 0)
            return &rules[i];
    return NULL;
}

const char *kg_diag_title_of(const char *id)
{
    const rule *r = by_id(id);
    return r ? r->title : NULL;
}

const char *kg_diag_hint_of(const char *id)
{
    const rule *r = by_id(id);
    return r ? r->hint : NULL;
}

const char *kg_diag_locus_of(const char *id)
{
    const rule *r = by_id(id);
    return r ? r->locus : NULL;
}
const char *kg_diag_rule_locus(int i) { return i >= 0 && i < N_RULES ? rules[i].locus : NULL; }

const char *kg_diag_locus_as(const char *id, const char *locus)
{
    for (int i = 0; locus && i < N_RULES; i++)
        if (strcmp(rules[i].id, id) == 0 && strcmp(rules[i].locus, locus) == 0)
            return rules[i].locus;
    return kg_diag_locus_of(id);
}

/* ---------------------------------------------------------------- ranking */

static int by_score(const void *a, const void *b)
{
    const kg_cause *x = a, *y = b;
    return (x->score < y->score) - (x->score > y->score);
}

static void add(kg_cause *out, int max, int *n, const rule *r, const char *kernel, double saving, double share,
                const kg_diag_ctx *c, const char *ev)
{
    if (!(saving > 0))
        return;
    if (!r->uncapped && c->rho > 0 && c->rho <= 1) /* a fix cannot take the kernel past its roof */
        saving = fmin(saving, 1 - c->rho);
    saving = fmin(saving, 1);
    /* one entry per (id, kernel): keep the larger */
    for (int i = 0; i < *n; i++)
        if (strcmp(out[i].id, r->id) == 0 && strcmp(out[i].kernel, kernel) == 0) {
            if (saving * share > out[i].score) {
                out[i].saving = saving;
                out[i].score = saving * share;
                out[i].headroom = 1 / fmax(1 - out[i].score, 1e-3);
                snprintf(out[i].evidence, sizeof out[i].evidence, "%s", ev);
                out[i].locus = r->locus;
            }
            return;
        }
    if (*n >= max)
        return;
    kg_cause *o = &out[(*n)++];
    memset(o, 0, sizeof *o);
    snprintf(o->id, sizeof o->id, "%s", r->id);
    o->title = r->title;
    o->hint = r->hint;
    o->locus = r->locus;
    snprintf(o->kernel, sizeof o->kernel, "%s", kernel);
    o->saving = saving;
    o->score = saving * share;
    o->headroom = 1 / fmax(1 - o->score, 1e-3);
    snprintf(o->evidence, sizeof o->evidence, "%s", ev);
}

void kg_diagnose(const kg_kfacts *kernels, int nk, const kg_diag_ctx *ctx, const kg_diag_params *p, kg_cause *out,
                 int max, int *n)
{
    derived d[KG_DIAG_KERNELS_MAX];
    double share[KG_DIAG_KERNELS_MAX], total = 0;
    int any_rc1 = 0;
    char ev[512];
    *n = 0;
    if (nk > KG_DIAG_KERNELS_MAX)
        nk = KG_DIAG_KERNELS_MAX;
    /* each kernel's share of the call's time: measured durations first */
    int have_dur = nk > 0;
    for (int i = 0; i < nk; i++) {
        derive(&kernels[i], &d[i]);
        double t = d[i].dur * (kernels[i].launches > 0 ? kernels[i].launches : 1);
        have_dur &= t > 0;
        total += t > 0 ? t : 0;
    }
    for (int i = 0; i < nk; i++)
        share[i] = have_dur && total > 0 ? d[i].dur * (kernels[i].launches > 0 ? kernels[i].launches : 1) / total
                   : kernels[i].time_share >= 0 ? kernels[i].time_share
                                                : 1.0 / nk;
    for (int i = 0; i < nk; i++) {
        rule_in in = {&kernels[i], &d[i], ctx, p, kernels, d, share, nk, 0, 0};
        for (int r = 0; r < N_RULES; r++) {
            if (rules[r].subject)
                continue;
            ev[0] = '\0';
            double s = rules[r].fn(&in, ev, sizeof ev);
            if (rules[r].fn == rc0a) /* first in the table: RC2a, later, defers to its latency cases */
                in.fired_rc0a = s > 0 && !whole_row_local(&in);
            if (rules[r].fn == rc1 && s > 0)
                any_rc1 = 1;
            add(out, max, n, &rules[r], kernels[i].name, s, share[i], ctx, ev);
        }
    }
    rule_in in = {NULL, NULL, ctx, p, kernels, d, share, nk, 0, any_rc1};
    for (int r = 0; r < N_RULES; r++) {
        if (!rules[r].subject)
            continue;
        ev[0] = '\0';
        add(out, max, n, &rules[r], "", rules[r].fn(&in, ev, sizeof ev), 1, ctx, ev);
    }
    qsort(out, (size_t)*n, sizeof *out, by_score);
}

/* --------------------------------------------------------------- labels */

int kg_diag_planted(const char *summary, char ids[][KG_CAUSE_ID_MAX], int max)
{
    const char *close = summary ? strrchr(summary, ')') : NULL, *open = NULL;
    int n = 0;
    if (!close || close[1])
        return 0; /* the labels end the summary */
    for (const char *q = close; q > summary; q--)
        if (q[-1] == '(') {
            open = q;
            break;
        }
    if (!open)
        return 0;
    for (const char *q = open; q < close && n < max;) {
        while (q < close && (*q == ' ' || *q == ','))
            q++;
        const char *e = q;
        while (e < close && *e != ',' && *e != ' ')
            e++;
        size_t len = (size_t)(e - q);
        if (len > 0 && len < KG_CAUSE_ID_MAX) {
            char id[KG_CAUSE_ID_MAX];
            memcpy(id, q, len);
            id[len] = '\0';
            if (!kg_diag_title_of(id))
                return 0; /* not a label list: "(at most 16 vectors)" */
            snprintf(ids[n++], KG_CAUSE_ID_MAX, "%s", id);
        } else if (len) {
            return 0;
        }
        q = e;
    }
    return n;
}
