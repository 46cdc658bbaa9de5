// Module: a compiled kernel's module loaded on one device (ElementwiseKernel::load), for
// launching its entry points with the driver API. Copies share the loaded module, which stays
// loaded while any copy (or kjit itself) holds it.
#pragma once

#include "kjit/export.hpp"

#include <map>
#include <memory>
#include <string>

#include "kjit/cuda_handles.hpp"

namespace kjit {

namespace detail {
struct ModuleAccess;
}

class KJIT_API Module {
public:
    Module() = default;

    // The kernel of entry point `name` (as Binary::entry_points names it), or of a symbol the
    // module defines. kjit::Error listing the entry points when the module has neither.
    CUfunction function(const std::string& name) const;
    // The entry points by name, with their symbols, as Binary::entry_points.
    const std::map<std::string, std::string>& entry_points() const;
    CUmodule handle() const;
    const std::string& arch() const;   // what the loaded cubin was built for
    bool compiled_from_ptx() const;    // the driver compiled cached PTX for this GPU (and kjit cached the result)

private:
    friend struct detail::ModuleAccess;
    struct State;
    const State& state() const;  // Error for a default-constructed Module
    std::shared_ptr<const State> state_;
};

}  // namespace kjit
