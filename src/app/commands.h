/* The commands behind the CLI. Each returns the process exit code and writes
 * one error line (stderr) itself when it fails. */
#ifndef KG_COMMANDS_H
#define KG_COMMANDS_H

#include "options.h"

#ifdef __cplusplus
extern "C" {
#endif

int kg_cmd_devices(const kg_options *o);
int kg_cmd_peaks(const kg_options *o);
int kg_cmd_ops(const kg_options *o);
int kg_cmd_check(const kg_options *o);
int kg_cmd_run(const kg_options *o);
int kg_cmd_tune(const kg_options *o);
const char *kg_version(void);

#ifdef __cplusplus
}
#endif
#endif
