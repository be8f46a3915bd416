/* The ledger of recorded runs, results/ledger.jsonl (scripts/ledger.py
 * appends to it): one JSON object a line, either an entry naming a results
 * file ("path", relative to the repository holding the ledger's folder),
 * its GPU ("gpu"), "date", and whether it is a suite run ("suite"), or an
 * archive record ({"archived": PATH, "commit": SHA}: the file left the
 * tree; commit SHA holds it). `kgate compare --ledger` reads it to find
 * what a new run is compared against. Plain C, no GPU. */
#ifndef KG_LEDGER_H
#define KG_LEDGER_H

#include <stddef.h>

#include "../base/kg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A line longer than this is refused (the file is not a ledger). */
#define KG_LEDGER_LINE_MAX 65536

/* The results file of the newest suite run (greatest "date"; the later line
 * of a tie) on GPU `gpu` (the device name a results file records) in ledger
 * file `ledger`, with at least one kernel, into path: its "path" resolved
 * against the folder above the ledger's own (results/ledger.jsonl names
 * results/h200/x.json). Archive records of other files are skipped. 0, or
 * KG_EXIT_IO with one line naming the ledger: unreadable, a line that is
 * neither an entry nor an archive record (its number named), no suite run
 * on that GPU, or that run archived (the git command that gives it). */
int kg_ledger_newest_suite(const char *ledger, const char *gpu, char *path, size_t size, kg_err *err);

#ifdef __cplusplus
}
#endif
#endif
