#include "kjit/elementwise_kernel.hpp"

#include <cctype>
#include <functional>
#include <memory>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "jit/codegen/elementwise.hpp"
#include "jit/kernels/elementwise/calls.hpp"
#include "jit/kernels/manifest_fields.hpp"
#include "jit/frontend/params.hpp"
#include "jit/frontend/parser.hpp"
#include "jit/kernels/plan_note.hpp"
#include "jit/frontend/preamble.hpp"
#include "jit/compile/program_store.hpp"
#include "jit/frontend/type_checker.hpp"
#include "kjit/device.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/device_attributes.hpp"
#include "runtime/detail/module.hpp"

namespace kjit {

struct ElementwiseKernel::Spec {
    std::string in, out, op, name;
    KernelOptions options;
    // Bindings already launched, built on the first call (jit/kernels/elementwise/calls.hpp).
    std::shared_ptr<jit::kernels::ElementwiseCalls> calls = std::make_shared<jit::kernels::ElementwiseCalls>();
};

namespace {


// The parsed and checked kernel for one binding (the trees carry the types).
struct Checked {
    jit::frontend::Body body;
    jit::frontend::LoopHooks hooks;  // CuPy's loop_prep and after_loop (KernelOptions)
    jit::frontend::CheckedKernel kernel;
};

Checked parse_and_check(const std::string& in, const std::string& out, const std::string& op, const std::string& name,
                        const KernelOptions& options, const TypeBinding& types, bool need_complete) {
    jit::frontend::check_kernel_name(name);
    if (!options.reduce_type.empty())
        throw Error("kernel '" + name + "': KernelOptions::reduce_type ('" + options.reduce_type +
                    "') applies to reductions; an elementwise kernel has no partial results");
    jit::frontend::KernelSources sources;
    sources.in.text = in;
    sources.out.text = out;
    sources.body.text = op;
    std::vector<jit::frontend::Param> params = jit::frontend::parse_param_lists(sources.in, sources.out);
    if (need_complete || !types.empty()) jit::frontend::check_binding(params, sources, types);
    Checked c;
    c.body = jit::frontend::parse_body(sources.body);
    sources.loop_prep.text = options.loop_prep;
    sources.after_loop.text = options.after_loop;
    c.hooks.prep = jit::frontend::parse_body(sources.loop_prep);
    c.hooks.after = jit::frontend::parse_body(sources.after_loop);
    c.kernel = jit::frontend::check_kernel(std::move(params), c.body, sources, types, jit::frontend::outside_names(options.preamble, options.nvrtc_options),
                                 &c.hooks);
    return c;
}

}  // namespace

std::string format_type_binding(const TypeBinding& types) {
    std::string s;
    for (const auto& [ph, t] : types) s += (s.empty() ? "" : ",") + ph + "=" + std::string(t.name());
    return s;
}

TypeBinding parse_type_binding(const std::string& text) {
    TypeBinding b;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find(',', start);
        if (end == std::string::npos) end = text.size();
        std::string item = text.substr(start, end - start);
        start = end + 1;
        auto trim = [](std::string s) {
            while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.erase(s.begin());
            while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
            return s;
        };
        item = trim(item);
        if (item.empty()) {
            if (end == text.size()) break;
            throw TypeError("type binding '" + text + "': empty item");
        }
        const std::size_t eq = item.find('=');
        if (eq == std::string::npos)
            throw TypeError("type binding item '" + item + "' must look like T=float32");
        const std::string ph = trim(item.substr(0, eq));
        if (!jit::frontend::is_placeholder_name(ph))
            throw TypeError("type binding item '" + item + "': '" + ph + "' is not a placeholder (one upper-case letter)");
        if (b.count(ph)) throw TypeError("type binding '" + text + "' gives '" + ph + "' twice");
        b[ph] = DType::parse(trim(item.substr(eq + 1)));
        if (end == text.size()) break;
    }
    return b;
}

