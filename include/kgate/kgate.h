/* kgate's public API: what the kgate command-line tool (src/cli/main.c)
 * uses of libkgate, and all it uses, as curl's tool uses libcurl. Each
 * function returns the process exit code of docs/cli.md (0 every verdict OK,
 * 1 SLOW, 2 INCORRECT/CRASH/TIMEOUT/IMPOSSIBLE, 3 usage, 4 bad candidate, 5
 * environment, 6 file I/O, 7 stopped by a signal) and prints what it has to
 * say. The candidate's ABI is the other public header, plugin.h. */
#ifndef KGATE_KGATE_H
#define KGATE_KGATE_H

#ifdef __cplusplus
extern "C" {
#endif

/* `kgate __worker ARGS`, the worker process the supervisor starts (argv as
 * after "__worker"); never returns: the process ends with its exit code. */
void kgate_worker(int argc, char **argv) __attribute__((noreturn));

/* Once, before any other command runs: the Python fork server handed over
 * by `kgate batch` is taken, and the one kgate starts is stopped at exit. */
void kgate_init(void);

/* A command line (argv[0] is the program): `kgate batch`, `kgate
 * kernelbench`, `kgate __health` take their own arguments; every other
 * command's options are parsed once, checked against the command's table,
 * and the command runs. Without a command: the overview, exit 3. */
int kgate_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
