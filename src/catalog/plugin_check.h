/* Validation of a candidate's kernel table against the catalog. Plain C: the
 * worker runs it after dlopen(), the tests run it on CPU-built libraries.
 * The rule: a table of ABI version 2 whose records are at least as large as
 * this kgate's kgate_kernel (later, larger records are read by their size);
 * every kernel with a valid unique name, a catalog operator and a dtype it
 * supports, an index dtype of int32 or int64 exactly when the operator has
 * index inputs, the operator's tensor counts, a launch function, and a
 * scalar list naming only the operator's scalars and every required one.
 * A version-1 table (kgate_plugin_v1) is refused with a line that says how to
 * move on. Every error is KG_EXIT_CANDIDATE and names the file. */
#ifndef KG_PLUGIN_CHECK_H
#define KG_PLUGIN_CHECK_H

#include <kgate/plugin.h>

#include "../base/kg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The i-th kernel record of a table (records are p->kernel_size apart). */
const kgate_kernel *kg_plugin_kernel(const kgate_plugin *p, uint32_t i);

/* Checks a table as the rule above says. */
int kg_plugin_validate(const kgate_plugin *p, const char *path, kg_err *err);

/* Loads `path` with dlopen (a path without a slash is taken as ./path, never
 * searched for), finds KGATE_PLUGIN_SYMBOL and validates the table.
 * *handle receives the dlopen handle (close with dlclose). */
int kg_plugin_open(const char *path, void **handle, const kgate_plugin **out, kg_err *err);

/* Splits a candidate "FILE[:KERNEL]" at its last colon when no slash follows
 * it: path gets FILE, kernel KERNEL or "". Returns 0, or -1 when either did
 * not fit (then truncated: a prefix could name another file or kernel). */
int kg_candidate_split(const char *spec, char *path, size_t path_size, char *kernel, size_t kernel_size);
/* Whether `name` is one of the comma-separated names in `list`
 * (CAND.so:NAME,NAME,...). */
int kg_name_in_list(const char *list, const char *name);

/* Whether a candidate source is a Python file (a name ending in ".py"):
 * its worker is the Python host, not this executable (supervise/job.h). */
int kg_source_is_python(const char *source);

/* Finds a kernel by name; NULL if absent. */
const kgate_kernel *kg_plugin_find(const kgate_plugin *p, const char *name);

#ifdef __cplusplus
}
#endif
#endif
