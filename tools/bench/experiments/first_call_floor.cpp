// A stand-alone measure of what any runtime pays for a fresh process's first call of a kernel
// whose cubin is on disk (issue 4), once CUDA has started: read the file (open, fstat, read,
// close), cuModuleLoadData, cuModuleGetFunction, cuLaunchKernel, synchronise; each step's time
// and minor page faults. Then what a page fault and a few file system calls cost on this machine,
// which is where a runtime's own first-call work goes beyond the driver's. Built here:
//   nvcc -O2 -o first_call_floor first_call_floor.cpp -lcuda
//   nvcc -cubin -arch=sm_90 -o axpb.cubin axpb_kernel.cu
// run on the H200 in several fresh processes:
//   first_call_floor FILE.cubin [--memset-first] [--pool] [--function NAME] [--warm WARM.cubin [--warm-early]] [--library]
// Before the clock the process starts CUDA and copies its input to the device (as kjit's and
// CuPy's probes do). --memset-first runs a cuMemsetD32 instead (one of the driver's own kernels);
// --pool takes the arrays from a stream-ordered memory pool made as kjit makes its own, instead
// of cuMemAlloc; --function names the kernel to load (default axpb_small, axpb_kernel.cu's), so
// that a cubin kjit wrote (its Args struct is the same) can be loaded too. --warm loads another
// module (warm_kernel.cu's empty kernel: nvcc -cubin -arch=sm_90 -o warm.cubin warm_kernel.cu)
// and launches it before the clock, so that what is left is what this module's load costs;
// with --warm-early, before the arrays are allocated and copied (as kjit warms a context up when
// it retains it, before a program's own first work). --library loads through the library API
// (cuLibraryLoadData, cuLibraryGetKernel, cuKernelGetFunction) instead of cuModuleLoadData and
// cuModuleGetFunction: whether CUDA 12's context-independent loading costs a first call less.
// --read-first FILE and --stat-first FILE (each repeatable, done in the order given) read or stat
// other files inside the clock, before the cubin, each timed: what each further file a runtime
// touches in a first call costs (kjit reads a plan note and stats libnvrtc before the entry).
#include <cuda.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#define CU(call)                                                                  \
    do {                                                                          \
        CUresult r_ = (call);                                                     \
        if (r_ != CUDA_SUCCESS) {                                                 \
            std::fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #call, (int)r_); \
            std::exit(1);                                                         \
        }                                                                         \
    } while (0)

using Clock = std::chrono::steady_clock;

long minor_faults() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

struct Step {
    Clock::time_point t = Clock::now();
    long faults = minor_faults();
    void report(const char* what) {
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - t).count();
        const long f = minor_faults() - faults;
        std::printf("  %-34s %8.1f us  %4ld faults\n", what, us, f);
        t = Clock::now();
        faults = minor_faults();
    }
};

