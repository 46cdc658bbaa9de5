// RawKernel: one kernel of a RawModule, found and described on each device it runs on. Launching
// is in raw_launch.cpp.
#include "kjit/raw_kernel.hpp"

#include <algorithm>

#include "jit/kernels/raw/module.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit {
namespace {

RawModuleOptions with_kernel(const std::string& name, RawModuleOptions options) {
    if (name.empty()) throw Error("a raw kernel needs a name");
    // Registered as a name expression even when it is an extern "C" name (NVRTC lowers that to
    // itself): a kernel the source lacks is then a CompileError now, not an error at first launch,
    // and a C++ or template kernel needs nothing more.
    if (std::find(options.name_expressions.begin(), options.name_expressions.end(), name) ==
        options.name_expressions.end())
        options.name_expressions.push_back(name);
    if (options.name.empty()) options.name = name;
    return options;
}

int function_attribute(detail::Driver& d, CUfunction_attribute attribute, CUfunction f) {
    int value = 0;
    KJIT_CU_CHECK(d.cuFuncGetAttribute(&value, attribute, f));
    return value;
}

std::unique_ptr<jit::kernels::RawFunction> load_function(const jit::RawModuleState& module, const std::string& name,
                                                int ordinal) {
    auto f = std::make_unique<jit::kernels::RawFunction>();
    const jit::compile::LoadedProgram& loaded = module.on_device(ordinal);
    f->module = loaded.module;
    f->function = module.function(name, ordinal);
    f->ordinal = ordinal;
    f->arch = loaded.arch;
    f->compiled_from_ptx = loaded.compiled_from_ptx;
    detail::Driver& d = detail::driver_on(ordinal);
    // The parameters' sizes, so that a launch can refuse a float64 where the kernel takes a float
    // (the driver would copy 8 bytes into a 4-byte slot without a word). An index past the last
    // parameter is CUDA_ERROR_INVALID_VALUE; any other failure leaves launches unchecked rather
    // than impossible.
    if (d.cuFuncGetParamInfo != nullptr) {
        int count = 0;
        for (; count <= static_cast<int>(kMaxRawKernelArgs); ++count) {
            std::size_t offset = 0, size = 0;
            const CUresult st = d.cuFuncGetParamInfo(f->function, static_cast<std::size_t>(count), &offset, &size);
            if (st == CUDA_ERROR_INVALID_VALUE) break;
            if (st != CUDA_SUCCESS) {
                count = -1;
                break;
            }
            if (count < static_cast<int>(kMaxRawKernelArgs)) f->param_sizes[count] = static_cast<std::uint32_t>(size);
        }
        f->param_count = count;  // kMaxRawKernelArgs + 1: more than a launch can pass
    }
    f->dynamic_shared_limit = static_cast<std::size_t>(
        function_attribute(d, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f->function));
    return f;
}

}  // namespace

namespace jit {

const kernels::RawFunction& RawKernelState::on_device(int ordinal) const {
    if (const kernels::RawFunction* f = functions.find(ordinal)) return *f;
    return functions.get(ordinal, [&] { return load_function(*module_state, name, ordinal); });
}

}  // namespace jit

RawKernel::RawKernel(std::string source, std::string name, RawModuleOptions options)
    : RawKernel(RawModule(std::move(source), with_kernel(name, std::move(options))), name) {}

RawKernel::RawKernel(RawModule module, std::string name) {
    std::shared_ptr<const jit::RawModuleState> module_state = module.state_;
    state_ = std::make_shared<const jit::RawKernelState>(std::move(module), std::move(module_state), std::move(name));
}

const std::string& RawKernel::name() const noexcept { return state_->name; }
const RawModule& RawKernel::module() const noexcept { return state_->module; }

RawKernelAttributes RawKernel::attributes(Device device) const {
    if (!device.is_cuda()) throw Error("raw kernel '" + state_->name + "': attributes are for a CUDA device, not " +
                                       device.to_string());
    const jit::kernels::RawFunction& f = state_->on_device(device.ordinal());
    detail::Driver& d = detail::driver_on(f.ordinal);
    auto get = [&](CUfunction_attribute a) { return function_attribute(d, a, f.function); };
    // Attributes newer than the first CUDA releases: one the driver does not know keeps `fallback`.
    auto get_or = [&](CUfunction_attribute a, int fallback) {
        int value = 0;
        return d.cuFuncGetAttribute(&value, a, f.function) == CUDA_SUCCESS ? value : fallback;
    };
    RawKernelAttributes a;
    a.arch = f.arch;
    a.compiled_from_ptx = f.compiled_from_ptx;
    a.max_threads_per_block = get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    a.num_regs = get(CU_FUNC_ATTRIBUTE_NUM_REGS);
    a.static_shared_bytes = static_cast<std::size_t>(get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES));
    a.max_dynamic_shared_bytes = static_cast<std::size_t>(get(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES));
    a.local_bytes = static_cast<std::size_t>(get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES));
    a.const_size_bytes = static_cast<std::size_t>(get(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES));
    a.ptx_version = get(CU_FUNC_ATTRIBUTE_PTX_VERSION);
    a.binary_version = get(CU_FUNC_ATTRIBUTE_BINARY_VERSION);
    a.cache_mode_ca = get_or(CU_FUNC_ATTRIBUTE_CACHE_MODE_CA, 0) != 0;
    a.preferred_shared_memory_carveout = get_or(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, kCarveoutDefault);
    a.cluster_size_must_be_set = get_or(CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, 0) != 0;
    a.required_cluster = Dim3(static_cast<unsigned>(get_or(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, 0)),
                              static_cast<unsigned>(get_or(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, 0)),
                              static_cast<unsigned>(get_or(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, 0)));
    a.non_portable_cluster_size_allowed = get_or(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 0) != 0;
    a.cluster_scheduling_policy_preference = get_or(CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, 0);
    const int known = std::min(f.param_count, static_cast<int>(kMaxRawKernelArgs));
    for (int k = 0; k < known; ++k) a.parameter_sizes.push_back(f.param_sizes[k]);
    return a;
}

}  // namespace kjit