ElementwiseKernel::ElementwiseKernel(std::string in_params, std::string out_params, std::string operation,
                                     std::string name, KernelOptions options)
    : spec_(std::make_shared<const Spec>(
          Spec{std::move(in_params), std::move(out_params), std::move(operation), std::move(name), std::move(options)})) {}

ElementwiseKernel jit::ElementwiseKernelAccess::definition(const ElementwiseKernel& kernel) {
    const ElementwiseKernel::Spec& s = *kernel.spec_;
    if (!s.calls) return kernel;
    return ElementwiseKernel(std::make_shared<const ElementwiseKernel::Spec>(ElementwiseKernel::Spec{s.in, s.out, s.op, s.name, s.options, nullptr}));
}

long jit::ElementwiseKernelAccess::owners(const ElementwiseKernel& kernel) { return kernel.spec_.use_count(); }

const std::string& ElementwiseKernel::name() const noexcept { return spec_->name; }
const std::string& ElementwiseKernel::in_params() const noexcept { return spec_->in; }
const std::string& ElementwiseKernel::out_params() const noexcept { return spec_->out; }
const std::string& ElementwiseKernel::operation() const noexcept { return spec_->op; }
const KernelOptions& ElementwiseKernel::options() const noexcept { return spec_->options; }

void ElementwiseKernel::check(const TypeBinding& types) const {
    parse_and_check(spec_->in, spec_->out, spec_->op, spec_->name, spec_->options, types, false);
}

std::vector<std::string> ElementwiseKernel::placeholders() const {
    const std::vector<jit::frontend::Param> params =
        jit::frontend::parse_param_lists(jit::frontend::SourceText{"in", spec_->in}, jit::frontend::SourceText{"out", spec_->out});
    std::set<std::string> names;
    for (const jit::frontend::Param& p : params)
        if (p.is_placeholder) names.insert(p.type.spelling);
    return {names.begin(), names.end()};
}

std::string ElementwiseKernel::source(const TypeBinding& types) const {
    const Checked c = parse_and_check(spec_->in, spec_->out, spec_->op, spec_->name, spec_->options, types, true);
    jit::codegen::ElementwiseModuleSpec m{spec_->name, spec_->in, spec_->out, spec_->options.preamble, {}, {}};
    return jit::codegen::generate_elementwise(m, c.kernel, c.body, types, &c.hooks).source;
}

