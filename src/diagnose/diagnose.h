/* Diagnosis: why a kernel is slow, as the paper's root-cause taxonomy
 * (RC0a-RC4) plus three causes beyond it, each a rule over the facts of
 * diagnose/diag.h. docs/diagnosis.md is the prose form of every rule; the
 * tests (tests/test_diagnose.c) run each one on recorded counter rows,
 * planted kernels' H200 signatures among them.
 *
 * Rules are data: a row of the rule table (id, title, the paper's fix
 * pattern, the function that weighs the evidence) and named thresholds
 * that a user may change (`--diag-set NAME=VALUE`). Each fired rule says
 * how much of the subject's time it explains ("saving": the fraction of
 * the time a fix would remove, capped by the distance to the roof when the
 * roofline fraction rho is known), its evidence with the thresholds
 * crossed, and a hint. The score that ranks causes is that saving times
 * the kernel's share of the subject's GPU time; a cause scoring at least
 * `score_high` is a high-scoring one.
 *
 * Plain C; no GPU. */
#ifndef KG_DIAGNOSE_H
#define KG_DIAGNOSE_H

#include "diag.h"
#include "../base/kg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Thresholds. X-macro: name, default, what it means (docs/diagnosis.md). */
#define KG_DIAG_PARAMS(X)                                                                                   \
    X(stall_min, 0.30, "a stall reason above this share of warp latency is dominant (ncu CPIStall)")        \
    X(issue_max, 0.80, "issue slots active per cycle below this: the scheduler idles (ncu CPIStall)")       \
    X(busy_max, 60.0, "DRAM % of peak below this: memory is not the limit (ncu SOLBottleneck)")             \
    X(occ_low, 0.25, "achieved occupancy below this: too few warps to hide latency")                        \
    X(occ_gap, 0.10, "theoretical minus achieved occupancy above this: RC2a imbalance (ncu)")               \
    X(sector_use_min, 0.50, "global bytes used per sector below this fraction of 32 B: uncoalesced (RC1)")  \
    X(width_min, 8.0, "bytes per thread per global load below this, no 16-byte loads: unvectorized (RC0b)") \
    X(narrow_cost, 0.25, "time a coalesced but unvectorized kernel loses (scalar vs float4 copy, H200)")    \
    X(local_share_min, 0.05, "local sectors over all L1 sectors above this: spills matter (RC3)")           \
    X(excess_dram, 1.50, "DRAM bytes above this multiple of the essential bytes: excess traffic")           \
    X(l2_hit_min, 50.0, "a GEMM's L2 hit rate (%) below this, with excess DRAM: RC2b")                      \
    X(tensor_min, 30.0, "tensor pipe active (%) below this on a matrix workload: tensor cores idle")        \
    X(launches_max, 4.0, "kernel launches per call above this: launch-bound candidate")                     \
    X(launch_cost, 2e-6, "GPU time (s) each launch after the first costs a call (launch gap on one stream)")  \
    X(near_roof, 0.50, "rho at least this: the kernel runs near its roof (RC4 when a library is faster)")   \
    X(e_slow, 0.80, "E below this: a library path is faster (the gate's E threshold)")                      \
    X(notc_loss, 0.90, "time a matrix kernel loses on CUDA cores (H200: 67 fp32 vs ~800 fp16 TFLOP/s)")    \
    X(tensor_ref, 96.9, "tensor pipe active (%) of a healthy library GEMM (cuBLAS bf16 8192^3, H200)")     \
    X(score_high, 0.30, "a cause scoring at least this is high-scoring")

typedef struct kg_diag_params {
#define X(n, d, doc) double n;
    KG_DIAG_PARAMS(X)
#undef X
} kg_diag_params;

void kg_diag_params_defaults(kg_diag_params *p);
/* Applies "NAME=VALUE"; KG_EXIT_USAGE naming the problem (unknown name,
 * a value that is not a finite number). */
