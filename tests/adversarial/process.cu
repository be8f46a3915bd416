// Cheats on the process around the kernel: work done on the host, a crash, a
// hang, forged results on the worker's event channel (class 4), a process
// left behind, and timer tampering by patching the evaluator's GOT (class 3).
#include <cupti_activity.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "adv.cuh"

static int sm(const DLTensor *in, DLTensor *out, const kgate_params *p, cudaStream_t s)
{
    return adv_softmax_on<__half>(in, out, p, s);
}

// ------------------------------------------------------------ host_compute
// softmax computed on the host: x comes over, every row is done on CPU
// threads, y goes back; both copies on the given stream, waited for.
static void host_rows(const __half *x, __half *y, int64_t r0, int64_t r1, int64_t cols)
{
    for (int64_t r = r0; r < r1; r++) {
        const __half *xr = x + r * cols;
        __half *yr = y + r * cols;
        float m = -INFINITY, s = 0.f;
        for (int64_t j = 0; j < cols; j++)
            m = fmaxf(m, __half2float(xr[j]));
        for (int64_t j = 0; j < cols; j++)
            s += expf(__half2float(xr[j]) - m);
        const float inv = 1.f / s;
        for (int64_t j = 0; j < cols; j++)
            yr[j] = __float2half_rn(expf(__half2float(xr[j]) - m) * inv);
    }
}

ADV_LAUNCH(adv_host_compute)
{
    ADV_EXPECT(1, 1);
    static __half *hx, *hy;
    static size_t have;
    cudaStream_t s = (cudaStream_t)stream;
    if (adv_honest())
        return sm(in, out, p, s);
    const int64_t rows = adv_rows(&in[0]), cols = adv_cols(&in[0]);
    const size_t bytes = (size_t)(rows * cols) * sizeof(__half);
    if (have < bytes) {
        cudaFreeHost(hx);
        cudaFreeHost(hy);
        hx = hy = NULL;
        have = 0;
        if (cudaMallocHost(&hx, bytes) != cudaSuccess || cudaMallocHost(&hy, bytes) != cudaSuccess)
            return adv_launched(p);
        have = bytes;
    }
    cudaMemcpyAsync(hx, in[0].data, bytes, cudaMemcpyDeviceToHost, s);
    if (cudaStreamSynchronize(s) != cudaSuccess)
        return adv_launched(p);
    const int64_t nt = std::min<int64_t>(std::max(1u, std::thread::hardware_concurrency()), std::min<int64_t>(16, rows));
    std::vector<std::thread> pool;
    for (int64_t t = 0; t < nt; t++)
        pool.emplace_back(host_rows, hx, hy, rows * t / nt, rows * (t + 1) / nt, cols);
    for (auto &t : pool)
        t.join();
    cudaMemcpyAsync(out[0].data, hy, bytes, cudaMemcpyHostToDevice, s);
    cudaStreamSynchronize(s);
    return adv_launched(p);
}

// ---------------------------------------------------------- crash and hang
__global__ void adv_wild(void)
{
    *(volatile int *)(uintptr_t)(16 + 4 * threadIdx.x) = 1; // the null page
}

ADV_LAUNCH(adv_illegal_address)
{
    ADV_EXPECT(1, 1);
    if (adv_honest())
        return sm(in, out, p, (cudaStream_t)stream);
    adv_wild<<<1, 32, 0, (cudaStream_t)stream>>>();
    return adv_launched(p);
}

__global__ void adv_forever(volatile int *flag)
{
    while (*flag == 0) {
    }
}

// spin_forever: a layer_norm (fp16) that never finishes.
ADV_LAUNCH(adv_spin_forever)
{
    ADV_EXPECT(3, 1);
    static int *flag;
    cudaStream_t s = (cudaStream_t)stream;
    if (adv_honest())
        return adv_layer_norm_on<__half>(in, out, p, s, adv_eps(p));
    if (!flag) {
        if (cudaMalloc(&flag, sizeof *flag) != cudaSuccess)
            return adv_launched(p);
        cudaMemsetAsync(flag, 0, sizeof *flag, s);
    }
    adv_forever<<<1, 1, 0, s>>>(flag);
    return adv_launched(p);
}

// ------------------------------------------------------------ forge_events
// The worker reports on the descriptor named by its --fd argument (3): on
// its first call this kernel writes a plausible summary line there, a GPU
// time of one nanosecond, then computes correctly.
static int event_fd(void)
{
    char buf[4096];
    int fd = open("/proc/self/cmdline", O_RDONLY), res = 3;
    if (fd < 0)
        return res;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    for (ssize_t i = 0; n > 0 && i < n;) {
        buf[n] = '\0';
        const char *arg = buf + i;
        size_t len = strlen(arg);
        if (strcmp(arg, "--fd") == 0 && i + (ssize_t)len + 1 < n)
            res = atoi(arg + len + 1);
        i += (ssize_t)len + 1;
    }
    return res;
}

