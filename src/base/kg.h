/* Shared vocabulary of kgate: data types, shapes, errors and exit codes.
 * Everything here is plain C11 and needs no GPU. */
#ifndef KG_H
#define KG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exit codes of the kgate CLI (docs/cli.md). Verdict codes come first. */
enum {
    KG_EXIT_OK = 0,        /* every verdict OK */
    KG_EXIT_SLOW = 1,      /* worst verdict SLOW */
    KG_EXIT_FAIL = 2,      /* INCORRECT, CRASH, TIMEOUT or IMPOSSIBLE */
    KG_EXIT_USAGE = 3,     /* bad arguments: unknown op, dtype, shape, option */
    KG_EXIT_CANDIDATE = 4, /* bad candidate file: missing, no table, ABI, signature */
    KG_EXIT_ENV = 5,       /* environment: no GPU, driver or library failure */
    KG_EXIT_IO = 6,        /* cannot read or write a file kgate owns */
    KG_EXIT_STOPPED = 7,   /* interrupted (SIGINT, SIGTERM): what was measured is kept */
};

/* An error: the exit code the CLI should use and a one-line message. */
typedef struct kg_err {
    int code;
    char msg[1024];
} kg_err;

/* Seconds on the monotonic clock (deadlines, budgets, wall times). */
double kg_mono(void);

/* A stop asked by a signal (SIGINT, SIGTERM): the CLI's handler records it
 * (async-signal-safe), the job runner kills the running worker, and the
 * commands print and write what was measured before it, then exit with
 * KG_EXIT_STOPPED. */
void kg_stop_request(int sig);
/* The signal that asked for a stop, or 0. */
int kg_stop_requested(void);
/* Installs the handler of SIGINT and SIGTERM that records a stop, without
 * SA_RESTART (a blocked read or wait returns EINTR). With second_ends, a
 * second one ends the process at once, the default way (the measuring
 * commands); without, every one only records (kgate batch's supervisors,
 * which a stop of their process group and then their batch each signal). */
void kg_catch_stop_signals(int second_ends);

