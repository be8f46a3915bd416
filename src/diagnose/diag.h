/* Diagnosis inputs: what kgate knows about one GPU kernel that a subject
 * launched, from three sources, none of them trusted to be complete:
 *   - static facts of the launch (grid, block, registers, shared and local
 *     memory, theoretical occupancy and its limiter), from the CUDA driver;
 *   - counts of telling SASS instructions in the kernel's code, from
 *     `cuobjdump -sass` of its cubin (diagnose/sass.h);
 *   - hardware counters by metric name, from the CUPTI Range Profiler
 *     (gpu/profile.h) or an Nsight Compute CSV (diagnose/ncu_csv.h).
 * The rules (diagnose/diagnose.h) read these and say why the kernel is slow.
 * Plain C; no GPU. */
#ifndef KG_DIAG_H
#define KG_DIAG_H

#ifdef __cplusplus
extern "C" {
#endif

#define KG_KNAME_MAX 160 /* bytes of a kernel name kept (mangled, truncated) */
#define KG_KMETRICS_MAX 48 /* counters kept per kernel */
#define KG_DIAG_KERNELS_MAX 16 /* kernels of one subject described */

/* One hardware counter: its CUPTI/ncu metric name and value in base units
 * (ns, bytes, sectors, %, ratio), as ncu --print-units base reports them. */
typedef struct kg_metric {
    char name[96];
    double value;
} kg_metric;

/* SASS instruction counts in one function's code (static, not executed). */
typedef struct kg_sass {
    int found;        /* 1 when the function's SASS was read */
    int ldg_128;      /* LDG with .128 (16-byte global loads) */
    int ldg_64;       /* LDG with .64 */
    int ldg_narrow;   /* LDG of 32 bits or less (.U8/.S8/.U16/.S16/plain) */
    int stg_128, stg_narrow; /* STG: 16-byte, and 32 bits or less */
    int ldgsts;       /* LDGSTS (cp.async) */
    int utmaldg;      /* UTMALDG (TMA loads) */
    int hgmma;        /* HGMMA (wgmma) */
    int hmma;         /* HMMA, not counting the HFMA2.MMA register move */
    int ldl, stl;     /* local loads and stores (spills, local arrays) */
    int total;        /* instructions in the function */
} kg_sass;

/* One kernel of a subject. Counts are -1 (or the metric absent) where the
 * source could not say. */
typedef struct kg_kfacts {
    char name[KG_KNAME_MAX];
    int launches;            /* how many times one call of the subject launched it */
    double time_share;       /* its fraction of the subject's GPU time, 0..1 (-1: unknown) */
    /* the launch */
    long long grid[3], block[3];
    int regs;                /* registers per thread */
    int static_smem, dyn_smem; /* bytes per block */
    int local_bytes;         /* local memory per thread (stack frame: spills and local arrays) */
    int max_blocks_per_sm;   /* from the occupancy API */
    double occupancy;        /* theoretical: active warps / max warps per SM, 0..1 */
    char limiter[16];        /* "registers", "shared", "warps", "blocks", or "" */
    double waves;            /* blocks / (blocks per SM x SMs) */
    int sms;                 /* the device's SM count */
    /* the code */
    kg_sass sass;
    char sass_note[128];     /* why there is no SASS, when there is none */
    /* the counters */
    kg_metric m[KG_KMETRICS_MAX];
    int n_m;
} kg_kfacts;

/* Initializes a kfacts: every count unknown (-1), no metrics. */
void kg_kfacts_init(kg_kfacts *k);
/* A metric's value, or NAN when absent. */
double kg_kfacts_metric(const kg_kfacts *k, const char *name);
/* Sets (or replaces) a metric; 0, or -1 when the table is full. */
int kg_kfacts_set(kg_kfacts *k, const char *name, double value);

#ifdef __cplusplus
}
#endif
#endif
