/* Validation of a candidate's kernel table against the catalog. Plain C: the
 * worker runs it after dlopen(), the tests run it on CPU-built libraries. */
#ifndef KG_PLUGIN_CHECK_H
#define KG_PLUGIN_CHECK_H

#include <kgate/plugin.h>

#include "kg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Checks ABI version, kernel count, names (non-empty, unique, [A-Za-z0-9_.-]),
 * operator and dtype (known to the catalog), tensor counts (match the
 * operator's signature) and launch pointers. Errors have KG_EXIT_CANDIDATE. */
int kg_plugin_validate(const kgate_plugin *p, const char *path, kg_err *err);

/* Loads `path` with dlopen, finds KGATE_PLUGIN_SYMBOL and validates it.
 * *handle receives the dlopen handle (close with dlclose). */
int kg_plugin_open(const char *path, void **handle, const kgate_plugin **out, kg_err *err);

/* Finds a kernel by name; NULL if absent. */
const kgate_kernel *kg_plugin_find(const kgate_plugin *p, const char *name);

#ifdef __cplusplus
}
#endif
#endif
