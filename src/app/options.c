/* Option parsing for the kgate CLI. */
#include "options.h"
#include "optable.h"

#include "../store/lib_cache.h"
#include "../catalog/plugin_check.h"
#include "../protocol/proto.h"
#include "../base/text.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *commands[] = {"devices", "peaks", "ops",    "check",      "run",  "tune",    "explain",
                                 "compare", "rejudge", "report", "trajectory", "help", "version", NULL};

/* The commands that take the options of a measurement (check's help). */
#define MEASURING "check run tune"


static const char overview[] =
    "kgate: gate a GPU kernel on correctness and performance against the library it imitates\n"
    "\n"
    "usage: kgate COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  devices            list CUDA devices\n"
    "  peaks              measure bandwidth and matrix roofs of this GPU (cached per GPU)\n"
    "  ops                the operator catalog with shapes and work models\n"
    "  check CAND.so[:K]  check and time a candidate's kernels, judge them (CAND.py: Python callables)\n"
    "  kernelbench P.py S.py  a KernelBench solution judged, with KernelBench's own gate beside\n"
    "  tune CAND.so:K     time a kernel's configuration space (--budget N: a sample), best and spread\n"
    "  batch M.jsonl|DIR -o R.jsonl  many candidates on every GPU, resumable, shardable (--merge)\n"
    "  serve --stdio|--socket P  judge requests as they come, one at a time, warm between them\n"
    "  run                run the bundled suite (naive and fast variants, Triton if built)\n"
    "  explain RESULT.json  say again why each kernel of a result is slow (or --from-ncu FILE)\n"
    "  compare A.json B.json  per kernel: B FASTER, SLOWER, SAME or AMBIGUOUS than A\n"
    "  rejudge R.json...  judge recorded results again with this gate (--e-ok, --rho-ok)\n"
    "  report R.json... -o F  an HTML page with a roofline (or Markdown, CSV) of results\n"
    "  trajectory PATH...  an optimizer loop's iterations: verdict, E_best, E_lib, rho, cause\n"
    "  help [COMMAND]     this text, or a command's options\n"
    "  version            version and commit\n"
    "\n"
    "exit codes: 0 every kernel judged OK, 1 worst verdict SLOW or a kernel not judged (SKIPPED),\n"
    "            2 INCORRECT/CRASH/TIMEOUT/IMPOSSIBLE, 3 usage, 4 bad candidate file,\n"
    "            5 no GPU or library failure, 6 file I/O, 7 stopped by SIGINT/SIGTERM\n"
    "            (127 from the loader when cudart, cuBLASLt, CUPTI or cJSON is missing)\n";

/* The options of check, run and tune, a row each with the commands that
 * take it (the option table in parse_args decides; test_options checks that
 * the two agree). */
