/* Counting telling instructions in the SASS of each function of a
 * `cuobjdump -sass` listing: vector and narrow global loads and stores,
 * cp.async (LDGSTS), TMA (UTMALDG), wgmma (HGMMA), mma.sync (HMMA) and local
 * memory traffic (LDL/STL). The counts are static (instructions in the code,
 * not executed) and feed kg_sass in diagnose/diag.h, which the rules of
 * diagnose/diagnose.h read. Plain C; no GPU, no cuobjdump: the caller runs it.
 *
 * What the listing looks like (cuobjdump 12.8, sm_90 cubins and fatbins):
 * "Fatbin elf code:" opens each ELF (a .so holds several); in it each
 * function starts with a line "\t\tFunction : <mangled name>", then
 * ".headerflags", then one line per instruction,
 *     <addr>   [@pred] OPCODE.MOD.MOD operands ;   <encoding>
 * where <addr> is the hex address in a C comment (slash-star 00c0 star-slash)
 * and <encoding> a comment holding 0x...; the second encoding word sits alone
 * on the next line and is not an instruction. The function ends at a line of
 * dots. Old formats put dual-issue braces { } around instructions; they are
 * skipped.
 *
 * Classification, by opcode (the first token after an optional predicate
 * such as @P0, @!P1, @!PT, @UP0) and its dot-separated modifiers, matched
 * whole (LDGSTS is not LDG; the cache hint .LTC128B is not a width):
 *   LDG   .128 or wider (.256) -> ldg_128; .64 -> ldg_64; else -> ldg_narrow
 *   STG   .128 or wider -> stg_128; .64 -> neither (diag.h's stg_narrow is
 *         "32 bits or less", and an 8-byte store is not the narrow-store
 *         defect); else (.U8/.S8/.U16/.S16/.32/plain) -> stg_narrow
 *   LDGSTS -> ldgsts; UTMALDG -> utmaldg; HGMMA -> hgmma; HMMA -> hmma;
 *   LDL -> ldl; STL -> stl (any width: STL.128 is one store)
 *   HFMA2.MMA is an HFMA2 issued on the MMA pipe, a register move such as
 *   `HFMA2.MMA R9, -RZ, RZ, 0, 0`: not hmma. LDS/STS/LDC/ULDC and the rest
 *   count only into total, which counts every instruction line, padding NOPs
 *   included. */
#ifndef KG_SASS_H
#define KG_SASS_H

#include <stddef.h>

#include "diag.h"
#include "../base/kg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One function's counts in a cuobjdump listing. */
typedef struct kg_sass_fn {
    char name[KG_KNAME_MAX];
    kg_sass s;
} kg_sass_fn;

/* Scans the text of `cuobjdump -sass FILE`: any number of ELF sections and
 * functions in any order; text need not be NUL-terminated and is only read
 * within len. Fills up to max entries of fns (owned by the caller) in listing
 * order, one per distinct function name, each with found = 1 and its counts;
 * *n gets how many were filled. A name seen again (the same template kernel
 * in two ELFs of one fatbin; in kgate's bundled library the copies are
 * identical) keeps its first copy's counts and takes no entry. When more
 * distinct functions than max appear, the later ones are left out and
 * *truncated (when not NULL) is set to 1, else 0. Names longer than
 * KG_KNAME_MAX - 1 bytes are kept truncated.
 * Returns 0, or KG_EXIT_USAGE with a one-line message in err when the text
 * has no "Function :" header at all (not a SASS listing, or an empty one). */
int kg_sass_scan(const char *text, size_t len, kg_sass_fn *fns, int max, int *n, int *truncated,
                 kg_err *err);

/* Finds `name` (a mangled kernel name, as CUDA reports it) among the n
 * entries of fns; a name longer than the kept KG_KNAME_MAX - 1 bytes matches
 * on that prefix. Returns a pointer into fns, or NULL when absent. */
const kg_sass_fn *kg_sass_find(const kg_sass_fn *fns, int n, const char *name);

/* Counts one instruction's text into s: total and the counter of its class
 * (see above). insn is NUL-terminated and is either the bare instruction
 * ("LDG.E.128.CONSTANT R4, desc[UR4][R2.64] ;") or the text after the
 * address, with an optional leading brace and predicate ("@!P0 LDG.E R9, ...").
 * Empty text counts nothing. Exposed for tests. */
void kg_sass_count(kg_sass *s, const char *insn);

#ifdef __cplusplus
}
#endif
#endif