ADV_LAUNCH(adv_forge_events)
{
    ADV_EXPECT(1, 1);
    static bool done;
    if (!done && !adv_honest()) {
        static const char line[] = "{\"ev\":\"sum\",\"subject\":\"kernel\",\"name\":\"time/gpu/median\",\"value\":1e-9}\n";
        done = true;
        if (write(event_fd(), line, sizeof line - 1) < 0)
            return adv_fail(p, 9, "forge_events: write failed");
    }
    return sm(in, out, p, (cudaStream_t)stream);
}

// ------------------------------------------------------ forged_unsupported
// On its first call, the one line that made a kernel SKIPPED (exit 0) before
// the shape's support was said only in the worker's nonce-bearing done
// event: a check/unsupported summary. Then it computes slowly and honestly
// (SLOW, exit 1, is what it tries to escape).
ADV_LAUNCH(adv_forged_unsupported)
{
    ADV_EXPECT(1, 1);
    static bool done;
    if (!done && !adv_honest()) {
        static const char line[] = "{\"ev\":\"sum\",\"subject\":\"kernel\",\"name\":\"check/unsupported\",\"value\":1}\n";
        done = true;
        if (write(event_fd(), line, sizeof line - 1) < 0)
            return adv_fail(p, 9, "forged_unsupported: write failed");
    }
    adv_warp_softmax<<<(unsigned)adv_rows(&in[0]), 32, 0, (cudaStream_t)stream>>>(
        (const __half *)in[0].data, (__half *)out[0].data, adv_cols(&in[0]), (const int *)NULL);
    return adv_launched(p);
}

// ------------------------------------------------------------ setsid_child
// On its first call: fork a child that leaves the process group (setsid),
// names itself kg_adv_sleeper (pgrep -x kg_adv_sleeper) and sleeps 600 s,
// keeping every inherited descriptor (the worker's event pipe and stderr
// among them) open. Then compute correctly.
ADV_LAUNCH(adv_setsid_child)
{
    ADV_EXPECT(1, 1);
    static bool done;
    if (!done && !adv_honest()) {
        done = true;
        pid_t pid = fork();
        if (pid == 0) { // async-signal-safe calls only: the parent has threads
            setsid();
            prctl(PR_SET_NAME, "kg_adv_sleeper", 0, 0, 0);
            struct timespec ts = {600, 0};
            while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
            }
            _exit(0);
        }
    }
    return sm(in, out, p, (cudaStream_t)stream);
}

// --------------------------------------------------------------- timer_hook
// An honest but slow softmax (one warp per row, scalar loads, three passes)
// that patches the evaluator's global offset table on its first call:
// cudaEventElapsedTime and cuptiActivityGetNextRecord, as the kgate
// executable imports them, are redirected to hooks that shrink this kernel's
// times to 1.4x the time its essential bytes need at 4.3 TB/s: a rho of
// about 0.7, where the honest one is far below 0.5.
static volatile double fake_s; // what the hooks report for this kernel (zero_time: -1, for 0)
typedef cudaError_t (*elapsed_fn)(float *, cudaEvent_t, cudaEvent_t);
typedef CUptiResult (*next_record_fn)(uint8_t *, size_t, CUpti_Activity **);
static elapsed_fn real_elapsed;
static next_record_fn real_next_record;

static cudaError_t hook_elapsed(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    cudaError_t rc = real_elapsed(ms, a, b);
    if (rc == cudaSuccess && fake_s != 0 && *ms > fmax(fake_s, 0.0) * 1e3)
        *ms = (float)(fmax(fake_s, 0.0) * 1e3);
    return rc;
}

static CUptiResult hook_next_record(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
    CUptiResult rc = real_next_record(buf, valid, rec);
    if (rc == CUPTI_SUCCESS && fake_s != 0 &&
        ((*rec)->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || (*rec)->kind == CUPTI_ACTIVITY_KIND_KERNEL)) {
        CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)*rec;
        const uint64_t fake_ns = (uint64_t)(fmax(fake_s, 0.0) * 1e9);
        if (k->name && strstr(k->name, "adv_warp_softmax") && k->end - k->start > fake_ns)
            k->end = k->start + fake_ns;
    }
    return rc;
}

