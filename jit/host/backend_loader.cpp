#include "jit/host/backend_loader.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "kjit/error.hpp"
#include "runtime/detail/dynamic_library.hpp"

namespace kjit::jit::host {
namespace {

constexpr const char* kLibraryFile = "libkjit_host.so";
// Installed, it has no soname (a module, not a library to link), so it lives in a folder of its
// own under the library folder (as Debian wants of such files): LIBDIR/kjit/libkjit_host.so.
constexpr const char* kInstalledFile = "kjit/libkjit_host.so";
#ifndef KJIT_BINDIR_TO_LIBDIR
#define KJIT_BINDIR_TO_LIBDIR "../lib"
#endif

// The folder of the library holding this function: libkjit's own folder, where the build puts
// libkjit_host beside it and an install in kjit/ under it; for the kjit program, which holds
// kjit's objects itself, the folder of the program (BINDIR).
std::string own_folder() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&own_folder), &info) == 0 || info.dli_fname == nullptr) return {};
    const std::string path = info.dli_fname;
    const std::size_t slash = path.rfind('/');
    return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

struct Loaded {
    HostBackend* backend = nullptr;  // never freed: compiled code may run until exit
    std::string error;
};

Loaded load() {
    std::vector<std::string> candidates;
    if (const char* e = std::getenv("KJIT_HOST_BACKEND"); e != nullptr && *e) candidates.emplace_back(e);
    if (const std::string dir = own_folder(); !dir.empty()) {
        candidates.push_back(dir + kLibraryFile);                                    // build folder
        candidates.push_back(dir + kInstalledFile);                                  // LIBDIR
        candidates.push_back(dir + KJIT_BINDIR_TO_LIBDIR + "/" + kInstalledFile);   // BINDIR
    }
    candidates.emplace_back(kLibraryFile);
    const detail::DynamicLibrary lib = detail::open_first(candidates);
    Loaded l;
    const std::string hint =
        " (install it: apt-get install libkjit-host0, the package beside libkjit0; or build kjit with LLVM 19 "
        "found, apt-get install llvm-19-dev; or set KJIT_HOST_BACKEND to its path)";
    if (lib.handle == nullptr) {
        l.error = "kjit's host back end cannot be loaded, so kernels cannot run on host arrays: " + lib.error + hint;
        return l;
    }
    auto factory = reinterpret_cast<kjit_host_backend_factory>(lib.symbol(KJIT_HOST_BACKEND_FACTORY));
    if (factory == nullptr) {
        l.error = "kjit's host back end " + lib.path + " has no " + KJIT_HOST_BACKEND_FACTORY +
                  ": it was built from another version of kjit; rebuild it with this one";
        return l;
    }
    std::string why;
    l.backend = factory(kHostBackendVersion, &why);
    if (l.backend == nullptr) l.error = "kjit's host back end " + lib.path + " refused to start: " + why;
    return l;
}

const Loaded& loaded() {
    static const Loaded l = load();  // C++ guarantees one initialisation under concurrent first calls
    return l;
}

}  // namespace

HostBackend& host_backend() {
    const Loaded& l = loaded();
    if (l.backend == nullptr) throw Error(l.error);
    return *l.backend;
}

bool host_backend_available(std::string* why) {
    const Loaded& l = loaded();
    if (why != nullptr) *why = l.error;
    return l.backend != nullptr;
}

}  // namespace kjit::jit::host
