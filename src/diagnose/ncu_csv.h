/* Nsight Compute CSV import: turns the text of `ncu --csv --page raw` (a
 * --log-file, or stdout with ncu's ==PROF== lines and the application's own
 * output mixed in) into kg_kfacts (diagnose/diag.h), one per profiled launch, so
 * the diagnosis rules (diagnose/diagnose.h) can read an ncu export where kgate's
 * own counters (gpu/profile.h) are not at hand. Plain C; no GPU; unit-tested
 * in tests/test_ncu_csv.c and fuzzed by tests/fuzz/fuzz_ncu_csv.c.
 *
 * The format, as ncu 2025.3.1 writes it on the H200 (tests/data/ncu/):
 *   - only lines that start with '"' are CSV; everything else (==PROF==,
 *     ==WARNING==, ==ERROR==, the application's stdout) is skipped wherever it
 *     appears, between data rows too; CRLF line ends and a UTF-8 BOM are fine;
 *   - the header row starts with "ID": "ID","Process ID","Process Name",
 *     "Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",
 *     "Device","CC", then one column per metric (300-450 of them even with
 *     --metrics). A later header row (concatenated exports) starts over;
 *   - an optional units row follows the header, its "ID" field empty
 *     ("ns", "byte", "%", "sector", "register/thread", ...);
 *   - then one row per profiled launch. Fields are double-quoted and may hold
 *     commas and "" (an escaped quote); a row is one line.
 * Quoted lines before the first header are skipped as the application's;
 * after it, every line starting with '"' is a row, so application output
 * that starts with a quote breaks a stdout capture (use --log-file, which
 * keeps it out). Only CSV lines are held to KG_NCU_LINE_MAX: a long line of
 * application output costs nothing and is skipped.
 * Columns are found by name, exactly: ncu's extra .avg/.min/.max columns
 * (what --disable-extra-suffixes suppresses, so that flag is not required)
 * are simply more metrics, and an export from another ncu version parses
 * as far as its columns go.
 *
 * Values: thousands separators ("268,452,352") are stripped; "n/a",
 * "no data", empty or anything else non-numeric leaves the value unknown.
 * Numbers are converted to base units where the units row says otherwise:
 * time to ns (nsecond/ns, usecond/us, msecond/ms, second/s), bytes to bytes
 * (Kbyte/KB, Mbyte/MB, Gbyte/GB, Tbyte/TB by 1000s, as ncu counts;
 * Kibyte/Mibyte/Gibyte by 1024s), byte rates (e.g. "Gbyte/second") to
 * bytes per second, bytes per anything else ("Kbyte/block") to bytes per
 * that; any other unit ("%", "sector", "cycle/nsecond", ...) is kept.
 *
 * What goes where in kg_kfacts:
 *   "Kernel Name" -> name (truncated at a UTF-8 character boundary)
 *   "Block Size", "Grid Size" ("(256, 1, 1)") -> block[3], grid[3]
 *   launch__registers_per_thread -> regs
 *   launch__shared_mem_per_block_{static,dynamic} -> static_smem, dyn_smem
 *   launch__waves_per_multiprocessor -> waves
 *   sm__maximum_warps_per_active_cycle_pct / 100 -> occupancy
 *   the smallest launch__occupancy_limit_{registers,shared_mem,warps,blocks}
 *     -> max_blocks_per_sm, and limiter "registers"/"shared"/"warps"/"blocks"
 *     (on a tie, the first in that order)
 *   device__attribute_multiprocessor_count -> sms
 *   launches = 1 per row; every other numeric column whose name contains
 *   "__" and is a metric name kg_kfacts can hold ([A-Za-z0-9_.], under 96
 *   bytes) -> the metrics table, which keeps KG_KMETRICS_MAX: first the
 *   metrics of kg_ncu_rule_metrics (and three more the rules may read),
 *   then the other counters in column order, then the columns that describe
 *   the launch, the tool or the machine rather than the kernel's work
 *   (launch__, then profiler__/c2clink__/nvlink__/numa__/pmsampling__, then
 *   device__); the rest are dropped. */
#ifndef KG_NCU_CSV_H
#define KG_NCU_CSV_H

#include <stddef.h>

#include "diag.h"
#include "../base/kg.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KG_NCU_LINE_MAX (1u << 20)   /* longest CSV line accepted, bytes (1 MiB) */
#define KG_NCU_FILE_MAX (256u << 20) /* largest file kg_ncu_csv_parse_file reads */

/* The metrics kgate's diagnosis rules read (diagnose/diagnose.c); a CSV without
 * one of these columns is reported in kg_ncu_csv_parse's warn line. */
extern const char *const kg_ncu_rule_metrics[];
extern const int kg_ncu_n_rule_metrics;

/* Parses the text of `ncu --csv --page raw` output: text[0..len), which need
 * not be NUL-terminated (NULL with len 0 is an empty text). Fills up to max
 * kernels (one per profiled launch row, in order) into out[], which the
 * caller owns; *n gets the count filled (rows past max are checked, not
 * kept). warn (may be NULL; warn_size bytes) gets one line naming the
 * columns of kg_ncu_rule_metrics absent from the header ("ncu CSV lacks: a,
 * b, ..."; ends in "..." when it does not fit), or "" when none is, so the
 * caller can say so and go on.
 * Returns 0; or KG_EXIT_USAGE with a one-line message in err naming the
 * problem: no header row, a header without "Kernel Name", a CSV line longer
 * than KG_NCU_LINE_MAX, holding a NUL byte, with a quoted field not closed,
 * or with another number of fields than its header (each with its line
 * number, counted from 1); or KG_EXIT_ENV when memory runs out. On error *n
 * is 0. Allocates two buffers of min(len, KG_NCU_LINE_MAX) + 1 bytes and
 * about 40 bytes per header column (a column takes at least one byte of the
 * header line), all freed before it returns. */
int kg_ncu_csv_parse(const char *text, size_t len, kg_kfacts *out, int max, int *n, char *warn,
                     size_t warn_size, kg_err *err);

/* kg_ncu_csv_parse on the contents of the file at path (at most
 * KG_NCU_FILE_MAX bytes; a pipe works). Returns as kg_ncu_csv_parse does, or
 * KG_EXIT_IO when the file cannot be opened or read, or is larger. */
int kg_ncu_csv_parse_file(const char *path, kg_kfacts *out, int max, int *n, char *warn,
                          size_t warn_size, kg_err *err);

#ifdef __cplusplus
}
#endif
#endif