std::vector<char> read_file(const char* path) {
    std::vector<char> bytes;
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return bytes;
    struct stat st {};
    if (::fstat(fd, &st) == 0) {
        bytes.resize(static_cast<std::size_t>(st.st_size));
        std::size_t got = 0;
        while (got < bytes.size()) {
            const ssize_t r = ::read(fd, bytes.data() + got, bytes.size() - got);
            if (r <= 0) break;
            got += static_cast<std::size_t>(r);
        }
        bytes.resize(got);
    }
    ::close(fd);
    return bytes;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: first_call_floor FILE.cubin\n");
        return 1;
    }
    CU(cuInit(0));
    CUdevice dev;
    CU(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));
    bool memset_first = false, pool = false, library = false;
    const char* function = "axpb_small";
    const char* warm = nullptr;
    bool warm_early = false;
    std::vector<std::pair<bool, const char*>> first_files;  // (read, path), else stat
    for (int a = 2; a < argc; ++a) {
        if (std::strcmp(argv[a], "--memset-first") == 0) memset_first = true;
        else if (std::strcmp(argv[a], "--pool") == 0) pool = true;
        else if (std::strcmp(argv[a], "--function") == 0 && a + 1 < argc) function = argv[++a];
        else if (std::strcmp(argv[a], "--warm") == 0 && a + 1 < argc) warm = argv[++a];
        else if (std::strcmp(argv[a], "--warm-early") == 0) warm_early = true;
        else if (std::strcmp(argv[a], "--library") == 0) library = true;
        else if (std::strcmp(argv[a], "--read-first") == 0 && a + 1 < argc) first_files.emplace_back(true, argv[++a]);
        else if (std::strcmp(argv[a], "--stat-first") == 0 && a + 1 < argc) first_files.emplace_back(false, argv[++a]);
    }
    auto warm_up = [&] {
        const std::vector<char> w = read_file(warm);
        CUmodule wm;
        CUfunction wf;
        CU(cuModuleLoadData(&wm, w.data()));
        CU(cuModuleGetFunction(&wf, wm, "warm_up"));
        CU(cuLaunchKernel(wf, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
        CU(cuCtxSynchronize());
    };
    if (warm != nullptr && warm_early) warm_up();
    CUdeviceptr x, y;
    if (pool) {
        CUmemPoolProps props{};
        props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
        props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = 0;
        CUmemoryPool mp = nullptr;
        CU(cuMemPoolCreate(&mp, &props));
        cuuint64_t keep_all = ~cuuint64_t{0};
        CU(cuMemPoolSetAttribute(mp, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all));
        CU(cuMemAllocFromPoolAsync(&x, 4000, mp, nullptr));
        CU(cuMemAllocFromPoolAsync(&y, 4000, mp, nullptr));
    } else {
        CU(cuMemAlloc(&x, 4000));
        CU(cuMemAlloc(&y, 4000));
    }
    std::vector<float> ones(1000, 1.0f);
    if (memset_first) CU(cuMemsetD32(x, 0x3f800000u, 1000));
    else CU(cuMemcpyHtoD(x, ones.data(), 4000));
    CU(cuCtxSynchronize());
    std::printf("the driver's floor for a cached kernel's first call (%s, %s before, %s%s):\n", argv[1],
                memset_first ? "a cuMemsetD32" : "a host-to-device copy", pool ? "a memory pool" : "cuMemAlloc",
                warm != nullptr ? ", another module loaded and launched first" : "");
    const auto t0 = Clock::now();
    Step s;
    for (const auto& [read, path] : first_files) {
        struct stat st {};
        const bool ok = read ? !read_file(path).empty() : ::stat(path, &st) == 0;
        std::printf("  %s %s%s\n", read ? "read" : "stat", path, ok ? "" : " (failed)");
        s.report(read ? "  that read (open fstat read)" : "  that stat");
    }
    const std::vector<char> cubin = read_file(argv[1]);
    s.report("read the cubin (open fstat read)");
    if (cubin.empty()) return 1;
    CUfunction f;
    if (library) {
        CUlibrary lib;
        CU(cuLibraryLoadData(&lib, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
        s.report("cuLibraryLoadData");
        CUkernel kernel;
        CU(cuLibraryGetKernel(&kernel, lib, function));
        s.report("cuLibraryGetKernel");
        CU(cuKernelGetFunction(&f, kernel));
        s.report("cuKernelGetFunction");
    } else {
        CUmodule mod;
        CU(cuModuleLoadData(&mod, cubin.data()));
        s.report("cuModuleLoadData");
        CU(cuModuleGetFunction(&f, mod, function));
        s.report("cuModuleGetFunction");
    }
    struct Args { CUdeviceptr x; float a, b; CUdeviceptr y; long long n, pad; } args{x, 2.0f, 1.0f, y, 1000, 0};
    void* params[] = {&args};
    CU(cuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr));
    s.report("cuLaunchKernel");
    CU(cuCtxSynchronize());
    s.report("synchronise");
    std::printf("  %-34s %8.1f us\n", "in all", std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    float out[4] = {};
    CU(cuMemcpyDtoH(out, y, sizeof out));
    std::printf("  check: y[0..3] = %g %g %g %g (3 expected)\n", out[0], out[1], out[2], out[3]);

    std::printf("this machine's costs:\n");
    {
        const std::size_t pages = 512;
        char* p = static_cast<char*>(mmap(nullptr, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        Step t;
        for (std::size_t k = 0; k < pages; ++k) p[k * 4096] = 1;
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - t.t).count();
        std::printf("  %-34s %8.3f us each (%ld faults)\n", "first touch of an anonymous page", us / pages, minor_faults() - t.faults);
        munmap(p, pages * 4096);
    }
    {
        // A mapped file already in the page cache (the cubin): read faults, with fault-around.
        const int fd = ::open(argv[1], O_RDONLY);
        struct stat st {};
        ::fstat(fd, &st);
        Step t;
        for (int k = 0; k < 200; ++k) {
            char* p = static_cast<char*>(mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0));
            volatile char c = p[0];
            (void)c;
            munmap(p, st.st_size);
        }
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - t.t).count();
        std::printf("  %-34s %8.3f us each (%ld faults)\n", "mmap, read fault, munmap of a file", us / 200, minor_faults() - t.faults);
        ::close(fd);
    }
    auto per_call = [](const char* what, auto&& f) {
        const int reps = 200;
        const auto t = Clock::now();
        for (int k = 0; k < reps; ++k) f();
        std::printf("  %-34s %8.3f us each\n", what, std::chrono::duration<double, std::micro>(Clock::now() - t).count() / reps);
    };
    per_call("open+fstat+read+close (warm)", [&] { (void)read_file(argv[1]); });
    per_call("stat of the file", [&] { struct stat st {}; (void)::stat(argv[1], &st); });
    per_call("open of a missing file", [&] { (void)::open("/tmp/kjit-no-such-file", O_RDONLY); });
    per_call("getpid (a bare system call)", [&] { (void)syscall(39); });
    const char* tmpf = "/tmp/kjit-floor-times";
    const int tfd = ::open(tmpf, O_RDWR | O_CREAT, 0600);
    per_call("futimens of a file in /tmp", [&] { timespec ts[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}}; (void)::futimens(tfd, ts); });
    ::close(tfd);
    ::unlink(tmpf);
    return 0;
}