int kg_diag_params_set(kg_diag_params *p, const char *assignment, kg_err *err);
/* The parameter table, for docs and `kgate explain --rules`. */
int kg_diag_param_count(void);
const char *kg_diag_param_name(int i);
const char *kg_diag_param_doc(int i);
double kg_diag_param_default(int i);

/* What the rules know about the subject as a whole. Unknowns are 0. */
typedef struct kg_diag_ctx {
    double t_s;          /* the subject's timed median (s) */
    double rho;          /* roofline fraction, 0 when unknown */
    double e_best;       /* t_best / t, 0 when unknown */
    double bytes;        /* essential bytes (the work model) */
    double flops;        /* essential FLOPs */
    int matrix;          /* a matrix workload (FLOPs dominate: matmul and kin) */
    int reduction;       /* the operator reduces along rows (reductions, norms, softmax) */
    double row;          /* elements in the row a catalog reduction reduces (input 0's last extent), 0 when unknown */
    double elem;         /* bytes of an element of its data dtype, 0 when unknown */
    double busy_s;       /* summed kernel time of one call (s), 0 when unknown */
    int launches;        /* kernel launches in one call, 0 when unknown */
    double host_s;       /* host time of the launch call (s) */
    double judged_s;     /* the time the gate judged (time/judged), 0 when unknown: past t_s by
                            the host work it charged (judge/verdict.h) */
} kg_diag_ctx;

#define KG_CAUSE_ID_MAX 8
typedef struct kg_cause {
    char id[KG_CAUSE_ID_MAX]; /* "RC0a" ... "RC4", "LAUNCH", "DRAM", "NOTC" */
    const char *title;
    const char *hint;          /* the paper's fix pattern */
    const char *locus;         /* where the fix belongs: authoring, codegen, library (kg_diag_rule_locus) */
    char kernel[KG_KNAME_MAX]; /* the kernel it is about, "" for the whole subject */
    double saving;             /* fraction of the kernel's time a fix would remove */
    double score;              /* saving x the kernel's time share */
    double headroom;           /* 1 / (1 - score): the subject's speedup if fixed */
    char evidence[512];        /* the values and the thresholds they crossed */
} kg_cause;

#define KG_CAUSES_MAX 32

/* Runs every rule on every kernel (and the subject-wide ones once) and
 * fills out[] ranked by score, highest first; *n gets how many fired.
 * kernels[] with time_share < 0 are weighted equally. */
void kg_diagnose(const kg_kfacts *kernels, int nk, const kg_diag_ctx *ctx, const kg_diag_params *p,
                 kg_cause *out, int max, int *n);

/* Rule ids, titles and hints, in table order (docs, explain --rules). */
int kg_diag_rule_count(void);
const char *kg_diag_rule_id(int i);
const char *kg_diag_rule_title(int i);
const char *kg_diag_rule_hint(int i);
/* The title and hint of a rule id, or NULL for an unknown one. */
const char *kg_diag_title_of(const char *id);
const char *kg_diag_hint_of(const char *id);
/* Where a rule's fix belongs, by the paper's taxonomy for DSL kernels:
 * "authoring" (the kernel's author), "codegen" (the DSL's compiler: in CUDA
 * C, the author again) or "library" (what a mature vendor library has:
 * tuning, algorithm choice). By table index, or by id (NULL if unknown). */
const char *kg_diag_rule_locus(int i);
const char *kg_diag_locus_of(const char *id);
/* locus as the rule table spells it when one of id's rules has it (a
 * results file's word, never kept as given), else kg_diag_locus_of(id). */
const char *kg_diag_locus_as(const char *id, const char *locus);

/* The planted labels a kernel summary names at its end, e.g.
 * "one thread walks each row serially (RC0a)" or "... (RC0a, RC1)": fills
 * up to max ids; returns how many (0 when it names none). */
int kg_diag_planted(const char *summary, char ids[][KG_CAUSE_ID_MAX], int max);

#ifdef __cplusplus
}
#endif
#endif
