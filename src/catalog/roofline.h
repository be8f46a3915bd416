/* Roofs, essential work and the roofline fraction rho = W / (t * P).
 * Operators declare work (bytes, FLOPs); this module picks the bound from
 * the arithmetic intensity against the ridge point and derives rho. */
#ifndef KG_ROOFLINE_H
#define KG_ROOFLINE_H

#include "../base/kg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Essential work of one operator call: every input read once, every output
 * written once, and the arithmetic the operator must do. */
typedef struct kg_work {
    double bytes;         /* bytes_read + bytes_written */
    double bytes_read;
    double bytes_written;
    double flops;
} kg_work;

/* Which compute roof an operator's FLOPs run on. */
typedef enum kg_unit { KG_UNIT_TENSOR, KG_UNIT_FP32 } kg_unit;

/* The memory roofs. A copy moves as many bytes in as out; a reduction
 * mostly reads, a fill only writes, and an add reads two bytes for each
 * byte it writes; the H200 streams a read-only kernel faster than a copy.
 * The rate for a work model is interpolated in its read fraction
 * f = read / (read + written), linearly through bw_write (f = 0), bw
 * (f = 1/2), bw_triad (f = 2/3) and bw_read (f = 1); a measured triad only
 * raises the line between bw and bw_read, and a rate left 0 is not a point
 * (bw_read and bw_write then take bw's value).
 *
 * kgate times kernels cold: L2 holds only clean lines when a call starts,
 * and the call ends with up to l2_credit bytes of its writes still in L2,
 * not yet in DRAM. So the roof of a call that reads R and writes W bytes
 * is rate * (R + W) / (R + W - c), c = min(l2_credit, W, (R + W) / 2):
 * within 2x of the rate, and the rate itself for work much larger than L2.
 * l2_credit is measured (the bytes a cold call of 4x L2 moved beyond the
 * DRAM rate), 0 for datasheet roofs. */
typedef struct kg_roofs {
    char source[16];             /* "measured" or "datasheet" */
    double bw;                   /* DRAM bytes/s of a copy, read + write counted */
    double bw_read;              /* DRAM bytes/s of a read-only stream */
    double bw_write;             /* DRAM bytes/s of a write-only stream */
    double mma[KG_DTYPE_COUNT];  /* tensor-core FLOP/s by input dtype; fp32 = tf32 */
    double fp32;                 /* CUDA-core fp32 FLOP/s */
    double bw_triad;             /* DRAM bytes/s of a stream reading two bytes a byte written */
    double l2_credit;            /* bytes of writes a cold call can leave in L2 */
} kg_roofs;

typedef struct kg_roof_eval {
    int compute_bound;
    double intensity; /* FLOP per byte */
    double ridge;     /* FLOP per byte where the roofs meet */
    double peak;      /* the roof used: bytes/s or FLOP/s */
    double rho;       /* achieved / peak */
} kg_roof_eval;

/* The DRAM rate for a read/write mix, without the L2 credit (see kg_roofs). */
double kg_roof_rate(const kg_roofs *r, double bytes_read, double bytes_written);
/* The memory roof of a cold call that reads and writes that many bytes:
 * the rate for its mix with the L2 credit (see kg_roofs). */
double kg_roof_memory(const kg_roofs *r, double bytes_read, double bytes_written);

/* The roof the FLOPs of an operator of that unit run on at dtype dt: fp32
 * data runs on the CUDA cores even where the unit is the tensor cores,
 * since the tensor cores' fp32 (TF32, 10 mantissa bits) fails fp32's
 * tolerance (catalog/tolerance.h). */
kg_unit kg_roof_unit(kg_unit unit, kg_dtype dt);

/* Evaluates the roofline for work w done in t_s seconds. Returns -1 (and
 * leaves *out zeroed) when a roof needed is missing or t_s <= 0. */
int kg_roofline(const kg_work *w, kg_unit unit, kg_dtype dt, const kg_roofs *r, double t_s,
                kg_roof_eval *out);

/* Fills datasheet roofs for a device name (H200, H100, A100 known); for other
 * devices the bandwidth comes from 2 * mem_clock_khz * bus_bits / 8 and the
 * compute roofs stay 0. Returns 1 if the device was in the table. */
int kg_roofs_datasheet(const char *device_name, double mem_clock_khz, int bus_bits,
                       kg_roofs *out);

/* Whether measured roofs (from the cache) are plausible: the L2 credit
 * within [0, KG_L2_CREDIT_MAX], and for a device in the datasheet table
 * (others pass) every rate within [0.6, 1.2] of the datasheet's (measured
 * copies reach about 0.9 of the DRAM peak, cuBLASLt 0.8 of the dense
 * tensor peak on the H200). 1, or 0 with the first roof that is not in
 * why: a cache file written by something else is measured again, not
 * trusted (a lower roof would raise every rho, a higher one lower it). */
#define KG_L2_CREDIT_MAX (512.0 * 1024 * 1024) /* a plausible l2_credit: under 8x today's largest L2 */
int kg_roofs_plausible(const kg_roofs *measured, const kg_roofs *datasheet, char *why, size_t why_size);

#ifdef __cplusplus
}
#endif
#endif
