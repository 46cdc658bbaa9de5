// RawModule::global: a module's __device__ and __constant__ variables, found by name in the module
// loaded on a device (cuModuleGetGlobal), so that a table can be filled before a launch.
#include <string>

#include "jit/kernels/raw/module.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit {
namespace {

// The symbol of variable `name` in the cubin: the lowered name of the name expression `name` or
// `&name` (NVRTC lowers a variable's address: "&ns::table"), else `name` itself, which is the
// symbol of a variable at global scope (C++ does not mangle those).
std::string global_symbol(const jit::compile::LoadedProgram& loaded, const std::string& name) {
    if (loaded.entry)  // none for a module made from a binary: its names are its symbols
        for (const auto& [expression, lowered] : loaded.entry->meta.lowered_names)
            if (expression == name || expression == "&" + name) return lowered;
    return name;
}

}  // namespace

RawGlobal RawModule::global(const std::string& name, Device device) const {
    const jit::RawModuleState& s = *state_;
    if (!device.is_cuda())
        throw Error("raw module '" + s.label + "': global '" + name + "' is asked of " + device.to_string() +
                    "; a module's globals live on a CUDA device");
    const int ordinal = device.ordinal();
    const jit::compile::LoadedProgram& loaded = s.on_device(ordinal);
    const std::string symbol = global_symbol(loaded, name);
    detail::Driver& d = detail::driver_on(ordinal);
    CUdeviceptr address = 0;
    std::size_t bytes = 0;
    const CUresult st = d.cuModuleGetGlobal(&address, &bytes, loaded.module->handle(), symbol.c_str());
    if (st == CUDA_ERROR_NOT_FOUND) {
        const std::string plain = name.rfind('&', 0) == 0 ? name.substr(1) : name;
        throw Error("raw module '" + s.label + "' has no global '" + name +
                    "': it is not a __device__ or __constant__ variable of the source at global scope (one in a "
                    "namespace, or a variable template, has a mangled name: add \"&" + plain +
                    "\" to RawModuleOptions::name_expressions); the module's name expressions: " +
                    jit::quoted_list(s.options.name_expressions));
    }
    if (st != CUDA_SUCCESS)
        throw CudaError(st, "cuModuleGetGlobal(\"" + symbol + "\") in raw module '" + s.label + "'", __FILE__,
                        __LINE__);
    return RawGlobal{reinterpret_cast<void*>(address), bytes, Device::cuda(ordinal), loaded.module};
}

Array RawModule::global(const std::string& name, DType dtype, Device device) const {
    const RawGlobal g = global(name, device);
    if (g.bytes % dtype.itemsize() != 0)
        throw Error("raw module '" + state_->label + "': global '" + name + "' has " + std::to_string(g.bytes) +
                    " bytes, not a multiple of " + std::string(dtype.name()) + "'s " +
                    std::to_string(dtype.itemsize()) + "; view it as a dtype whose size divides it");
    // Borrowed: the module's memory, never freed by kjit; the buffer holds the module loaded.
    std::shared_ptr<Buffer> buffer =
        Buffer::borrow(g.address, g.bytes, g.device, std::const_pointer_cast<void>(g.keep_alive));
    const auto count = static_cast<std::int64_t>(g.bytes / dtype.itemsize());
    return Array::view_of(std::move(buffer), dtype, {count}, {1});
}

}  // namespace kjit
