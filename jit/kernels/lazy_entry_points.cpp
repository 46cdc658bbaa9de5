#include "jit/kernels/lazy_entry_points.hpp"

#include "kjit/error.hpp"

namespace kjit::jit::kernels {

compile::CachedProgram program_with_entries(const compile::CachedProgram& whole, const codegen::EntryLines& lines, const std::vector<std::string>& keep) {
    compile::CachedProgram p = whole;
    p.request.source = codegen::keep_entry_points(whole.request.source, lines, keep);
    p.key_source.clear();  // the group's own source is its key
    return p;
}

LazyEntryPoints::LazyEntryPoints(compile::CachedProgram whole, codegen::EntryLines lines, std::vector<std::vector<std::string>> groups, int ordinal,
                                 std::shared_ptr<PlanNote> note)
    : LazyEntryPoints(
          [whole, lines, groups](std::size_t g) { return program_with_entries(whole, lines, groups[g]); }, EntryGroups(groups),
          whole.description, ordinal, std::move(note)) {}

LazyEntryPoints::LazyEntryPoints(std::function<compile::CachedProgram(std::size_t)> program_of, EntryGroups groups, std::string description,
                                 int ordinal, std::shared_ptr<PlanNote> note)
    : program_of_(std::move(program_of)),
      groups_(std::move(groups)),
      description_(std::move(description)),
      ordinal_(ordinal),
      note_(std::move(note)) {}

void LazyEntryPoints::load_all() {
    for (std::size_t g = 0; g < groups_.size(); ++g)
        if (!groups_.empty(g)) (void)group(g);
}

const std::array<CUfunction, LazyEntryPoints::kMaxPerGroup>& LazyEntryPoints::group(std::size_t g) {
    if (g >= groups_.size() || groups_.empty(g)) throw Error("no such entry point group in " + description_);
    if (ready_[g].load(std::memory_order_acquire)) return functions_[g];
    // One loader at a time per kernel and device: concurrent first calls of a group load it once.
    std::lock_guard lock(mutex_);
    if (ready_[g].load(std::memory_order_relaxed)) return functions_[g];
    auto take = [&](std::shared_ptr<kjit::detail::LoadedModule> module) {
        for (std::size_t k = 0; k < groups_.count(g); ++k) functions_[g][k] = module->function(groups_.name(g, k));
        modules_[g] = std::move(module);
        ready_[g].store(true, std::memory_order_release);
    };
    if (note_) {
        if (std::shared_ptr<kjit::detail::LoadedModule> module = note_->find(g, ordinal_)) {
            try {
                take(std::move(module));
                return functions_[g];
            } catch (const CudaError&) {
                // The noted entry lacks a function the note named: a wrong note; the long way.
            }
        }
    }
    compile::CachedProgram program = program_of_(g);
    const compile::LoadedProgram loaded = compile::load_program(program, ordinal_);
    take(loaded.module);
    if (note_ && !loaded.compiled_from_ptx) note_->loaded(g, *loaded.entry, program);
    return functions_[g];
}

}  // namespace kjit::jit::kernels