namespace {

// The manifest entry for this kernel and one binding: what KJIT_CACHE_RECORD writes and
// `kjit precompile` reads back.
std::string spec_json(const ElementwiseKernel& k, const TypeBinding& types, const jit::kernels::ModuleVariant& variant) {
    nlohmann::json e = jit::kernels::write_manifest_entry("elementwise", k.name(), k.in_params(), k.out_params(), k.options().preamble,
                                                 k.options().nvrtc_options, types, variant);
    e["op"] = k.operation();
    if (!k.options().loop_prep.empty()) e["loop_prep"] = k.options().loop_prep;
    if (!k.options().after_loop.empty()) e["after_loop"] = k.options().after_loop;
    return e.dump();
}

// "kernel 'axpb' (T=float32)", for errors, from the binding as format_type_binding() spells it.
std::string describe(const ElementwiseKernel& k, std::string_view binding) {
    return "kernel '" + k.name() + "' (" + std::string(binding) + ")";
}

// A kernel for one binding, ready to be looked up: its generated module and what the cache needs.
struct Prepared {
    jit::codegen::GeneratedModule generated;
    jit::compile::CachedProgram program;
    bool uses_index = false;  // the body reads `i`
};

// `small_only`: the small variant's own program (jit/codegen/elementwise.hpp), else the whole module.
Prepared prepare(const ElementwiseKernel& k, const TypeBinding& types, const jit::kernels::ModuleVariant& variant = {},
                 bool small_only = false) {
    const Checked c = parse_and_check(k.in_params(), k.out_params(), k.operation(), k.name(), k.options(), types, true);
    jit::codegen::ElementwiseModuleSpec m{k.name(), k.in_params(), k.out_params(), k.options().preamble, variant.scalar, variant.storage,
                                 small_only};
    Prepared p{jit::codegen::generate_elementwise(m, c.kernel, c.body, types, &c.hooks), {}, c.kernel.uses_i};
    jit::compile::CachedProgram& prog = p.program;
    prog.request.source = p.generated.source;
    prog.request.program_name = k.name() + ".cu";
    prog.request.user_texts = {{k.name() + ":op", k.operation()}};
    if (!k.options().loop_prep.empty()) prog.request.user_texts.emplace_back(k.name() + ":loop_prep", k.options().loop_prep);
    if (!k.options().after_loop.empty()) prog.request.user_texts.emplace_back(k.name() + ":after_loop", k.options().after_loop);
    // Generated code uses no texture or device-runtime API: -minimal saves a third of the compile
    // time on the GPU host (docs/perf-log.md). A preamble is the user's CUDA, so it may.
    if (k.options().preamble.empty()) prog.request.options.push_back("-minimal");
    for (const std::string& o : k.options().nvrtc_options) prog.request.options.push_back(o);
    // The program may live in the kernel's table of calls (a plan's loader keeps it): it keeps the definition only.
    prog.spec_json = [k = jit::ElementwiseKernelAccess::definition(k), types, variant] { return spec_json(k, types, variant); };
    prog.kernel_name = k.name();
    prog.types = kjit::format_type_binding(types);
    prog.description = describe(k, format_type_binding(types));
    return p;
}

}  // namespace

namespace {
std::string entry_name(const jit::codegen::GeneratedModule& g, jit::kernels::ElementwiseEntry e) {
    switch (e) {
        case jit::kernels::ElementwiseEntry::contiguous32: return g.contiguous32;
        case jit::kernels::ElementwiseEntry::contiguous64: return g.contiguous64;
        case jit::kernels::ElementwiseEntry::strided32: return g.strided32;
        case jit::kernels::ElementwiseEntry::strided64: return g.strided64;
        case jit::kernels::ElementwiseEntry::rows32: return g.rows32;
        case jit::kernels::ElementwiseEntry::tiled32: return g.tiled32;
        case jit::kernels::ElementwiseEntry::small32: return g.small32;
    }
    return {};
}
// The generated variants by their public names (Binary::entry_points), the unused ones left out.
std::map<std::string, std::string> variant_entry_points(const jit::codegen::GeneratedModule& g) {
    std::map<std::string, std::string> entries;
    for (int e = 0; e < jit::kernels::kElementwiseEntries; ++e) {
        const auto entry = static_cast<jit::kernels::ElementwiseEntry>(e);
        if (std::string symbol = entry_name(g, entry); !symbol.empty())
            entries.emplace(jit::kernels::elementwise_entry_label(entry), std::move(symbol));
    }
    return entries;
}
}  // namespace

Binary ElementwiseKernel::compile(const TypeBinding& types, const std::string& arch) const {
    return jit::kernels::compile_elementwise(*this, types, {}, arch);
}

Binary jit::kernels::compile_elementwise(const ElementwiseKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                                const std::string& arch) {
    Prepared p = prepare(kernel, types, variant);
    const jit::compile::FoundProgram found = jit::compile::find_or_compile_program(p.program, arch);
    Binary b;
    b.arch = found.entry->meta.arch;
    b.cubin = found.entry->cubin;
    b.ptx = found.entry->ptx;
    b.source = p.generated.source;
    b.compile_ms = found.compile_ms;
    b.log = found.log;
    b.entry_points = variant_entry_points(p.generated);
    return b;
}

Outputs::operator Array() const {
    if (arrays_.size() != 1)
        throw Error("the call has " + std::to_string(arrays_.size()) + " outputs: take them by index, not as one Array");
    return arrays_.front();
}