static const struct {
    const char *cmds, *text;
} measuring_help[] = {
    {MEASURING,
     "  --op OP             only kernels of this operator (kgate ops lists them)\n"},
    {MEASURING,
     "  --dtype DT          only kernels of this dtype (fp16, bf16, fp32)\n"},
    {MEASURING,
     "  --shape S           one shape: a preset (small, medium, large, ...), AxBxC, or N\n"},
    {MEASURING,
     "  --sizes A,B,...     several shapes (default: large); `all`: every preset of each operator\n"},
    {MEASURING,
     "  --json FILE         write results as JSON (docs/results.md), atomically (- : stdout)\n"},
    {MEASURING,
     "  -q, -v              quiet (no progress bar, no table: the exit code, errors and --json),\n"
         "                      or a line on stderr as each job starts\n"},
    {MEASURING,
     "  --hot               no L2 flush between samples (inputs rotate when they fit in L2)\n"},
    {MEASURING,
     "  --flush read|memset how to flush L2 (default read: 2x L2 of clean lines; memset\n"
         "                      leaves dirty lines whose write-back is charged to the kernel)\n"},
    {MEASURING,
     "  --trials N          random-input correctness trials (default 3)\n"},
    {MEASURING,
     "  --seed N            first seed (default 1); each trial uses a fresh one\n"},
    {"tune",
     "  --budget N          tune: time N configurations drawn from --seed (default: all, up to 4096)\n"},
    {"tune",
     "  --knob K=V[,V..]    tune: search only these values of knob K (repeatable), e.g.\n"
         "                      --knob group_size_m=1 --knob num_warps=4,8 (a subspace)\n"},
    {MEASURING,
     "  --time-budget S     check, run, tune: start no job after S seconds; what ran is reported,\n"
         "                      the rest is listed as not run (`incomplete` in the JSON)\n"},
    {MEASURING,
     "  --torch, --torch-compile  also time PyTorch's call (and torch.compile of it) as library\n"
         "                      paths: the paper's E_lib (needs python3 with torch; docs/python.md)\n"},
    {MEASURING,
     "  --no-edge           skip the NaN/Inf/denormal/equal-row input\n"},
    {MEASURING,
     "  --param NAME=VALUE  an operator scalar (kgate ops lists them), e.g. eps=1e-6; repeatable\n"},
    {MEASURING,
     "  --verify-only       check correctness only: no timing, no library paths\n"},
    {MEASURING,
     "  --sandbox           run the candidate's worker sandboxed: rlimits, Landlock (writes only in\n"
         "                      a scratch directory, no TCP), seccomp (no IP sockets, no ptrace)\n"},
    {MEASURING,
     "  --memcheck          also run one checked call of each kernel under compute-sanitizer's\n"
         "                      memcheck and racecheck (when it is installed): an error is INCORRECT\n"},
    {MEASURING,
     "  --diagnose          after timing, say why each kernel is slow: static facts, SASS and\n"
         "                      hardware counters (CUPTI Range Profiler), ranked root causes\n"
         "                      (docs/diagnosis.md); --diagnose=auto only for SLOW verdicts,\n"
         "                      --diagnose=extended adds the SOL throughputs (more replay passes)\n"},
    {MEASURING,
     "  --diag-set N=V      change a diagnosis threshold (kgate explain --rules lists them)\n"},
    {MEASURING,
     "  --diagnose-patched-max S  leave out the SASS-patched counters (sector use, load width),\n"
         "                      which slow a kernel many times over, when one call takes longer than\n"
         "                      S seconds (default 0.1; 0: never collect them)\n"},
    {MEASURING,
     "  --lib-cache         check, run, tune: reuse the library times this GPU measured for the\n"
         "                      very same library job once two measurements agreed, and keep new ones\n"
         "                      ($XDG_CACHE_HOME/kgate/libtimes-<uuid>.jsonl): many candidates of one\n"
         "                      operator time its library paths twice (docs/scale.md; with untrusted\n"
         "                      candidates only with --sandbox, docs/security.md)\n"},
    {MEASURING,
     "  --lib-cache-age S   use a kept library time for S seconds after it was measured (default\n"
         "                      3600; 1 to 864000)\n"},
    {MEASURING,
     "  --no-extra-shapes   do not also check each kernel at three extra shapes (unaligned,\n"
         "                      tiny, unnamed; drawn afresh each run, see extra_shapes_seed)\n"},
    {MEASURING,
     "  --timeout S         per-candidate budget before TIMEOUT (default 120)\n"},
    {"check",
     "  --server SOCK|auto  a running kgate serve judges it (docs/serve.md): the same checks, its\n"
         "                      fork server and library times warm; none there: judged here, said;\n"
         "                      auto: the socket kgate serve --socket auto makes for --device\n"},
    {MEASURING,
     "  --events PATH       check, run, tune: append one JSON line to PATH (a file, a FIFO, /dev/fd/N;\n"
         "                      - : stdout) as each kernel is judged: {\"event\": \"kernel\", \"result\": its\n"
         "                      results entry}\n"},
    {MEASURING,
     "  --pin-sha256 HEX    a Python candidate must still have this SHA-256 when each worker\n"
         "                      imports it (else exit 4); kgate kernelbench pins the files it writes\n"},
    {MEASURING,
     "  --max-noise X       stop sampling at this relative std dev (default 0.005)\n"},
    {MEASURING,
     "  --min-time S        GPU time to accumulate first (default 0.25)\n"},
    {MEASURING,
     "  --max-time S        wall-time cap per measurement (default 15)\n"},
    {MEASURING,
     "  --min-samples N     samples before the noise rule applies (default 10)\n"},
    {MEASURING,
     "  --roof measured|datasheet  roofs for rho (default measured, cached by kgate peaks)\n"},
    {MEASURING,
     "  --e-ok X            E (E_best, else E_lib) that passes the gate, in (0, 1.05] (default 0.80)\n"},
    {MEASURING,
     "  --rho-ok X          rho that passes the gate (near the roof), in (0, 1.05] (default 0.80)\n"},
    {MEASURING,
     "  --host-allowance S  host time a launch call may take for free beyond its GPU time\n"
         "                      (default 50e-6, a Python candidate's 100e-6: docs/cli.md, host-work)\n"},
    {MEASURING,
     "  --device N          CUDA device (default 0)\n"},
    {"run",
     "  --live              run: require a GPU instead of showing the recorded run\n"},
};

/* Each measuring command's usage line. */
static const struct {
    const char *cmd, *usage;
} measuring_usage[] = {
    {"check", "usage: kgate check CANDIDATE.so[:KERNEL[,KERNEL...]] [options]\n"},
    {"run", "usage: kgate run [options]\n  the bundled suite: every operator's naive and fast variants (Triton's and\n"
            "  TileLang's when built) against its library paths\n"},
    {"tune", "usage: kgate tune CANDIDATE.so:KERNEL [--shape S] [--budget N] [--knob K=V[,V..]] [options]\n"},
};

/* The help of check, run or tune: its usage and the options it takes. */
static const char *measuring_text(const char *cmd)
{
    static char buf[8192];
    size_t u = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof measuring_usage / sizeof measuring_usage[0]; i++)
        if (strcmp(measuring_usage[i].cmd, cmd) == 0)
            kg_append(buf, sizeof buf, &u, "%s\n", measuring_usage[i].usage);
    for (size_t i = 0; i < sizeof measuring_help / sizeof measuring_help[0]; i++)
        if (kg_opt_takes(measuring_help[i].cmds, cmd))
            kg_append(buf, sizeof buf, &u, "%s", measuring_help[i].text);
    return buf;
}

