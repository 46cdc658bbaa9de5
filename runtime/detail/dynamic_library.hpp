// A shared library opened with dlopen and closed never: the CUDA libraries kjit loads stay for
// the life of the process (closing libcuda while handles exist would crash at exit).
#pragma once

#include <string>
#include <vector>

namespace kjit::detail {

struct DynamicLibrary {
    void* handle = nullptr;
    std::string path;   // the name or path that opened it
    std::string error;  // why none of the candidates opened, when handle is null

    void* symbol(const char* name) const noexcept;
};

// Tries each candidate (a soname or a path) in order and returns the first that opens.
DynamicLibrary open_first(const std::vector<std::string>& candidates);

}  // namespace kjit::detail