/* Records an error (first one wins) and returns code. printf-style. */
int kg_err_set(kg_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Element types kgate knows. X-macro: name, bytes, DLPack code, bits.
 * The floating types hold data; the integer ones hold indices. */
#define KG_DTYPES(X)            \
    X(FP16, "fp16", 2, 2, 16)   \
    X(BF16, "bf16", 2, 4, 16)   \
    X(FP32, "fp32", 4, 2, 32)   \
    X(FP64, "fp64", 8, 2, 64)   \
    X(I32, "int32", 4, 0, 32)   \
    X(I64, "int64", 8, 0, 64)

typedef enum kg_dtype {
#define X(e, s, b, c, bits) KG_##e,
    KG_DTYPES(X)
#undef X
    KG_DTYPE_COUNT
} kg_dtype;

const char *kg_dtype_name(kg_dtype t);
size_t kg_dtype_size(kg_dtype t);
/* Returns 0 and sets *out, or -1 for an unknown name. */
int kg_dtype_parse(const char *s, kg_dtype *out);
/* DLPack type code and bits of a dtype. */
void kg_dtype_dlpack(kg_dtype t, uint8_t *code, uint8_t *bits);
/* 1 for int32 and int64. */
int kg_dtype_is_int(kg_dtype t);

/* A problem shape: up to 12 named extents, e.g. M,N,K or ROWS,COLS
 * (conv2d needs ten: N,C,H,W,K,R,S,STRIDE,PAD,GROUPS). */
#define KG_MAX_DIMS 12
typedef struct kg_shape {
    int n;
    int64_t d[KG_MAX_DIMS];
} kg_shape;

/* Formats "8192x8192" into buf (always NUL-terminated); returns buf. */
char *kg_shape_format(const kg_shape *s, char *buf, size_t size);

/* Writes text (and a final newline) to path atomically: a temporary file in
 * the same directory, renamed into place; nothing is left on failure. The
 * path "-" is standard output (kg_json_to_stdout's, once called).
 * Returns 0, or KG_EXIT_IO with a message naming the file. */
int kg_write_file_atomic(const char *path, const char *text, kg_err *err);
/* Writes all of text and a newline to fd (a pipe or socket: short writes
 * and EINTR retried): 0, or -1 with errno set. */
int kg_write_line(int fd, const char *text);
/* For --json -: keeps standard output for the files written to "-" and
 * sends everything else printed there to standard error from now on, so
 * that standard output holds the JSON alone. 0, or KG_EXIT_IO. */
int kg_json_to_stdout(kg_err *err);

/* Whether `path` may take a command's output (`what` names it in the
 * message: "--json", "-o"), checked before anything runs: not empty, not a
 * directory (nor a name ending in '/'), not an existing file that is not a
 * regular one (a FIFO, a device: an atomic write would replace it), and
 * none of the command's `inputs` (n of them; NULLs skipped): the same file
 * by device and inode where both exist, else the same resolved path; "-"
 * (standard output) passes. 0, or KG_EXIT_IO with one line naming the path
 * (docs/cli.md). */
int kg_output_path_check(const char *what, const char *path, const char *const *inputs, int n, kg_err *err);

/* 1 when a and b name one file: by device and inode where both exist, else
 * by resolved path. */
int kg_same_file(const char *a, const char *b);

/* splitmix64: the next value of the sequence whose state is *state, which
 * it advances; a fixed seed gives a fixed sequence. */
unsigned long long kg_splitmix64(unsigned long long *state);
/* 64-bit values nobody can predict (/dev/urandom; a time-based fallback). */
unsigned long long kg_random64(void);

/* A CUDA tool (cuobjdump, compute-sanitizer): the path in environment
 * variable `env` when it names an executable (env may be NULL), else the
 * first `name` on PATH, in $CUDA_HOME/bin, or in /usr/local/cuda/bin.
 * Returns buf (or env's value), or NULL when none is found. */
const char *kg_find_tool(const char *name, const char *env, char *buf, size_t size);
/* buf = the path `name` in the directory of executable `exe`. */
void kg_beside(const char *exe, const char *name, char *buf, size_t size);
/* The kinds of file kgate ships beside its executable: libkgate.so, the
 * bundled candidates, the Python package's directory, data (the sample run
 * `kgate run` shows without a GPU). */
typedef enum { KG_SHIP_LIB, KG_SHIP_CANDIDATE, KG_SHIP_PYTHON, KG_SHIP_DATA } kg_ship;
/* buf = where file `name` (a path relative to its kind's directory; "" for
 * the directory) of kind `kind` lies for executable `exe`: in the build tree
 * (beside exe; the package in EXE_DIR/../python), else in the installed
 * tree (EXE_DIR/../lib, ../lib/kgate, ../share/kgate/python, ../share/kgate:
 * CMake's install directories). Returns 0 when one exists, else -1 with buf
 * the build-tree path. */
int kg_shipped(const char *exe, kg_ship kind, const char *name, char *buf, size_t size);
/* The Python that kgate's Python side runs in (KGATE_PYTHON, else python3 on
 * PATH) into python, and the package shipped with executable `exe`
 * (kg_shipped) first on PYTHONPATH, once. KG_EXIT_ENV when there is no
 * Python; `why` says who needs it. */
int kg_python_env(const char *exe, const char *why, char *python, size_t size, kg_err *err);
/* size - 1 random hex digits and a NUL into buf. */
void kg_random_hex(char *buf, size_t size);

/* The path of the running executable (empty on failure). */
void kg_self_exe(char *buf, size_t size);

/* In a forked child before exec: closes every descriptor from lo up. */
void kg_close_from(int lo);

/* The parent and process group of process `pid`, from /proc/PID/stat;
 * -1 when it cannot be read (gone, or hidden). */
int kg_proc_parent(long pid, long *ppid, long *pgrp);

/* Appends s and its NUL to buf at *len (a message of NUL-separated
 * fields), advancing *len; -1 when it would pass cap bytes (nothing
 * written). */
int kg_put_field(char *buf, size_t cap, size_t *len, const char *s);

/* Kills (SIGKILL) and reaps every child of this process but `spare` (0:
 * none), and each child's process group, until none is left: in a child
 * subreaper, whatever a dead child left behind, once it has been reparented
 * here. Children come from /proc/self/task/TID/children (a scan of /proc
 * where the kernel lacks it). Never blocks: it waits at most
 * KG_REAP_WAIT_S seconds in all; when children are still there then (a
 * process in uninterruptible sleep), it says so on stderr in one line
 * naming their pids and returns -1 (the caller should no longer trust what
 * runs here: a batch supervisor drains its GPU); else 0. */
#define KG_REAP_WAIT_S 10.0
int kg_reap_children(long spare);

/* Waits up to `seconds` for child pid to end (polling every 2 ms): 1 with
 * its wait status in *status (may be NULL), 0 when it still runs then, -1
 * when it is no child to wait for. */
int kg_wait_child(long pid, int *status, double seconds);

#ifdef __cplusplus
}
#endif
#endif