static const char explain_help[] =
    "usage: kgate explain RESULT.json [--diag-set NAME=VALUE ...] [--json NEW.json]\n"
    "       kgate explain --from-ncu FILE.csv [--op OP --dtype DT --shape S] [--diag-set ...]\n"
    "       kgate explain --rules\n"
    "  re-runs the diagnosis rules (docs/diagnosis.md) on the facts a result carries (kgate\n"
    "  check --diagnose --json), or on counters from `ncu --csv --page raw` (with --op and\n"
    "  --shape the essential work is known too), and prints the ranked causes with their\n"
    "  evidence and fix; --json writes the result again with the causes re-ranked;\n"
    "  --rules lists the rules and their thresholds.\n";

static const char compare_help[] =
    "usage: kgate compare A.json B.json [--same X] [--regress X] [--json F]\n"
    "       kgate compare --ledger results/ledger.jsonl B.json [...]\n"
    "  per kernel, operator, dtype and shape of two results (two runs, commits or GPUs):\n"
    "  B/A of the median times, and FASTER, SLOWER or SAME when the medians differ by more\n"
    "  than --same (default 0.02) and the confidence intervals agree, AMBIGUOUS when they\n"
    "  overlap; a verdict change is shown. Exit 1 when a kernel is SLOWER by more than\n"
    "  --regress (default 0.05) or its verdict got worse, 0 otherwise (3 usage, 6 files).\n"
    "  --ledger L: A is the newest suite run (kgate run) on B's GPU that ledger L records.\n";

static const char rejudge_help[] =
    "usage: kgate rejudge RESULTS.json... [--e-ok X] [--rho-ok X] [--json NEW.json]\n"
    "  judges the OK and SLOW results of recorded runs again with this kgate's gate (or the\n"
    "  thresholds given) from the evidence each kept (E_best, E_lib, rho, their intervals),\n"
    "  and prints every verdict that changes with its new reason and flags; --json writes\n"
    "  the one input's results re-judged. Other verdicts stand. Exit 0 (3 usage, 6 files).\n";

static const char report_help[] =
    "usage: kgate report RESULTS.json... [-o FILE] [--format html|md|csv]\n"
    "  one self-contained HTML page (an SVG roofline per device, the verdict table, the\n"
    "  per-family summary, the diagnoses), Markdown for a pull-request comment, or CSV;\n"
    "  the format follows FILE's extension (.html, .md, .csv) unless --format says;\n"
    "  without -o (or -o -), Markdown on stdout.\n";

static const char trajectory_help[] =
    "usage: kgate trajectory PATH... [-o PAGE.html]\n"
    "  an optimizer loop's iterations in order, a row a result: verdict, time, E_best, E_lib,\n"
    "  rho and the top cause, then the best iteration. PATH: a results file (one iteration),\n"
    "  a kgate batch results file or a file of kgate serve's answers (one a line), or a\n"
    "  folder of them or of iteration folders, in natural order (it-2 before it-10).\n"
    "  -o PAGE.html: a page instead, E_best and rho against iteration with the OK band\n"
    "  shaded and each iteration coloured by its verdict, and the table (- : stdout).\n";

static const char peaks_help[] =
    "usage: kgate peaks [--force] [--json FILE] [--device N]\n"
    "  measures DRAM bandwidth (copy kernel and cudaMemcpy, 2 GiB buffers, read+write bytes)\n"
    "  and cuBLASLt fp16/bf16/tf32 throughput at 8192^3; caches them per GPU UUID in\n"
    "  $XDG_CACHE_HOME/kgate (--force measures again) and prints them beside the datasheet.\n";

static const char ops_help[] =
    "usage: kgate ops [--op OP]\n"
    "  the operator catalog: each operator's family, signature with extents and types,\n"
    "  scalars, presets, work model, tolerance, input distributions, library paths and\n"
    "  edge semantics (--op: one operator). Needs no GPU.\n";

static const char devices_help[] =
    "usage: kgate devices\n"
    "  the CUDA devices, with NVML's clocks, temperature and power where libnvidia-ml\n"
    "  loads; without a GPU, one line saying why there is none (exit 5).\n";

static const char version_help[] =
    "usage: kgate version\n"
    "  kgate's version and the commit it was built from.\n";

