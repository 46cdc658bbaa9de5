// RawModule and RawKernel: CUDA source written by the user, compiled with NVRTC, kept in the kernel
// cache like every kjit kernel, and launched with an explicit grid, block, dynamic shared memory
// and stream (CuPy's RawModule / RawKernel).
//
//   kjit::RawKernel saxpy(R"(
//       extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
//           int i = blockIdx.x * blockDim.x + threadIdx.x;
//           if (i < n) y[i] = a * x[i] + y[i];
//       })", "saxpy");
//   saxpy((n + 255) / 256, 256, {2.0f, x, y, n});            // arrays pass their device pointer
//
// kjit does not parse the source: it is an explicit opt-in to raw CUDA. A kernel is found by its
// extern "C" name, or by a name expression ("scale<float, 4>") that NVRTC lowers to the mangled
// name; the lowered names are kept in the cache entry, so a cache hit needs no NVRTC.
//
// Arguments: an Array passes the device address of its element (0, ..., 0) (a view's offset is
// applied; its strides are the kernel's business); anything else is a Scalar passed with its own
// dtype's bytes, so the C++ type chosen is the type the kernel receives (2.0f: float, 2.0:
// double, 3: int, std::int64_t{3}: long long). Each argument's size is checked against the
// kernel's parameter (from the driver) before launching.
//
// Objects are cheap to copy (copies share their compiled and loaded state), immutable, and safe to
// call from many threads. The module is compiled (or found in a cache) and loaded on a device the
// first time a kernel is used there; a warm launch allocates nothing and takes no lock held across
// the launch.
//
// Launch attributes (LaunchConfig): thread-block clusters and cooperative launches go through
// cuLaunchKernelEx, checked against the device first; a launch that asks for neither is one
// cuLaunchKernel, as cheap as before they existed. Module globals (RawModule::global) fill a
// __constant__ table before a launch:
//
//   const kjit::RawModule m(source);                            // __constant__ float taps[16]; ...
//   m.global("taps", kjit::DType::float32).copy_from_host(host_taps.data());
//   m.get_function("fir")(grid, 256, {x, y, n}, {.cluster = {2, 1, 1}});
#pragma once

#include "kjit/export.hpp"

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kjit/array.hpp"
#include "kjit/binary.hpp"
#include "kjit/device.hpp"
#include "kjit/kernel_arg.hpp"
#include "kjit/stream.hpp"

