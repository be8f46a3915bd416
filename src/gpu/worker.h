/* The worker: kgate re-executed as `kgate __worker ...` by the supervisor.
 * It is the only process that loads a candidate. It validates the table,
 * checks the kernel against the fp64 reference (random trials, edge cases,
 * a re-check after timing), times it and the library baseline through the
 * timing engine, and reports each step as a JSON line on the event fd, so a
 * crash or a hang loses nothing already measured. */
#ifndef KG_WORKER_H
#define KG_WORKER_H

#ifdef __cplusplus
extern "C" {
#endif

/* Entry point; argv as after "__worker". Returns the process exit code. */
int kg_worker_main(int argc, char **argv);

struct kg_provider;
/* The same, in a host process that brings a provider for Python candidates
 * (gpu/provider.h; python/kgate/_worker.py calls it through ctypes). */
int kg_worker_main_with(int argc, char **argv, const struct kg_provider *python);

#ifdef __cplusplus
}
#endif
#endif
