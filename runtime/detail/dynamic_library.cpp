#include "runtime/detail/dynamic_library.hpp"

#include <dlfcn.h>

namespace kjit::detail {

void* DynamicLibrary::symbol(const char* name) const noexcept {
    return handle != nullptr ? dlsym(handle, name) : nullptr;
}

DynamicLibrary open_first(const std::vector<std::string>& candidates) {
    DynamicLibrary lib;
    for (const std::string& name : candidates) {
        // RTLD_LOCAL: kjit's copy must not satisfy symbols of other libraries by accident.
        if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {
            lib.handle = h;
            lib.path = name;
            lib.error.clear();
            return lib;
        }
        const char* why = dlerror();
        if (!lib.error.empty()) lib.error += "; ";
        lib.error += why != nullptr ? why : name + ": unknown dlopen error";
    }
    return lib;
}

}  // namespace kjit::detail