static const char batch_help[] =
    "usage: kgate batch MANIFEST.jsonl|DIR -o RESULTS.jsonl [--gpus all|0,1,..] [--jobs-per-gpu N]\n"
    "                   [--shard I/N] [--done R.jsonl]... [--job-timeout S] [-- CHECK OPTIONS]\n"
    "       kgate batch --merge -o MERGED.jsonl PART.jsonl...\n"
    "  Judges many candidates, each job a `kgate check` on one GPU: one supervisor per GPU\n"
    "  (or --jobs-per-gpu) pulls jobs; every finished job is one line of RESULTS.jsonl, so\n"
    "  a rerun resumes; a GPU that fails its health check is drained and its job moves on;\n"
    "  under srun or mpirun the ranks shard the manifest (SLURM_PROCID/NTASKS,\n"
    "  OMPI_COMM_WORLD_RANK/SIZE) and write RESULTS.jsonl.rank-I-of-N, joined by --merge.\n"
    "  A manifest line: {\"candidate\": path, \"kernel\", \"op\", \"dtype\", \"shape\", \"gpu\",\n"
    "  \"id\", \"options\": [..]} (docs/scale.md).\n"
    "  --done R.jsonl: the jobs that results file (another run's, or a merge) finishes are\n"
    "  not run again, so a batch resumes under another rank count (repeatable, 64 files).\n"
    "  --jobs-per-gpu N (1-4, default 1): N jobs a GPU at once, each job's GPU work still\n"
    "  alone on it (the GPU lock), the rest of one job beside another's GPU work.\n"
    "  --job-timeout S is each job's limit (default 600); exit 3 when lines or candidates were\n"
    "  skipped, 5 when jobs were left undone, 6 for a results file kgate cannot use or\n"
    "  write, 7 when stopped by SIGINT or SIGTERM (what was recorded stays).\n";

static const char serve_help[] =
    "usage: kgate serve --stdio | --socket PATH|auto [--gpu N] [--idle-timeout S] [--job-timeout S]\n"
    "                   [-- CHECK OPTIONS]\n"
    "  A long-lived judge for an optimizer loop: each request is one kgate batch manifest\n"
    "  line ({\"id\", \"candidate\", \"kernel\", \"op\", \"dtype\", \"shape\", \"options\"}),\n"
    "  answered by one kgate batch results line (the check's whole results document)\n"
    "  after a progress line as each kernel is judged ({\"id\", \"event\": \"kernel\", \"result\"}),\n"
    "  one request at a time on GPU N (default 0), each checked by a `kgate check` process\n"
    "  of its own with --lib-cache and CHECK OPTIONS; the next request's Python fork server\n"
    "  is kept warm. --stdio: requests on standard input, answers on standard\n"
    "  output, until its end. --socket: a Unix socket of mode 0600 that answers only this\n"
    "  user (auto: $XDG_RUNTIME_DIR/kgate/serve-gpuN.sock); a second service there is\n"
    "  refused. --idle-timeout S (default 600): the service ends after S seconds without\n"
    "  a request; --job-timeout S (default 600): each request's limit. A bad request gets\n"
    "  an answer with its exit code and error, and the service goes on. A line\n"
    "  {\"cancel\": ID} stops that request, or drops it if queued (its answer: exit 7), and\n"
    "  a client that leaves cancels its own. SIGINT or SIGTERM stops the request running\n"
    "  (its answer says so) and ends the service: exit 7 (docs/serve.md).\n";

static const char kernelbench_help[] =
    "usage: kgate kernelbench PROBLEM.py SOLUTION.py [--json F] [--compile] [--p P] [--timeout S]\n"
    "       kgate kernelbench PROBLEMS_DIR SOLUTIONS_DIR [--json F] [--gpus all|0,1 [--workdir D]\n"
    "                         [--jobs-per-gpu N]]\n"
    "  A KernelBench solution judged as a problem outside the catalog (its Model in fp64 the\n"
    "  reference, eager PyTorch the library path), with KernelBench's own gate beside kgate's\n"
    "  verdict; run by python3 -m kgate (docs/python.md). `kgate kernelbench --help` has all.\n";

const char *kg_usage(const char *c)
{
    if (c && strcmp(c, "batch") == 0)
        return batch_help;
    if (c && strcmp(c, "kernelbench") == 0)
        return kernelbench_help;
    if (c && strcmp(c, "serve") == 0)
        return serve_help;
    if (c && (strcmp(c, "check") == 0 || strcmp(c, "run") == 0 || strcmp(c, "tune") == 0))
        return measuring_text(c);
    if (c && strcmp(c, "peaks") == 0)
        return peaks_help;
    if (c && strcmp(c, "trajectory") == 0)
        return trajectory_help;
    if (c && strcmp(c, "explain") == 0)
        return explain_help;
    if (c && strcmp(c, "compare") == 0)
        return compare_help;
    if (c && strcmp(c, "report") == 0)
        return report_help;
    if (c && strcmp(c, "rejudge") == 0)
        return rejudge_help;
    if (c && strcmp(c, "ops") == 0)
        return ops_help;
    if (c && strcmp(c, "devices") == 0)
        return devices_help;
    if (c && strcmp(c, "version") == 0)
        return version_help;
    return overview;
}


/* Extents in a shape text "AxBxC" (a preset name counts as one). */
static int extent_count(const char *text)
{
    int n = 1;
    for (const char *c = text; *c; c++)
        n += *c == 'x';
    return n;
}

int kg_options_add_presets(kg_options *o, const kg_op *op, kg_err *err)
{
    for (int p = 0; p < op->n_presets; p++) {
        const char *name = op->presets[p].name;
        int seen = 0;
        for (int k = 0; k < o->n_shapes && !seen; k++)
            seen = strcmp(o->shape_texts[k], name) == 0;
        if (seen)
            continue;
        if (o->n_shapes == KG_MAX_SHAPES)
            return kg_err_set(err, KG_EXIT_USAGE, "--sizes all: the selected operators name more than %d presets; "
                              "select fewer (--op) or list them", KG_MAX_SHAPES);
        o->shape_texts[o->n_shapes++] = name;
    }
    return 0;
}