// Points the main program's GOT slots for `name` at `hook`; returns how many.
static int patch_got(const char *name, void *hook)
{
    struct ctx {
        const char *name;
        void *hook;
        int patched;
    } c = {name, hook, 0};
    dl_iterate_phdr(
        [](struct dl_phdr_info *info, size_t, void *data) -> int {
            ctx *c = (ctx *)data;
            const ElfW(Addr) base = info->dlpi_addr;
            const ElfW(Dyn) *dyn = NULL;
            for (int i = 0; i < info->dlpi_phnum; i++)
                if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
                    dyn = (const ElfW(Dyn) *)(base + info->dlpi_phdr[i].p_vaddr);
            if (!dyn)
                return 1;
            const ElfW(Sym) *sym = NULL;
            const char *str = NULL;
            const ElfW(Rela) *tab[2] = {NULL, NULL};
            size_t size[2] = {0, 0};
            auto addr = [base](ElfW(Addr) v) { return v < base ? base + v : v; }; // glibc relocates these
            for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
                if (d->d_tag == DT_SYMTAB)
                    sym = (const ElfW(Sym) *)addr(d->d_un.d_ptr);
                else if (d->d_tag == DT_STRTAB)
                    str = (const char *)addr(d->d_un.d_ptr);
                else if (d->d_tag == DT_JMPREL)
                    tab[0] = (const ElfW(Rela) *)addr(d->d_un.d_ptr);
                else if (d->d_tag == DT_PLTRELSZ)
                    size[0] = d->d_un.d_val;
                else if (d->d_tag == DT_RELA)
                    tab[1] = (const ElfW(Rela) *)addr(d->d_un.d_ptr);
                else if (d->d_tag == DT_RELASZ)
                    size[1] = d->d_un.d_val;
            }
            const long page = sysconf(_SC_PAGESIZE);
            for (int t = 0; sym && str && t < 2; t++)
                for (size_t i = 0; tab[t] && i < size[t] / sizeof(ElfW(Rela)); i++) {
                    const ElfW(Rela) *r = &tab[t][i];
                    const unsigned type = ELF64_R_TYPE(r->r_info);
                    if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
                        strcmp(str + sym[ELF64_R_SYM(r->r_info)].st_name, c->name) != 0)
                        continue;
                    void **slot = (void **)(base + r->r_offset);
                    void *pg = (void *)((uintptr_t)slot & ~(uintptr_t)(page - 1));
                    if (mprotect(pg, (size_t)page, PROT_READ | PROT_WRITE) == 0) {
                        *slot = c->hook;
                        c->patched++;
                    }
                }
            return 1; // the main program is the first entry: stop there
        },
        &c);
    return c.patched;
}

// Patches the hooks in once (timer_hook, zero_time).
static void hook_timers(const char *who)
{
    static bool done;
    if (!done) {
        done = true;
        real_elapsed = (elapsed_fn)dlsym(RTLD_DEFAULT, "cudaEventElapsedTime");
        real_next_record = (next_record_fn)dlsym(RTLD_DEFAULT, "cuptiActivityGetNextRecord");
        const int a = real_elapsed ? patch_got("cudaEventElapsedTime", (void *)hook_elapsed) : 0;
        const int b = real_next_record ? patch_got("cuptiActivityGetNextRecord", (void *)hook_next_record) : 0;
        fprintf(stderr, "%s: patched %d cudaEventElapsedTime and %d cuptiActivityGetNextRecord slot(s)\n", who,
                a, b);
    }
}

ADV_LAUNCH(adv_timer_hook)
{
    ADV_EXPECT(1, 1);
    const int64_t rows = adv_rows(&in[0]), cols = adv_cols(&in[0]);
    if (!adv_honest())
        hook_timers("timer_hook");
    if (!adv_honest())
        fake_s = 1.4 * (double)(rows * cols) * 2 * sizeof(__half) / 4.3e12;
    adv_warp_softmax<<<(unsigned)rows, 32, 0, (cudaStream_t)stream>>>((const __half *)in[0].data,
                                                                      (__half *)out[0].data, cols, (const int *)NULL);
    return adv_launched(p);
}

// --------------------------------------------------------------- zero_time
// The same hooks, reporting every time of its kernel as 0: a worker that
// reported a GPU time of 0 left the kernel SKIPPED ("no timing", exit 0).
ADV_LAUNCH(adv_zero_time)
{
    ADV_EXPECT(1, 1);
    if (!adv_honest()) {
        hook_timers("zero_time");
        fake_s = -1;
    }
    adv_warp_softmax<<<(unsigned)adv_rows(&in[0]), 32, 0, (cudaStream_t)stream>>>(
        (const __half *)in[0].data, (__half *)out[0].data, adv_cols(&in[0]), (const int *)NULL);
    return adv_launched(p);
}

// --------------------------------------------------------------- cupti_off
// An honest softmax that, on every call, turns off CUPTI's kernel records
// in the worker (cuptiActivityDisable, found with dlsym: kgate's executable
// links CUPTI; every call, since kgate may turn them on when its timing
// starts): with no record of kgate's own kernels either, work queued between
// samples or on other streams would go unseen.
ADV_LAUNCH(adv_cupti_off)
{
    ADV_EXPECT(1, 1);
    static bool said;
    if (!adv_honest()) {
        typedef CUptiResult (*disable_fn)(CUpti_ActivityKind);
        static disable_fn off = (disable_fn)dlsym(RTLD_DEFAULT, "cuptiActivityDisable");
        const int rc = off ? (int)off(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) : -1;
        if (!said) {
            said = true;
            fprintf(stderr, "cupti_off: cuptiActivityDisable(CONCURRENT_KERNEL) = %d\n", rc);
        }
    }
    return adv_softmax_on<__half>(in, out, p, (cudaStream_t)stream);
}
