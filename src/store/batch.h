/* Batch judging: the manifest, sharding, and the results file (plain C, no
 * GPU; `kgate batch`, src/app/batch_*.c, runs the jobs).
 *
 * The rules:
 *   - a manifest is JSON Lines, one job a line: {"candidate": path, and
 *     optionally "id", "kernel", "op", "dtype", "shape", "gpu" (a GPU index
 *     the job must run on), "options": [..]};
 *     a line that does not parse or breaks a rule (a NUL byte in it, over
 *     64 KiB) is reported with its line number and skipped, and the rest of
 *     the batch goes on; ids are unique (derived from the fields when
 *     absent); manifests, results files and --done files are regular
 *     files (kg_open_regular);
 *   - sharding is deterministic: job i (manifest order) belongs to rank
 *     i mod size; the rank and size come from --shard, else Slurm
 *     (SLURM_PROCID/SLURM_NTASKS), else Open MPI (OMPI_COMM_WORLD_RANK/SIZE),
 *     else PMI (PMI_RANK/PMI_SIZE), else 0 of 1;
 *   - a results file is JSON Lines of schema kgate.batch/1, one line a
 *     finished job ({"schema", "id", "gpu", "exit", "results": [...]}),
 *     each appended with one write() while the writer holds an exclusive
 *     lock on the file (a second batch on the same file is refused); a job
 *     is finished when its line is there, so a rerun skips it, and a torn
 *     last line (a crash mid-write) is cut off and its job run again (a
 *     whole last line that lacks only its newline is finished); so is
 *     one whose line is in a --done file (another run's results, read
 *     only), which lets a batch resume under another rank count;
 *   - merging streams lines, keeping the first line of each id: memory
 *     holds ids, never results;
 *   - a file of kgate serve's answers may hold progress lines (schema
 *     kgate.batch/1 with "event", docs/serve.md) before each answer: they
 *     finish no job and a merge leaves them out. */
#ifndef KG_BATCH_H
#define KG_BATCH_H

#include <limits.h>
#include <stdio.h>

#include "../base/kg.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KG_BATCH_SCHEMA "kgate.batch/1"
#define KG_BATCH_LINE_MAX (4 << 20) /* one results line: a job's results */
#define KG_BATCH_NOTES 16           /* "notes" a results line carries: what its check said */
#define KG_BATCH_NOTE_MAX 320       /* bytes of one note */
#define KG_BATCH_MAX_OPTS 16

typedef struct kg_batch_job {
    int line;                /* manifest line (1-based); 0: from a directory */
    char id[160];
    char candidate[PATH_MAX];
    char kernel[96], op[64], dtype[8], shape[64];
    int gpu;                 /* the GPU the job must run on, or -1 (any) */
    int n_opts;
    char opts[KG_BATCH_MAX_OPTS][128]; /* further `kgate check` options */
} kg_batch_job;

typedef struct kg_batch_jobs {
    kg_batch_job *v;
    int n, cap;
    int n_bad;                /* lines skipped */
    char first_bad[512];      /* the first skipped line's message */
} kg_batch_jobs;

/* Opens path (flags: O_RDONLY, or O_RDWR with O_CREAT and O_APPEND) as a
 * regular file: a FIFO, a device (/dev/zero), a socket or a directory would
 * block the open or never end a read, and is refused, saying which
 * (KG_EXIT_IO). The descriptor (close-on-exec, blocking), or -1 with err. */
int kg_open_regular(const char *path, int flags, kg_err *err);

/* Reads a manifest. Each bad line is reported through `bad` (may be NULL)
 * as one line ("manifest.jsonl:7: ...") and skipped. Returns non-zero only
 * when the file cannot be read (KG_EXIT_IO) or holds no job (KG_EXIT_USAGE). */
int kg_manifest_read(const char *path, kg_batch_jobs *jobs, void (*bad)(void *ud, const char *msg), void *ud,
                     kg_err *err);
/* Parses one manifest line into *j (line number `line`); the error names the field. */
int kg_manifest_line(const char *text, int line, kg_batch_job *j, kg_err *err);
/* Jobs for every candidate file (.so, .py) in a directory, sorted by name. */
int kg_manifest_dir(const char *dir, kg_batch_jobs *jobs, kg_err *err);
void kg_batch_jobs_free(kg_batch_jobs *jobs);

/* The shard: "i/n" when given (else NULL), then the environment. */
int kg_shard_get(const char *given, int *rank, int *size, const char **source, kg_err *err);
static inline int kg_shard_mine(int index, int rank, int size) { return size <= 1 || index % size == rank; }

/* A set of ids (open addressing; ids only). */
typedef struct kg_idset {
    char **v;
    size_t cap, n;
} kg_idset;
int kg_idset_add(kg_idset *s, const char *id); /* 1 added, 0 present, -1 out of memory */
int kg_idset_has(const kg_idset *s, const char *id);
void kg_idset_free(kg_idset *s);

/* The results file: opened for appending under an exclusive lock (fd in
 * *fd); the ids it already finishes go into *done (lines of another schema
 * are an error naming the file; torn or unparsable lines are counted in
 * *torn and ignored). A last line without its newline gets it when it is a
 * whole results line (its job is finished), and is cut off when it is not
 * (*cut: the bytes cut; its job runs again). Errors name the file and the
 * failing call (KG_EXIT_IO). */
int kg_results_open(const char *path, int *fd, kg_idset *done, int *torn, long *cut, kg_err *err);
/* Adds the ids that results file `path` finishes (another run's file, or a
 * merge of several) to *done, streaming; torn lines are counted in *torn.
 * A missing or unreadable file (a directory), lines of another schema, or a
 * file with lines but none a results line are an error naming the file
 * (KG_EXIT_IO). An empty file finishes nothing. */
int kg_results_done(const char *path, kg_idset *done, int *torn, kg_err *err);
/* Appends one line (a newline is added) with one write(). When it cannot
 * be written whole (EFBIG past a file size limit, with SIGXFSZ ignored;
 * ENOSPC), what was written of it is cut off again (ftruncate to the end
 * the file had) and the error says why ("write: ...", KG_EXIT_IO): the file
 * holds whole lines only. A fragment at the end of the file (a writer
 * killed in the middle of its line) is cut off first, so that the line is
 * not glued to it. Writers that share fd serialize their calls. */
int kg_results_append(int fd, const char *line, kg_err *err);
/* Calls fn on every line of results file `path` (a last one without its
 * newline too), streaming; an over-long line is counted in *torn and
 * skipped. A non-zero return
 * of fn stops and is returned. */
int kg_results_each(const char *path, int (*fn)(void *ud, const char *line), void *ud, int *torn, kg_err *err);
/* Streams the results files into `out` (written atomically), the first line
 * of each id kept; *n_lines and *n_dups count what was kept and dropped. */
int kg_results_merge(const char *out, const char *const *in, int n_in, long *n_lines, long *n_dups,
                     kg_err *err);
/* The id of a results line, into id (empty when the line is not a results
 * line, or is a progress line of kgate serve: *event 1, docs/serve.md). */
int kg_results_line_id(const char *line, char *id, size_t size, int *event, kg_err *err);

#ifdef __cplusplus
}
#endif
#endif