/* What the arguments name before it is resolved: the shapes and the flush
 * as written, and --lib-cache-age (-1: not given). */
typedef struct raw_options {
    const char *sizes, *shape, *flush;
    double lib_cache_age;
} raw_options;


/* A positional argument of the command: a results file, the candidate, or
 * compare's second file. */
static int positional(kg_options *o, const char *a, kg_err *err)
{
    if (strcmp(o->command, "report") == 0 || strcmp(o->command, "rejudge") == 0 ||
        strcmp(o->command, "trajectory") == 0) {
        if (o->n_inputs == KG_MAX_SHAPES)
            return kg_err_set(err, KG_EXIT_USAGE, "%s: at most %d results files", o->command, KG_MAX_SHAPES);
        o->inputs[o->n_inputs++] = a;
        return 0;
    }
    if ((strcmp(o->command, "check") == 0 || strcmp(o->command, "tune") == 0 || strcmp(o->command, "help") == 0 ||
         strcmp(o->command, "explain") == 0 || strcmp(o->command, "compare") == 0) &&
        !o->candidate)
        o->candidate = a;
    else if (strcmp(o->command, "compare") == 0 && !o->second)
        o->second = a;
    else
        return kg_err_set(err, KG_EXIT_USAGE, "unexpected argument '%s'", a);
    return 0;
}

/* --diag-set NAME=VALUE, --knob K=V[,V..] and --param NAME=VALUE: kept as
 * given (each list bounded), checked when the command runs. */
static int keep_value(void *ctx, const char *name, const char *v, kg_err *err)
{
    kg_options *o = ctx;
    if (strcmp(name, "--diag-set") == 0)
        return kg_diag_params_set(&o->diag, v, err) ? err->code : 0;
    const char **list = strcmp(name, "--knob") == 0 ? o->knobs : o->params;
    int *n = strcmp(name, "--knob") == 0 ? &o->n_knobs : &o->n_params;
    int most = strcmp(name, "--knob") == 0 ? (int)(sizeof o->knobs / sizeof o->knobs[0])
                                            : (int)(sizeof o->params / sizeof o->params[0]);
    if (*n == most)
        return kg_err_set(err, KG_EXIT_USAGE, "%s: at most %d", name, most);
    list[(*n)++] = v;
    return 0;
}

