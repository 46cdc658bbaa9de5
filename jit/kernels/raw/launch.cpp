// Launching a RawKernel. The warm path: one atomic load for the kernel on the stream's device, the
// arguments checked and packed into arrays on the stack, one cuLaunchKernel (cuLaunchKernelEx for
// a cluster or a cooperative grid: raw/launch_attributes.cpp), and the stream recorded on pool
// buffers; no host allocation, no lock held across the launch.
#include <algorithm>
#include <mutex>
#include <span>
#include <string>

#include "jit/kernels/raw/launch_attributes.hpp"
#include "jit/kernels/raw/module.hpp"
#include "kjit/error.hpp"
#include "kjit/raw_kernel.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit {
namespace {

std::string where(const std::string& kernel, std::size_t position) {
    return "raw kernel '" + kernel + "', argument " + std::to_string(position);
}

void check_array(const Array& a, std::size_t position, int ordinal, const std::string& kernel) {
    if (!a.valid()) throw Error(where(kernel, position) + " is an Array with no buffer (default-constructed)");
    const Device device = a.device();
    if (device.is_cpu())
        throw Error(where(kernel, position) + " is a host array (" + a.to_string() +
                    "): a kernel reads device memory; copy it with to(Device::cuda(" + std::to_string(ordinal) + "))");
    if (device.ordinal() != ordinal)
        throw Error(where(kernel, position) + " is on " + device.to_string() + " but the launch runs on cuda:" +
                    std::to_string(ordinal) + " (the stream's device)");
}

// What the driver copies for each argument must be what the kernel declares: a Scalar of another
// size would be read as garbage, or run into the next parameter.
void check_parameters(const jit::kernels::RawFunction& f, std::span<const KernelArg> args, const std::string& kernel) {
    if (args.size() != static_cast<std::size_t>(f.param_count)) {
        const std::string takes = f.param_count > static_cast<int>(kMaxRawKernelArgs)
                                      ? "more than " + std::to_string(kMaxRawKernelArgs) + " arguments (kjit's limit)"
                                      : std::to_string(f.param_count) + " argument" + (f.param_count == 1 ? "" : "s");
        throw TypeError("raw kernel '" + kernel + "' takes " + takes + ", but " + std::to_string(args.size()) +
                        (args.size() == 1 ? " was" : " were") + " given");
    }
    for (std::size_t k = 0; k < args.size(); ++k) {
        const bool array = args[k].is_array();
        const std::size_t given = array ? sizeof(void*) : args[k].scalar().dtype().itemsize();
        if (given == f.param_sizes[k]) continue;
        const std::string takes = ", but the kernel's parameter " + std::to_string(k) + " takes " +
                                  std::to_string(f.param_sizes[k]) + " bytes";
        if (array)
            throw TypeError(where(kernel, k) + " is an array, passed as a pointer (" + std::to_string(given) +
                            " bytes)" + takes);
        throw TypeError(where(kernel, k) + " is " + args[k].scalar().to_string() + ", " + std::to_string(given) +
                        " bytes" + takes + ": pass a value of the C++ type the kernel declares (2.0f for float, "
                        "std::int64_t{n} for long long) or Scalar(v).cast(DType::...)");
    }
}

// Lets the kernel use `bytes` of dynamic shared memory, up to what the device allows. Under the
// lock for function attributes: two kernel objects sharing a CUfunction must not race to set its
// limit, one lowering the other's. Under the lock the limit only grows.
void raise_dynamic_shared(const jit::kernels::RawFunction& f, std::size_t bytes, const std::string& kernel) {
    std::lock_guard lock(jit::kernels::function_attribute_mutex());
    detail::Driver& d = detail::driver_on(f.ordinal);
    int current = 0;
    KJIT_CU_CHECK(d.cuFuncGetAttribute(&current, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f.function));
    if (bytes > static_cast<std::size_t>(current)) {
        int static_bytes = 0;
        KJIT_CU_CHECK(d.cuFuncGetAttribute(&static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f.function));
        const DeviceProperties props = Device::cuda(f.ordinal).properties();
        if (bytes > props.shared_memory_per_block - std::min<std::size_t>(static_bytes, props.shared_memory_per_block))
            throw Error("raw kernel '" + kernel + "' asks for " + std::to_string(bytes) +
                        " bytes of dynamic shared memory per block, but " + props.name + " (cuda:" +
                        std::to_string(f.ordinal) + ") has " + std::to_string(props.shared_memory_per_block) +
                        " per block, of which the kernel's static shared memory takes " +
                        std::to_string(static_bytes));
        KJIT_CU_CHECK(d.cuFuncSetAttribute(f.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                           static_cast<int>(bytes)));
        current = static_cast<int>(bytes);
    }
    f.dynamic_shared_limit.store(static_cast<std::size_t>(current), std::memory_order_release);
}

// What the kernel was compiled to need of clusters (__cluster_dims__), when a launch disagrees.
std::string cluster_requirement(const jit::kernels::RawFunction& f, const LaunchConfig& config) {
    detail::Driver& d = detail::driver();
    int x = 0, y = 0, z = 0, must = 0;
    if (d.cuFuncGetAttribute(&x, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, f.function) != CUDA_SUCCESS ||
        d.cuFuncGetAttribute(&y, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, f.function) != CUDA_SUCCESS ||
        d.cuFuncGetAttribute(&z, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, f.function) != CUDA_SUCCESS ||
        d.cuFuncGetAttribute(&must, CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, f.function) != CUDA_SUCCESS)
        return {};
    const Dim3 c = config.cluster;
    const bool clustered = c.x != 1 || c.y != 1 || c.z != 1;
    if (x > 0 && clustered)
        return "the kernel was compiled for clusters of " +
               jit::kernels::dims_text(Dim3(unsigned(x), unsigned(y), unsigned(z))) +
               " (__cluster_dims__): launch it with that cluster or none";
    if (must != 0 && !clustered) return "the kernel must be launched with a cluster (LaunchConfig::cluster)";
    return {};
}

[[noreturn]] void fail_launch(CUresult status, const jit::kernels::RawFunction& f, const std::string& kernel, Dim3 grid,
                              Dim3 block, const LaunchConfig& config) {
    std::string detail;
    int max_threads = 0;
    const unsigned long long threads = 1ull * block.x * block.y * block.z;
    if (detail::driver().cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f.function) ==
            CUDA_SUCCESS &&
        threads > static_cast<unsigned long long>(max_threads))
        detail = "a block of " + std::to_string(threads) + " threads; this kernel takes at most " +
                 std::to_string(max_threads) + " per block";
    else
        detail = cluster_requirement(f, config);
    const bool ex = jit::kernels::needs_launch_ex(config);
    std::string call = std::string(ex ? "cuLaunchKernelEx(" : "cuLaunchKernel(") + kernel + ", grid " +
                       jit::kernels::dims_text(grid) + ", block " + jit::kernels::dims_text(block);
    const Dim3 c = config.cluster;
    if (c.x != 1 || c.y != 1 || c.z != 1) call += ", cluster " + jit::kernels::dims_text(c);
    if (config.cooperative) call += ", cooperative";
    call += ", " + std::to_string(config.shared_mem_bytes) + " bytes of dynamic shared memory)";
    throw CudaError(status, call, __FILE__, __LINE__, detail);
}

}  // namespace

