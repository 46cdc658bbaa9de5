#include "kjit/module.hpp"

#include "kjit/error.hpp"
#include "runtime/detail/module.hpp"

namespace kjit {

struct Module::State {
    std::shared_ptr<detail::LoadedModule> module;
    std::map<std::string, std::string> entry_points;
    std::string arch;
    bool compiled_from_ptx = false;
};

const Module::State& Module::state() const {
    if (!state_) throw Error("this kjit::Module holds no module (a default-constructed one)");
    return *state_;
}

CUfunction Module::function(const std::string& name) const {
    const State& s = state();
    const auto it = s.entry_points.find(name);
    if (it != s.entry_points.end()) return s.module->function(it->second);
    try {
        return s.module->function(name);
    } catch (const CudaError&) {
        std::string known;
        for (const auto& [entry, symbol] : s.entry_points) known += (known.empty() ? "" : ", ") + entry;
        throw Error("the module has no entry point or symbol '" + name + "' (entry points: " + (known.empty() ? "none" : known) + ")");
    }
}

const std::map<std::string, std::string>& Module::entry_points() const { return state().entry_points; }
CUmodule Module::handle() const { return state().module->handle(); }
const std::string& Module::arch() const { return state().arch; }
bool Module::compiled_from_ptx() const { return state().compiled_from_ptx; }

Module detail::ModuleAccess::make(std::shared_ptr<LoadedModule> module, std::map<std::string, std::string> entry_points,
                                  std::string arch, bool compiled_from_ptx) {
    Module m;
    m.state_ = std::make_shared<const Module::State>(
        Module::State{std::move(module), std::move(entry_points), std::move(arch), compiled_from_ptx});
    return m;
}

}  // namespace kjit