/* Every argument after the command, each option once through the table. */
static int parse_args(int argc, char **argv, kg_options *o, raw_options *w, kg_err *err)
{
    const kg_optdef opts[] = {
        {"--hot", KG_OPT_FLAG, &o->hot, 1, 0, NULL, MEASURING, NULL},
        {"-q", KG_OPT_FLAG, &o->quiet, 1, 0, NULL, MEASURING, NULL},
        {"-v", KG_OPT_FLAG, &o->verbose, 1, 0, NULL, MEASURING, NULL},
        {"--no-edge", KG_OPT_FLAG, &o->edge, 0, 0, NULL, MEASURING, NULL},
        {"--live", KG_OPT_FLAG, &o->live, 1, 0, NULL, "run", NULL},
        {"--force", KG_OPT_FLAG, &o->force, 1, 0, NULL, "peaks", NULL},
        {"--verify-only", KG_OPT_FLAG, &o->verify_only, 1, 0, NULL, MEASURING, NULL},
        {"--no-extra-shapes", KG_OPT_FLAG, &o->extra, 0, 0, NULL, MEASURING, NULL},
        {"--sandbox", KG_OPT_FLAG, &o->sandbox, 1, 0, NULL, MEASURING, NULL},
        {"--memcheck", KG_OPT_FLAG, &o->memcheck, 1, 0, NULL, MEASURING, NULL},
        {"--diagnose", KG_OPT_FLAG, &o->diagnose, KG_DIAG_ALWAYS, 0, NULL, MEASURING, NULL},
        {"--diagnose=always", KG_OPT_FLAG, &o->diagnose, KG_DIAG_ALWAYS, 0, NULL, MEASURING, NULL},
        {"--diagnose=auto", KG_OPT_FLAG, &o->diagnose, KG_DIAG_AUTO, 0, NULL, MEASURING, NULL},
        {"--diagnose=extended", KG_OPT_FLAG, &o->diagnose, KG_DIAG_EXTENDED, 0, NULL, MEASURING, NULL},
        {"--rules", KG_OPT_FLAG, &o->rules, 1, 0, NULL, "explain", NULL},
        {"--from-ncu", KG_OPT_STR, &o->from_ncu, 0, 0, NULL, "explain", NULL},
        {"--diag-set", KG_OPT_FN, NULL, 0, 0, NULL, MEASURING " explain", keep_value},
        {"--diagnose-patched-max", KG_OPT_NUM, &o->patched_max_s, 0, 3600, NULL, MEASURING, NULL},
        {"--lib-cache", KG_OPT_FLAG, &o->lib_cache, 1, 0, NULL, MEASURING, NULL},
        {"--lib-cache-age", KG_OPT_NUM, &w->lib_cache_age, 1, 864000, NULL, MEASURING, NULL},
        {"--op", KG_OPT_STR, &o->op_name, 0, 0, NULL, MEASURING " explain ops", NULL},
        {"--dtype", KG_OPT_STR, &o->dtype_name, 0, 0, NULL, MEASURING " explain", NULL},
        {"--shape", KG_OPT_STR, &w->shape, 0, 0, NULL, MEASURING " explain", NULL},
        {"--sizes", KG_OPT_STR, &w->sizes, 0, 0, NULL, MEASURING, NULL},
        {"--json", KG_OPT_STR, &o->json, 0, 0, NULL, MEASURING " peaks explain compare rejudge", NULL},
        {"--param", KG_OPT_FN, NULL, 0, 0, NULL, MEASURING, keep_value},
        {"--roof", KG_OPT_STR, &o->roof, 0, 0, "measured|datasheet", MEASURING, NULL},
        {"--flush", KG_OPT_STR, &w->flush, 0, 0, "read|memset", MEASURING, NULL},
        {"--trials", KG_OPT_INT, &o->trials, 1, 1000, NULL, MEASURING, NULL},
        {"--seed", KG_OPT_U64, &o->seed, 0, 1e18, NULL, MEASURING, NULL},
        {"--device", KG_OPT_INT, &o->device, 0, 64, NULL, MEASURING " peaks", NULL},
        {"--timeout", KG_OPT_NUM, &o->timeout_s, 1, 86400, NULL, MEASURING, NULL},
        {"--max-noise", KG_OPT_NUM, &o->stop.max_noise, 0, 1, NULL, MEASURING, NULL},
        {"--min-time", KG_OPT_NUM, &o->stop.min_gpu_s, 0, 3600, NULL, MEASURING, NULL},
        {"--max-time", KG_OPT_NUM, &o->stop.max_wall_s, 0.001, 3600, NULL, MEASURING, NULL},
        {"--min-samples", KG_OPT_INT, &o->stop.min_samples, 1, 1e6, NULL, MEASURING, NULL},
        {"--e-ok", KG_OPT_NUM, &o->gate.e_ok, 0, 1.05, NULL, MEASURING " rejudge", NULL}, /* (0, 1.05]: 0 refused below */
        {"--rho-ok", KG_OPT_NUM, &o->gate.rho_ok, 0, 1.05, NULL, MEASURING " rejudge", NULL},
        {"--host-allowance", KG_OPT_NUM, &o->gate.host_allowance, 0, 1, NULL, MEASURING, NULL},
        {"--same", KG_OPT_NUM, &o->same, 0, 1, NULL, "compare", NULL},
        {"-o", KG_OPT_STR, &o->output, 0, 0, NULL, "report trajectory", NULL},
        {"--format", KG_OPT_STR, &o->format, 0, 0, NULL, "report", NULL},
        {"--regress", KG_OPT_NUM, &o->regress, 0, 100, NULL, "compare", NULL},
        {"--ledger", KG_OPT_STR, &o->ledger, 0, 0, NULL, "compare", NULL},
        {"--budget", KG_OPT_INT, &o->budget, 1, 100000, NULL, "tune", NULL},
        {"--knob", KG_OPT_FN, NULL, 0, 0, NULL, "tune", keep_value},
        {"--time-budget", KG_OPT_NUM, &o->time_budget_s, 1, 864000, NULL, MEASURING, NULL},
        {"--torch", KG_OPT_FLAG, &o->torch, 1, 0, NULL, MEASURING, NULL},
        {"--torch-compile", KG_OPT_FLAG, &o->torch, 2, 0, NULL, MEASURING, NULL},
        {"--pin-sha256", KG_OPT_STR, &o->pin_sha256, 0, 0, NULL, MEASURING, NULL},
        {"--server", KG_OPT_STR, &o->server, 0, 0, NULL, "check", NULL},
        {"--events", KG_OPT_STR, &o->events, 0, 0, NULL, MEASURING, NULL},
    };
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int rc = 0;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            o->help = 1;
        else if (a[0] != '-')
            rc = positional(o, a, err);
        else
            rc = kg_opt_one(opts, sizeof opts / sizeof opts[0], o->command, argc, argv, &i, o, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* --op and --dtype to the catalog's operator and type; --pin-sha256's form. */
static int resolve_op_dtype(kg_options *o, kg_err *err)
{
    if (o->pin_sha256) {
        size_t n = strspn(o->pin_sha256, "0123456789abcdef");
        if (strcmp(o->command, "check") != 0 && strcmp(o->command, "tune") != 0)
            return kg_err_set(err, KG_EXIT_USAGE, "--pin-sha256 is for kgate check and kgate tune");
        if (n != 64 || o->pin_sha256[n])
            return kg_err_set(err, KG_EXIT_USAGE, "--pin-sha256: '%.80s' is not 64 lowercase hex digits",
                              o->pin_sha256);
    }
    if (o->op_name) {
        o->op = kg_op_find(o->op_name);
        if (!o->op) {
            char names[768] = "";
            size_t k = 0;
            for (int i = 0; kg_ops[i]; i++)
                kg_append(names, sizeof names, &k, "%s%s", i ? ", " : "", kg_ops[i]->name);
            return kg_err_set(err, KG_EXIT_USAGE, "unknown operator '%.80s' (known: %s)", o->op_name, names);
        }
    }
    if (o->dtype_name) {
        if (kg_dtype_parse(o->dtype_name, &o->dtype) || o->dtype == KG_FP64 || kg_dtype_is_int(o->dtype))
            return kg_err_set(err, KG_EXIT_USAGE, "unknown dtype '%s' (known: fp16, bf16, fp32)", o->dtype_name);
        if (o->op && !kg_op_has_dtype(o->op, o->dtype))
            return kg_err_set(err, KG_EXIT_USAGE, "%s does not support %s", o->op->name, o->dtype_name);
        o->have_dtype = 1;
    }
    return 0;
}

/* Each --param names a scalar of --op, or of some operator, and a value it takes. */
static int resolve_params(kg_options *o, kg_err *err)
{
    for (int i = 0; i < o->n_params; i++) {
        int ok = 0;
        const char *eq = strchr(o->params[i], '=');
        if (!eq || eq == o->params[i])
            return kg_err_set(err, KG_EXIT_USAGE, "--param '%s': expected NAME=VALUE (kgate ops lists "
                              "each operator's scalars)", o->params[i]);
        kg_err e2 = {0, ""}, own = {0, ""};
        for (int k = 0; kg_ops[k] && !ok; k++) {
            kg_scalars sc;
            char name[64];
            if (o->op && o->op != kg_ops[k])
                continue;
            kg_scalars_default(kg_ops[k], &sc);
            memset(&e2, 0, sizeof e2);
            ok = kg_scalars_set(kg_ops[k], &sc, o->params[i], &e2) == 0;
            if (o->op && !ok)
                return kg_err_set(err, KG_EXIT_USAGE, "%s", e2.msg);
            /* an operator that has the scalar says best why the value is refused */
            snprintf(name, sizeof name, "%.*s", (int)(eq - o->params[i]), o->params[i]);
            if (!ok && kg_op_scalar(kg_ops[k], name))
                kg_err_set(&own, e2.code, "%s", e2.msg);
        }
        if (!ok && own.code)
            return kg_err_set(err, KG_EXIT_USAGE, "%s", own.msg);
        if (!ok)
            return kg_err_set(err, KG_EXIT_USAGE, "--param %s: no operator has that scalar, or the "
                              "value is not a number it takes", o->params[i]);
    }
    return 0;
}

/* --shape or --sizes into shape texts, each checked against every operator
 * it may apply to. */
static int resolve_shapes(kg_options *o, const raw_options *w, kg_err *err)
{
    if (w->shape && w->sizes)
        return kg_err_set(err, KG_EXIT_USAGE, "give --shape or --sizes, not both");
    if (w->shape) {
        o->shape_texts[o->n_shapes++] = w->shape;
    } else if (w->sizes && strcmp(w->sizes, "all") == 0) {
        o->all_presets = 1; /* expanded once the kernels, and so the operators, are known */
    } else if (w->sizes) {
        static char buf[512];
        snprintf(buf, sizeof buf, "%s", w->sizes);
        for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
            if (o->n_shapes == KG_MAX_SHAPES)
                return kg_err_set(err, KG_EXIT_USAGE, "--sizes: at most %d shapes", KG_MAX_SHAPES);
            o->shape_texts[o->n_shapes++] = t;
        }
    }
    /* Shapes are checked against every operator they may apply to. */
    for (int i = 0; i < o->n_shapes; i++) {
        kg_shape s;
        if (o->op) {
            if (kg_shape_parse(o->op, o->shape_texts[i], &s, err))
                return err->code;
        } else {
            int ok = 0;
            kg_err own = {0, ""};
            for (int k = 0; kg_ops[k]; k++) {
                kg_err e2 = {0, ""};
                ok |= kg_shape_parse(kg_ops[k], o->shape_texts[i], &s, &e2) == 0;
                /* the extents of an operator with its own shape rule, which
                 * refused them: its reason (a convolution's padding) */
                if (e2.code && kg_ops[k]->check_shape && extent_count(o->shape_texts[i]) == kg_ops[k]->n_dims)
                    kg_err_set(&own, e2.code, "%s", e2.msg);
            }
            if (!ok && own.code)
                return kg_err_set(err, KG_EXIT_USAGE, "%s", own.msg);
            if (!ok)
                return kg_err_set(err, KG_EXIT_USAGE,
                                  "bad shape '%s': not a preset or AxB[xC] of any operator", o->shape_texts[i]);
        }
    }
    return 0;
}

/* What each command needs, and what the options left to decide: the gate's
 * thresholds, the library cache's age, the launch path's host allowance. */
static int resolve_command(kg_options *o, const raw_options *w, kg_err *err)
{
    if (strcmp(o->command, "help") == 0 && o->candidate && strcmp(o->candidate, "batch") != 0 &&
        strcmp(o->candidate, "kernelbench") != 0 && strcmp(o->candidate, "serve") != 0) {
        int known = 0;
        for (int i = 0; commands[i]; i++)
            known |= strcmp(o->candidate, commands[i]) == 0;
        if (!known)
            return kg_err_set(err, KG_EXIT_USAGE, "unknown command '%.80s' (try kgate help)", o->candidate);
    }
    if (strcmp(o->command, "explain") == 0 && !o->help && !o->rules && !!o->candidate == !!o->from_ncu)
        return kg_err_set(err, KG_EXIT_USAGE, "explain needs a RESULT.json or --from-ncu FILE (one of them)");
    if (strcmp(o->command, "report") == 0 && !o->help) {
        if (!o->n_inputs)
            return kg_err_set(err, KG_EXIT_USAGE, "report needs results: kgate report RESULTS.json... [-o FILE]");
        if (!o->output)
            o->output = "-"; /* stdout */
        if (o->format && strcmp(o->format, "html") && strcmp(o->format, "md") && strcmp(o->format, "csv"))
            return kg_err_set(err, KG_EXIT_USAGE, "--format takes html, md or csv, not '%s'", o->format);

    }
    if (strcmp(o->command, "compare") == 0 && !o->help && o->ledger && (!o->candidate || o->second))
        return kg_err_set(err, KG_EXIT_USAGE, "compare --ledger takes one results file, the new run: kgate "
                          "compare --ledger results/ledger.jsonl B.json");
    if (strcmp(o->command, "compare") == 0 && !o->help && !o->ledger && !o->second)
        return kg_err_set(err, KG_EXIT_USAGE, "compare needs two results: kgate compare A.json B.json");
    if (strcmp(o->command, "tune") == 0 && !o->help && (!o->candidate || o->n_shapes > 1))
        return kg_err_set(err, KG_EXIT_USAGE, "tune needs one kernel and at most one shape: kgate tune "
                          "CANDIDATE.so:KERNEL [--shape S] [--budget N]");
    if (strcmp(o->command, "check") == 0 && !o->candidate && !o->help)
        return kg_err_set(err, KG_EXIT_USAGE, "check needs a candidate: kgate check CANDIDATE.so[:KERNEL]");
    if (!(o->gate.e_ok > 0) || !(o->gate.rho_ok > 0))
        return kg_err_set(err, KG_EXIT_USAGE, "%s 0: a threshold must be in (0, 1.05]",
                          o->gate.e_ok > 0 ? "--rho-ok" : "--e-ok");
    if (o->quiet && o->verbose)
        return kg_err_set(err, KG_EXIT_USAGE, "give -q or -v, not both");
    if (w->lib_cache_age >= 0 && !o->lib_cache)
        return kg_err_set(err, KG_EXIT_USAGE, "--lib-cache-age without --lib-cache");
    if (w->lib_cache_age >= 0)
        o->lib_cache_age_s = w->lib_cache_age;
    if (o->gate.host_allowance < 0) {
        /* the launch path of the file the workers will open: a link's target
         * decides, as it decides which worker runs (app/check_targets.c) */
        char path[PATH_MAX], kernel[96], real[PATH_MAX];
        const char *file = NULL;
        if (o->candidate) {
            kg_candidate_split(o->candidate, path, sizeof path, kernel, sizeof kernel);
            file = realpath(path, real) ? real : path;
        }
        o->gate.host_allowance = kg_host_allowance_for(file);
    }
    return 0;
}

int kg_options_parse(int argc, char **argv, kg_options *o, kg_err *err)
{
    memset(o, 0, sizeof *o);
    o->trials = 3;
    o->edge = 1;
    o->extra = 1;
    o->seed = 1;
    o->timeout_s = 120;
    o->roof = "measured";
    o->patched_max_s = KG_PATCHED_MAX_DEFAULT;
    o->lib_cache_age_s = KG_LIBCACHE_AGE_DEFAULT;
    kg_stop_defaults(&o->stop);
    kg_gate_defaults(&o->gate);
    o->gate.host_allowance = -1; /* the candidate's launch path's, once it is known */
    kg_diag_params_defaults(&o->diag);
    o->same = 0.02;
    o->regress = 0.05;
    o->argc = argc;
    o->argv = argv;
    size_t u = 0;
    for (int i = 0; i < argc; i++)
        if (kg_append(o->cmdline, sizeof o->cmdline, &u, "%s%s", i ? " " : "", i == 0 ? "kgate" : argv[i]))
            break; /* it ends with "..." */
    if (argc < 2) {
        o->command = "help";
        return 0;
    }
    o->command = argv[1];
    if (strcmp(o->command, "--help") == 0 || strcmp(o->command, "-h") == 0)
        o->command = "help";
    if (strcmp(o->command, "--version") == 0)
        o->command = "version";
    int known = 0;
    for (int i = 0; commands[i]; i++)
        known |= strcmp(o->command, commands[i]) == 0;
    if (!known)
        return kg_err_set(err, KG_EXIT_USAGE, "unknown command '%s' (try kgate help)", o->command);
    raw_options w = {NULL, NULL, "read", -1};
    if (parse_args(argc, argv, o, &w, err) || resolve_op_dtype(o, err))
        return err->code;
    o->memset_flush = strcmp(w.flush, "memset") == 0;
    o->suite = strcmp(o->command, "run") == 0;
    if (resolve_params(o, err) || resolve_shapes(o, &w, err) || resolve_command(o, &w, err))
        return err->code;
    return 0;
}
