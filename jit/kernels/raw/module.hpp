// What RawModule and RawKernel objects share between copies: the program, and what has been loaded
// of it on each device. Internal to jit/raw_*.cpp.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda.h>

#include "jit/kernels/per_device.hpp"
#include "jit/kernels/raw/launch_attributes.hpp"
#include "jit/compile/program_store.hpp"
#include "jit/kernels/raw/image.hpp"
#include "kjit/raw_kernel.hpp"

// RawModuleState and RawKernelState are named by kjit/raw_kernel.hpp (RawModule's and RawKernel's
// state), so they are in kjit::jit, beside kjit::jit::kernels.
namespace kjit::jit {

// `"a", "b"` (or "none"): the name expressions as errors list them.
std::string quoted_list(const std::vector<std::string>& names);

struct RawModuleState {
    std::string source;
    RawModuleOptions options;
    std::string label;       // options.name, or the default
    std::string spec_json;   // the manifest entry (DESIGN.md, "kind": "raw")
    std::string key_source;  // what cache keys hash as the source (see raw_module.cpp)
    bool relocatable = false;  // -rdc/-dc among the options: linked by nvJitLink (raw/link_inputs.hpp)
    kernels::PerDevice<compile::LoadedProgram> loaded;
    // Set for a module made from a binary (RawModule::from_file / from_image): loaded as it is.
    std::shared_ptr<const kernels::BinaryImage> image;

    // The program to look up or compile (a fresh copy: the lookup fills in its target).
    compile::CachedProgram program() const;
    // The module loaded on device `ordinal` (compiled or found in a cache on first use).
    const compile::LoadedProgram& on_device(int ordinal) const;
    // Kernel `name` (an extern "C" name or a name expression) in the module loaded on `ordinal`.
    // Throws Error naming the name expressions when the module has no such kernel.
    CUfunction function(const std::string& name, int ordinal) const;
};

}  // namespace kjit::jit

namespace kjit::jit::kernels {

// A kernel loaded on one device, with what a launch checks against.
struct RawFunction {
    std::shared_ptr<detail::LoadedModule> module;  // keeps `function` valid
    CUfunction function = nullptr;
    int ordinal = 0;
    std::string arch;
    bool compiled_from_ptx = false;
    // The kernel's parameters, as the driver lays them out; -1 when the driver cannot say.
    int param_count = -1;
    std::array<std::uint32_t, kMaxRawKernelArgs> param_sizes{};
    // Dynamic shared memory a launch may ask for without raising the kernel's limit: a lower bound
    // of the driver's value (raised only, by raise_dynamic_shared in raw/launch.cpp).
    mutable std::atomic<std::size_t> dynamic_shared_limit{0};
    // Launch shapes already checked for clusters and cooperative grids, and the attributes set.
    mutable LaunchAttributeMemory attribute_launches;
};

}  // namespace kjit::jit::kernels

namespace kjit::jit {

struct RawKernelState {
    RawKernelState(RawModule module_, std::shared_ptr<const RawModuleState> module_state_, std::string name_)
        : module(std::move(module_)), module_state(std::move(module_state_)), name(std::move(name_)) {}

    RawModule module;
    std::shared_ptr<const RawModuleState> module_state;  // module's own
    std::string name;
    kernels::PerDevice<kernels::RawFunction> functions;

    // The kernel loaded on device `ordinal` (the module compiled or found in a cache, and loaded,
    // on first use there).
    const kernels::RawFunction& on_device(int ordinal) const;
};

}  // namespace kjit::jit