Outputs ElementwiseKernel::operator()(std::span<const KernelArg> args, const CallOptions& options) const {
    std::vector<Array> outputs;
    jit::kernels::call_elementwise(*this, *spec_->calls, args, options, &outputs);
    return Outputs(std::move(outputs));
}

void ElementwiseKernel::prepare(std::span<const KernelArg> args, const CallOptions& options) const {
    jit::kernels::prepare_elementwise(*this, *spec_->calls, args, options);
}

void ElementwiseKernel::launch(std::span<const KernelArg> args, const CallOptions& options) const {
    jit::kernels::call_elementwise(*this, *spec_->calls, args, options, nullptr);
}

Module ElementwiseKernel::load(const TypeBinding& types, Device device) const {
    if (!device.is_cuda()) throw Error("ElementwiseKernel::load needs a CUDA device, not " + device.to_string());
    return jit::kernels::load_elementwise(*this, types, {}, device.ordinal());
}

Module jit::kernels::load_elementwise(const ElementwiseKernel& kernel, const TypeBinding& types, const ModuleVariant& variant, int ordinal) {
    Prepared p = prepare(kernel, types, variant);
    const jit::compile::LoadedProgram loaded = jit::compile::load_program(p.program, ordinal);
    return detail::ModuleAccess::make(loaded.module, variant_entry_points(p.generated), loaded.arch, loaded.compiled_from_ptx);
}

namespace {
// A kernel's variants for one binding: the small variant's generation (it knows every variant's
// name and shape) and a maker of each variant's program, as calls compile them: the small variant
// generated on its own, the others cut out of the whole module (they share its support code),
// which is generated when one of them is first needed. The maker is not thread-safe (the loader
// calls it under its lock).
struct VariantPrograms {
    Prepared small;
    std::vector<std::vector<std::string>> groups;  // each entry's name, or none
    std::function<jit::compile::CachedProgram(std::size_t)> program_of;
};

VariantPrograms variant_programs(const ElementwiseKernel& kernel, const TypeBinding& types, const jit::kernels::ModuleVariant& variant) {
    VariantPrograms v{prepare(kernel, types, variant, true), std::vector<std::vector<std::string>>(jit::kernels::kElementwiseEntries), {}};
    for (int e = 0; e < jit::kernels::kElementwiseEntries; ++e) {
        const std::string name = entry_name(v.small.generated, static_cast<jit::kernels::ElementwiseEntry>(e));
        if (!name.empty()) v.groups[static_cast<std::size_t>(e)] = {name};
    }
    auto whole = std::make_shared<std::optional<Prepared>>();
    v.program_of = [small_program = v.small.program, whole, groups = v.groups, kernel = jit::ElementwiseKernelAccess::definition(kernel),
                    types, variant](std::size_t g) {
        if (static_cast<jit::kernels::ElementwiseEntry>(g) == jit::kernels::ElementwiseEntry::small32) return small_program;
        if (!*whole) *whole = prepare(kernel, types, variant);
        return jit::kernels::program_with_entries((*whole)->program, (*whole)->generated.entry_lines, groups[g]);
    };
    return v;
}

}  // namespace