void RawKernel::launch(Dim3 grid, Dim3 block, std::span<const KernelArg> args, const LaunchConfig& config) const {
    const jit::RawKernelState& s = *state_;
    if (args.size() > kMaxRawKernelArgs)
        throw Error("raw kernel '" + s.name + "': " + std::to_string(args.size()) +
                    " arguments; a launch takes at most " + std::to_string(kMaxRawKernelArgs));
    const int ordinal = config.stream.device().ordinal();

    // params[k] points at what the driver copies for argument k: an array's device address (kept in
    // `addresses`), or the Scalar's bytes, which live in `args` for the whole call.
    void* addresses[kMaxRawKernelArgs];
    void* params[kMaxRawKernelArgs];
    for (std::size_t k = 0; k < args.size(); ++k) {
        if (args[k].is_array()) {
            check_array(args[k].array(), k, ordinal, s.name);
            addresses[k] = args[k].array().data();
            params[k] = &addresses[k];
        } else {
            params[k] = const_cast<void*>(args[k].scalar().data());
        }
    }

    const jit::kernels::RawFunction& f = s.on_device(ordinal);
    if (f.param_count >= 0) check_parameters(f, args, s.name);
    if (grid.x == 0 || grid.y == 0 || grid.z == 0) return;  // no work: what a grid sized by n = 0 means
    if (config.shared_mem_bytes > f.dynamic_shared_limit.load(std::memory_order_acquire))
        raise_dynamic_shared(f, config.shared_mem_bytes, s.name);
    if (config.shared_carveout) jit::kernels::apply_carveout(f, *config.shared_carveout, s.name);

    void** const packed = args.empty() ? nullptr : params;
    CUresult status;
    if (!jit::kernels::needs_launch_ex(config)) {
        detail::Driver& d = detail::driver_on(ordinal);
        status = d.cuLaunchKernel(f.function, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                  static_cast<unsigned>(config.shared_mem_bytes), config.stream.handle(), packed,
                                  nullptr);
    } else {
        jit::kernels::check_launch_ex(f, grid, block, config, s.name);
        status = jit::kernels::launch_ex(f, grid, block, config, packed);
    }
    if (status != CUDA_SUCCESS) fail_launch(status, f, s.name, grid, block, config);

    // Pool memory is freed in order on the stream that used it last (kjit/buffer.hpp).
    for (const KernelArg& a : args) {
        if (!a.is_array()) continue;
        Buffer& buffer = *a.array().buffer();
        if (buffer.kind() == Buffer::Kind::device_pool) buffer.record_stream(config.stream);
    }
}

}  // namespace kjit