namespace kjit {

namespace jit {
struct RawModuleState;
struct RawKernelState;
namespace kernels {
struct BinaryImage;
}
}  // namespace jit

// A grid or block extent, as CUDA's dim3: `1024`, `{64, 64}`, `{8, 8, 4}`.
struct KJIT_API Dim3 {
    unsigned x = 1, y = 1, z = 1;
    constexpr Dim3() noexcept = default;
    constexpr Dim3(unsigned x_, unsigned y_ = 1, unsigned z_ = 1) noexcept  // NOLINT(google-explicit-constructor)
        : x(x_), y(y_), z(z_) {}
};

// Named values of LaunchConfig::shared_carveout (CUDA's CU_SHAREDMEM_CARVEOUT_*); any percent
// 0-100 is allowed too.
inline constexpr int kCarveoutDefault = -1;    // no preference: the driver chooses
inline constexpr int kCarveoutMaxL1 = 0;       // as much L1 cache as the SM allows
inline constexpr int kCarveoutMaxShared = 100;  // as much shared memory as the SM allows

// How a launch runs, besides grid and block: `{.shared_mem_bytes = 96 * 1024, .stream = s}`,
// `{.stream = s, .cluster = {2, 1, 1}}`, `{.cooperative = true}`.
struct KJIT_API LaunchConfig {
    // Dynamic shared memory per block (`extern __shared__`). More than the kernel may use by default
    // (48 KiB less its static shared memory) raises its limit (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_
    // SIZE_BYTES) up to what the device allows; beyond that, an Error saying both numbers.
    std::size_t shared_mem_bytes = 0;
    // The stream, and so the device, the kernel runs on: the calling thread's current stream unless
    // given. Every array argument must be on that device.
    Stream stream = Stream::current();
    // Thread-block clusters (compute capability 9.0 and newer; below, an Error naming the device's):
    // the blocks of a cluster run at once on one GPC and may read each other's shared memory
    // (cooperative_groups::this_cluster()). {1, 1, 1}: no cluster. The grid must be a multiple of it
    // in each dimension.
    // Clusters of up to 8 blocks are portable; 9 to 16 blocks (where the GPU has them: Hopper,
    // Blackwell) set the kernel's CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED first. A
    // cluster the device cannot run (cuOccupancyMaxActiveClusters says 0 fit, with this block and
    // shared memory) is an Error giving the numbers, before anything is queued.
    Dim3 cluster{1, 1, 1};
    // A cooperative launch: every block of the grid is resident at once, so that the kernel may use
    // cooperative_groups::this_grid().sync(). The device must support them (CU_DEVICE_ATTRIBUTE_
    // COOPERATIVE_LAUNCH), and the grid may have at most (the blocks of this size and shared memory
    // an SM keeps resident) x (the device's SMs) blocks: more is an Error giving both.
    bool cooperative = false;
    // The kernel's preferred split of each SM's L1/shared storage, in percent given to shared memory
    // (CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT; a hint the driver may override), or one
    // of the kCarveout* values. It is the kernel's setting, kept for later launches; kjit sets it when
    // it differs from what this kernel object set last. Empty: left as it is.
    std::optional<int> shared_carveout;
};

// The most arguments one launch takes: they are packed into an array on the stack.
inline constexpr std::size_t kMaxRawKernelArgs = 64;

// What a binary built outside kjit (nvcc, a build system) holds: RawModule::from_image.
enum class ImageKind { cubin, ptx, fatbin, ltoir };

// Device code linked into a relocatable module (RawModuleOptions::link): a file, or bytes in
// memory. `LinkInput::file("helper.ltoir")`, `LinkInput::image(bytes, ImageKind::cubin, "helper")`.
struct KJIT_API LinkInput {
    // A file: a relocatable cubin (nvcc -dc -cubin), PTX, a fatbin, LTO-IR (nvcc -dlto) or a
    // library (.a), its kind read from its first bytes. Read at the module's first compile or load
    // in a process, its content part of the cache key; a missing file is an IoError naming it.
    std::string path;
    // Or the bytes themselves (path empty), of `kind`.
    std::vector<unsigned char> bytes;
    ImageKind kind = ImageKind::cubin;
    // In messages and nvJitLink's log. Empty: the file's name, or "link input N".
    std::string name;