namespace {

// What the elementwise code generated for a binding depends on, for its plan note.
jit::kernels::NoteFields note_fields(const ElementwiseKernel& k, const TypeBinding& types, const jit::kernels::ModuleVariant& variant) {
    return {{"elementwise", k.name(), k.in_params(), k.out_params(), k.operation(), k.options().preamble, k.options().loop_prep,
             k.options().after_loop},
            k.options().nvrtc_options, types, variant};
}

// The variants' launch shape and entry names as a plan note holds them, and back.
jit::kernels::PlanNote::Values note_values(const jit::kernels::ElementwiseVariants& v, const std::vector<std::vector<std::string>>& groups) {
    jit::kernels::PlanNote::Values values{{"vector_width", std::to_string(v.vector_width)},
                                 {"tile", std::to_string(v.tile)},
                                 {"rows", v.has_rows ? "1" : "0"},
                                 {"tiled", v.has_tiled ? "1" : "0"},
                                 {"uses_index", v.uses_index ? "1" : "0"}};
    for (int e = 0; e < jit::kernels::kElementwiseEntries; ++e)
        if (!groups[static_cast<std::size_t>(e)].empty())
            values.emplace_back("entry." + std::string(jit::kernels::elementwise_entry_label(static_cast<jit::kernels::ElementwiseEntry>(e))),
                                groups[static_cast<std::size_t>(e)][0]);
    return values;
}

bool from_note(const jit::kernels::PlanNote::NotedValues& values, jit::kernels::ElementwiseVariants& v, jit::kernels::EntryGroups& groups) {
    int rows = 0, tiled = 0, uses_index = 0;
    if (!jit::kernels::find_number(values, "vector_width", v.vector_width, 1, 16) ||
        !jit::kernels::find_number(values, "tile", v.tile, 1, 1024) || !jit::kernels::find_number(values, "rows", rows, 0, 1) ||
        !jit::kernels::find_number(values, "tiled", tiled, 0, 1) || !jit::kernels::find_number(values, "uses_index", uses_index, 0, 1))
        return false;
    v.has_rows = rows == 1;
    v.has_tiled = tiled == 1;
    v.uses_index = uses_index == 1;
    groups = jit::kernels::EntryGroups(jit::kernels::kElementwiseEntries);
    std::size_t entries = 0;
    for (int e = 0; e < jit::kernels::kElementwiseEntries; ++e) {
        const std::string_view* name =
            jit::kernels::find_value(values, jit::kernels::elementwise_entry_label(static_cast<jit::kernels::ElementwiseEntry>(e)), "entry.");
        if (name == nullptr) continue;
        if (name->empty() || name->find('\0') != std::string_view::npos) return false;
        groups.add(static_cast<std::size_t>(e), *name);
        ++entries;
    }
    // Every variant a call may pick must be there: the small, contiguous and strided ones always,
    // rows and tiled when said so; and nothing else in the note.
    using E = jit::kernels::ElementwiseEntry;
    for (const E e : {E::small32, E::contiguous32, E::contiguous64, E::strided32, E::strided64})
        if (groups.empty(static_cast<std::size_t>(e))) return false;
    if (v.has_rows == groups.empty(static_cast<std::size_t>(E::rows32))) return false;
    if (v.has_tiled == groups.empty(static_cast<std::size_t>(E::tiled32))) return false;
    return entries + 5 == values.size();
}

// The launch shape the generated code has, as a call plans with it.
void take_plan(const VariantPrograms& p, jit::kernels::ElementwiseVariants& v) {
    v.vector_width = p.small.generated.vector_width;
    v.tile = p.small.generated.tile;
    v.has_rows = !p.small.generated.rows32.empty();
    v.has_tiled = !p.small.generated.tiled32.empty();
    v.uses_index = p.small.uses_index;
}

}  // namespace

std::string jit::kernels::ModuleVariant::scalar_field() const {
    std::string s;
    for (const bool b : scalar) s += b ? '1' : '0';
    return s;
}

std::string jit::kernels::ModuleVariant::storage_field() const {
    std::string s;
    for (const auto& d : storage) {
        s += d ? d->name() : "-";
        s += ',';
    }
    return s;
}