    static LinkInput file(std::string path);
    static LinkInput image(std::vector<unsigned char> bytes, ImageKind kind, std::string name = {});
};

struct KJIT_API RawModuleOptions {
    // Extra NVRTC options ("-lineinfo", "--use_fast_math", "-DTILE=32"...), after kjit's own.
    // "-rdc=true", "-dc" (or their long forms) make relocatable device code: the module is linked
    // with nvJitLink (loaded at run time like NVRTC) and the CUDA device runtime (libcudadevrt.a),
    // so that kernels may launch kernels (dynamic parallelism), and with `link`. Cached like any
    // module, under a key covering every input, nvJitLink's version and the device runtime's bytes.
    std::vector<std::string> nvrtc_options;
    // Device code linked into a relocatable module (the options must make it one): other modules'
    // __device__ functions and variables, declared extern in the source, as nvcc -rdc links them.
    // LTO-IR among them makes the link an LTO link (-lto).
    std::vector<LinkInput> link;
    // C++ names of kernels to find by name, as written in get_function(): template instantiations
    // ("scale<float, 4>"), kernels with C++ linkage ("ns::kernel"). NVRTC instantiates them and
    // gives their mangled names.
    std::vector<std::string> name_expressions;
    // The source includes CUDA toolkit headers with quotes (`#include "cuda_fp16.h"`); `#include <...>`
    // turns this on by itself. The toolkit's include folder is then searched.
    bool toolkit_headers = false;
    // Headers given as text, found by their include name without a file (as NVRTC and jitify2 offer):
    // `{{"tile.cuh", "#define TILE 32"}}` for `#include "tile.cuh"`. They are part of the cache key.
    // So is the content of every file the source includes from disk through "-I" options or
    // relative to the working folder, followed through nested includes: an edited header is a cache
    // miss. An include through a macro (`#include HEADER`) is not followed; name such a header here.
    std::vector<std::pair<std::string, std::string>> headers;
    // The module's own target, for code that needs one: "sm_90a" (architecture-specific: wgmma,
    // setmaxnreg; runs on compute capability 9.0 only), "sm_100a", "sm_100f" (family-specific:
    // runs on 10.x from 10.0 on), or any "sm_XX". Empty: the device's architecture, as every kjit
    // kernel. Keyed and cached like any target; on a device where it cannot run, the first use is
    // an Error saying where it runs. An "-arch=..." or "--gpu-architecture=..." among nvrtc_options
    // (as CuPy users write it) is moved here.
    std::string arch;
    // A label: the program's name in NVRTC's messages, the cache entry and the manifest.
    // Empty: "raw_module" (RawKernel: the kernel's name).
    std::string name;
};

// What the driver says about a kernel loaded on a device (CuPy's RawKernel.attributes). An
// attribute the driver does not know keeps the default written here.
struct KJIT_API RawKernelAttributes {
    std::string arch;                        // what the loaded cubin was built for
    bool compiled_from_ptx = false;          // the driver compiled cached PTX for this GPU
    int max_threads_per_block = 0;
    int num_regs = 0;
    std::size_t static_shared_bytes = 0;
    std::size_t max_dynamic_shared_bytes = 0;  // what a launch may ask for now without raising it
    std::size_t local_bytes = 0;               // per thread
    std::size_t const_size_bytes = 0;          // user __constant__ memory the kernel needs
    int ptx_version = 0;                       // 10 * major + minor
    int binary_version = 0;
    bool cache_mode_ca = false;                // global loads cached in L1 (ptxas's -dlcm=ca)
    int preferred_shared_memory_carveout = kCarveoutDefault;  // percent, or kCarveoutDefault
    // Clusters: the kernel must be launched with one (__cluster_dims__ or the attribute), the
    // cluster it was compiled for ({0, 0, 0}: none), whether clusters above 8 blocks may be asked
    // for, and its CUclusterSchedulingPolicy (0 default, 1 spread, 2 load balancing).
    bool cluster_size_must_be_set = false;
    Dim3 required_cluster{0, 0, 0};
    bool non_portable_cluster_size_allowed = false;
    int cluster_scheduling_policy_preference = 0;
    std::vector<std::size_t> parameter_sizes;  // bytes, one per parameter (none listed if the driver cannot say)
};

class RawKernel;

// A __device__ or __constant__ variable of a module loaded on a device.
struct KJIT_API RawGlobal {
    void* address = nullptr;  // a device address, valid while the module stays loaded (see keep_alive)
    std::size_t bytes = 0;
    Device device;
    std::shared_ptr<const void> keep_alive;  // holds the loaded module: the address is valid while it lives
};

// A CUDA program holding any number of kernels.
class KJIT_API RawModule {
public:
    explicit RawModule(std::string source, RawModuleOptions options = {});

    // A module from a binary built elsewhere: a cubin, a fatbin, or PTX (which the driver compiles
    // for the GPU), its kind read from its first bytes. Kernels are found by name as in a source
    // module (a C++ kernel by its mangled name). It gets no cache entry: it is its own binary. A
    // file that is missing or cannot be read is an IoError naming the path; code for another
    // architecture is an Error naming both architectures at the first use on a device. LTO-IR
    // (nvcc -dlto) is linked by nvJitLink (-lto) for the device at its first use there, once per
    // process and device: a LinkError with nvJitLink's log when it cannot be (code for another
    // architecture). `name` labels the module in messages (default: the file's name).
    static RawModule from_file(const std::string& path, std::string name = {});
    static RawModule from_image(std::vector<unsigned char> bytes, ImageKind kind, std::string name = {});
    // The binary's kind for a module made from one; empty for a module compiled from source.
    std::optional<ImageKind> image_kind() const noexcept;