jit::kernels::ElementwiseVariants jit::kernels::elementwise_variants(const ElementwiseKernel& kernel, const TypeBinding& types,
                                                   const ModuleVariant& variant, int ordinal) {
    // One copy of what the lambdas below need, shared: each std::function then holds a pointer
    // (no copy of the binding's map or the variant's vectors each, no heap block each).
    struct Context {
        ElementwiseKernel kernel;
        TypeBinding types;
        ModuleVariant variant;
    };
    const auto context = std::make_shared<const Context>(Context{ElementwiseKernelAccess::definition(kernel), types, variant});
    const jit::kernels::NoteFields fields = note_fields(kernel, types, variant);
    auto note = std::make_shared<PlanNote>(fields.fields,
                                           kjit::detail::device_attributes(ordinal).compute_capability(),
                                           static_cast<std::size_t>(kElementwiseEntries),
                                           [context] { return spec_json(context->kernel, context->types, context->variant); },
                                           kernel.name(), fields.binding);
    ElementwiseVariants v;
    EntryGroups groups;
    if (note->noted_values() && from_note(*note->noted_values(), v, groups)) {
        // A noted plan: nothing is checked or generated unless a variant the note has no key for
        // is needed.
        auto program_of = [context, made = std::optional<VariantPrograms>()](std::size_t g) mutable {
            if (!made) made = variant_programs(context->kernel, context->types, context->variant);
            return made->program_of(g);
        };
        v.loader = std::make_shared<LazyEntryPoints>(std::move(program_of), std::move(groups),
                                                     describe(kernel, fields.binding), ordinal, std::move(note));
        return v;
    }
    // A first call on small arrays, from disk or not, checks and generates once (from the
    // definition the context holds, so the programs need no copy of their own).
    VariantPrograms p = variant_programs(context->kernel, types, variant);
    take_plan(p, v);
    note->set_values(note_values(v, p.groups));
    v.loader = std::make_shared<LazyEntryPoints>(std::move(p.program_of), EntryGroups(p.groups), p.small.program.description, ordinal,
                                                 std::move(note));
    return v;
}

std::vector<jit::kernels::ElementwiseEntry> jit::kernels::elementwise_entries(const ElementwiseKernel& kernel, const TypeBinding& types,
                                                             const ModuleVariant& variant) {
    const Prepared p = prepare(kernel, types, variant);
    std::vector<ElementwiseEntry> out;
    for (int e = 0; e < kElementwiseEntries; ++e)
        if (!entry_name(p.generated, static_cast<ElementwiseEntry>(e)).empty()) out.push_back(static_cast<ElementwiseEntry>(e));
    return out;
}

const char* jit::kernels::elementwise_entry_label(ElementwiseEntry entry) {
    static const char* const labels[] = {"contiguous32", "contiguous64", "strided32", "strided64", "rows32", "tiled32", "small32"};
    return labels[static_cast<int>(entry)];
}

jit::kernels::CompiledModules jit::kernels::compile_elementwise_entry(const ElementwiseKernel& kernel, const TypeBinding& types,
                                                    const ModuleVariant& variant, const std::string& arch, ElementwiseEntry entry) {
    const VariantPrograms p = variant_programs(kernel, types, variant);
    if (p.groups[static_cast<std::size_t>(entry)].empty()) return {};
    compile::CachedProgram program = p.program_of(static_cast<std::size_t>(entry));
    const compile::FoundProgram found = compile::find_or_compile_program(program, arch);
    return {found.entry->meta.arch, found.compile_ms, found.entry->key, compile::alias_key(program)};
}

bool jit::kernels::note_elementwise_programs(const ElementwiseKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                                    const std::string& arch, const std::vector<std::string>& keys,
                                    const std::vector<std::string>& aliases) {
    const VariantPrograms p = variant_programs(kernel, types, variant);
    // Every variant the kernel has, and only those: a note missing one would send a call the long
    // way for it, which a read-only cache cannot note.
    for (std::size_t e = 0; e < p.groups.size(); ++e)
        if (p.groups[e].empty() != (e >= keys.size() || keys[e].empty()) || e >= aliases.size() || keys[e].empty() != aliases[e].empty())
            return false;
    ElementwiseVariants v;
    take_plan(p, v);
    const jit::kernels::NoteFields fields = note_fields(kernel, types, variant);
    return write_plan_note(fields.fields, arch, note_values(v, p.groups), keys, aliases);
}

}  // namespace kjit