    const std::string& source() const noexcept;
    const RawModuleOptions& options() const noexcept;
    // options().name, or the default label.
    const std::string& name() const noexcept;

    // The kernel `name`: an extern "C" kernel of the source, or one of the name expressions. A
    // name that is neither a C identifier nor a name expression is an Error at once (listing the
    // name expressions); a C identifier the module does not define is an Error when the kernel is
    // first used on a device.
    RawKernel get_function(const std::string& name) const;

    // The __device__ or __constant__ variable `name` of the module on `device` (Device(): the
    // current one), the module loaded there first (compiled or found in a cache): its address and
    // size (cuModuleGetGlobal). A variable at global scope is found by its name; one in a namespace
    // or a variable template has a mangled name: add its address to RawModuleOptions::
    // name_expressions ("&ns::table", "&table<float>"), then ask for "ns::table" or "&ns::table".
    // A name the module lacks is an Error naming the module and the variable.
    RawGlobal global(const std::string& name, Device device = Device()) const;
    // The same variable as a 1-d Array of `dtype` (bytes / itemsize elements): a view that keeps the
    // module loaded and is never freed by kjit, to fill with copy_from_host() or read back before a
    // launch. A size that is not a multiple of the dtype's is an Error saying both.
    Array global(const std::string& name, DType dtype, Device device = Device()) const;

    // Compiles the module for `arch` ("sm_90"; empty: options().arch, else KJIT_ARCH, else the
    // current device, else sm_80), or finds it in the kernel cache. A module with an arch of its
    // own is built for that alone: another `arch` is an Error. Throws CompileError with NVRTC's log and the source
    // lines it points at; NoDeviceError when it is in no cache and there is no NVRTC.
    // Binary::entry_points holds each name expression with its mangled name; Binary::source is the
    // module's source. A relocatable module gives the linked cubin and no PTX. A module made from a
    // cubin or PTX gives that binary; from LTO-IR, the cubin nvJitLink links for `arch` (empty:
    // KJIT_ARCH, else the current device); from a fatbin, an Error (there is nothing to compile).
    Binary compile(const std::string& arch = {}) const;

private:
    friend class RawKernel;
    RawModule() = default;
    static RawModule from_binary(jit::kernels::BinaryImage image, std::string name);
    std::shared_ptr<const jit::RawModuleState> state_;
};

// One kernel of a module.
class KJIT_API RawKernel {
public:
    // A module of `source` holding the kernel `name`, an extern "C" name or a C++ name expression
    // (added to options.name_expressions when it is not there), so that a kernel the source lacks
    // is a CompileError naming it.
    RawKernel(std::string source, std::string name, RawModuleOptions options = {});

    const std::string& name() const noexcept;
    const RawModule& module() const noexcept;

    // Launches grid x block threads with `args` on config.stream. Throws TypeError when the
    // number or sizes of the arguments do not match the kernel's parameters, Error (naming the
    // argument's position, from 0) for an array on the host or on another device than the
    // stream's, CompileError on the first use of a module that does not compile. A grid with an
    // extent 0 launches nothing (after the checks).
    void operator()(Dim3 grid, Dim3 block, std::initializer_list<KernelArg> args,
                    const LaunchConfig& config = {}) const {
        launch(grid, block, std::span<const KernelArg>(args.begin(), args.size()), config);
    }
    // The same with arguments gathered at run time.
    void launch(Dim3 grid, Dim3 block, std::span<const KernelArg> args, const LaunchConfig& config = {}) const;

    // Loads the kernel on `device` (compiling the module first if needed) and says what the driver
    // knows about it.
    RawKernelAttributes attributes(Device device = Device()) const;

private:
    friend class RawModule;
    RawKernel(RawModule module, std::string name);
    std::shared_ptr<const jit::RawKernelState> state_;
};

}  // namespace kjit
