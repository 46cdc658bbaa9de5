#include "jit/codegen/elementwise.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <sstream>

#include "jit/codegen/args_struct.hpp"
#include "jit/codegen/statement_printer.hpp"
#include "jit/codegen/templates.hpp"
#include "kjit/error.hpp"

namespace kjit::jit::codegen {

using namespace frontend;

namespace {

// --- the module ---

struct Operand {
    int param;     // index in kernel.params
    int slot;      // index among array operands (strided layout), -1 for scalars and raw
};

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
    std::string s;
    for (const std::string& p : parts) s += (s.empty() ? "" : sep) + p;
    return s;
}


// A rough measure of how much code the body becomes: nodes, with math calls (each a library
// routine inlined) and loops (bodies repeated) weighing more.
int body_cost(const Expr* e) {
    if (e == nullptr) return 0;
    switch (e->kind) {
        case ExprKind::unary: return 1 + body_cost(static_cast<const UnaryExpr*>(e)->operand.get());
        case ExprKind::binary: {
            const auto* b = static_cast<const BinaryExpr*>(e);
            return 1 + body_cost(b->lhs.get()) + body_cost(b->rhs.get());
        }
        case ExprKind::assign: {
            const auto* a = static_cast<const AssignExpr*>(e);
            return 1 + body_cost(a->target.get()) + body_cost(a->value.get());
        }
        case ExprKind::conditional: {
            const auto* c = static_cast<const ConditionalExpr*>(e);
            return 1 + body_cost(c->condition.get()) + body_cost(c->if_true.get()) + body_cost(c->if_false.get());
        }
        case ExprKind::cast: return 1 + body_cost(static_cast<const CastExpr*>(e)->operand.get());
        case ExprKind::call: {
            int cost = 16;
            for (const ExprPtr& a : static_cast<const CallExpr*>(e)->args) cost += body_cost(a.get());
            return cost;
        }
        case ExprKind::index: {
            const auto* ix = static_cast<const IndexExpr*>(e);
            return 1 + body_cost(ix->base.get()) + body_cost(ix->index.get());
        }
        default: return 1;
    }
}

int body_cost(const Stmt* s) {
    if (s == nullptr) return 0;
    switch (s->kind) {
        case StmtKind::expr: return body_cost(static_cast<const ExprStmt*>(s)->expr.get());
        case StmtKind::decl: {
            int cost = 0;
            for (const Declarator& d : static_cast<const DeclStmt*>(s)->declarators) cost += 1 + body_cost(d.init.get());
            return cost;
        }
        case StmtKind::block: {
            int cost = 0;
            for (const StmtPtr& b : static_cast<const BlockStmt*>(s)->body) cost += body_cost(b.get());
            return cost;
        }
        case StmtKind::if_: {
            const auto* i = static_cast<const IfStmt*>(s);
            return 1 + body_cost(i->condition.get()) + body_cost(i->then_branch.get()) + body_cost(i->else_branch.get());
        }
        case StmtKind::for_: {
            const auto* f = static_cast<const ForStmt*>(s);
            return 8 + body_cost(f->init.get()) + body_cost(f->condition.get()) + body_cost(f->step.get()) + 4 * body_cost(f->body.get());
        }
        case StmtKind::while_: {
            const auto* w = static_cast<const WhileStmt*>(s);
            return 8 + body_cost(w->condition.get()) + 4 * body_cost(w->body.get());
        }
        default: return 0;
    }
}

std::atomic<std::uint64_t> g_generations{0};

// Bodies above this cost are compute-bound: they are neither unrolled nor inlined at every element
// of a vector (a call instead), which keeps NVRTC's time and the cubin small.
constexpr int kHeavyBody = 96;

}  // namespace

std::uint64_t elementwise_generations() noexcept { return g_generations.load(std::memory_order_relaxed); }

GeneratedModule generate_elementwise(const ElementwiseModuleSpec& spec, const CheckedKernel& kernel, const Body& body,
                                     const TypeBinding& binding, const LoopHooks* hooks) {
    if (!kernel.complete) throw TypeError("kernel '" + spec.name + "': every type placeholder needs a type to generate code");
    g_generations.fetch_add(1, std::memory_order_relaxed);
    const std::vector<Param>& params = kernel.params;
    const std::size_t np = params.size();
    std::vector<bool> scalar = spec.scalar;
    scalar.resize(np, false);
    std::vector<std::optional<DType>> storage_of = spec.storage;
    storage_of.resize(np);
    for (std::size_t k = 0; k < np; ++k) {
        if (scalar[k] && (params[k].raw || params[k].is_output))
            throw TypeError("parameter '" + params[k].name + "' cannot be a scalar: it is " +
                            (params[k].raw ? "raw" : "an output"));
        if (storage_of[k] && !(*storage_of[k] == *kernel.param_types[k]) && (params[k].raw || params[k].is_output || scalar[k]))
            throw TypeError("parameter '" + params[k].name + "' must be stored as its own type " +
                            std::string(kernel.param_types[k]->name()) + ": only array inputs convert on load");
    }
    // The dtype each parameter has in memory, and its spelling.
    auto stored = [&](std::size_t k) { return storage_of[k] ? *storage_of[k] : *kernel.param_types[k]; };

    GeneratedModule m;
    std::vector<Operand> operands;
    std::size_t min_item = 16, max_item = 1;
    std::vector<bool> dtype_used = kernel.dtype_used;
    for (std::size_t k = 0; k < np; ++k) {
        const bool array = !params[k].raw && !scalar[k];
        operands.push_back({static_cast<int>(k), array ? m.array_operands++ : -1});
        dtype_used[stored(k).id()] = true;
        if (array) {
            min_item = std::min(min_item, stored(k).itemsize());
            max_item = std::max(max_item, stored(k).itemsize());
        }
    }
    // Each thread moves 16 bytes of the narrowest operand per step, at most 64 of the widest.
    m.vector_width = m.array_operands == 0 ? 1 : static_cast<int>(std::max<std::size_t>(1, std::min(16 / min_item, 64 / max_item)));

    const std::string& name = spec.name;
    const std::string args_type = name + "_args";
    m.contiguous32 = name + "_contiguous32";
    m.small32 = name + "_small32";
    m.contiguous64 = name + "_contiguous64";
    m.strided32 = name + "_strided32";
    m.strided64 = name + "_strided64";
    if (m.array_operands > 0) m.rows32 = name + "_rows32";
    // The tiled variant stages each array input in a TILE x (TILE + 1) tile of shared memory
    // (the extra column keeps a column's elements in different banks), within 40 KiB of static
    // shared memory; TILE is chosen below.
    std::size_t input_bytes = 0;
    for (const Operand& o : operands)
        if (o.slot >= 0 && !params[o.param].is_output) input_bytes += stored(o.param).itemsize();
    // 64 x 64 tiles where every input's tile fits in 40 KiB of static shared memory, else 32 x 32
    // (measured on the H200 with each thread's loads issued together: 93% of copy against 83%;
    // docs/perf-log.md). KJIT_TUNE_TILE=32 keeps the smaller tile, for measurements.
    const char* tune = std::getenv("KJIT_TUNE_TILE");
    const int first_tile = tune != nullptr && std::string(tune) == "32" ? 32 : 64;
    for (const int tile : {first_tile, 32}) {
        const std::size_t bytes = input_bytes * static_cast<std::size_t>(tile * (tile + 1));
        if (m.array_operands > 1 && bytes > 0 && bytes <= 40 * 1024 && m.tiled32.empty()) {
            m.tiled32 = name + "_tiled32";
            m.tiled_shared_bytes = bytes;
            m.tile = tile;
        }
    }

    std::ostringstream s;
    s << "// kjit elementwise kernel '" << name << "'\n";
    s << "//   in:  " << spec.in_params << "\n//   out: " << spec.out_params << "\n";
    if (!binding.empty()) {
        std::vector<std::string> b;
        for (const auto& [ph, t] : binding) b.push_back(ph + "=" + std::string(t.name()));
        s << "//   types: " << join(b, ", ") << "\n";
    }
    for (std::size_t k = 0; k < np; ++k)
        if (storage_of[k] && !(*storage_of[k] == *kernel.param_types[k]))
            s << "//   " << params[k].name << " stored as " << storage_of[k]->name() << "\n";
    if (dtype_used[DType::float16]) s << "#define KJIT_USE_FLOAT16\n";
    if (dtype_used[DType::bfloat16]) s << "#define KJIT_USE_BFLOAT16\n";
    if (dtype_used[DType::float16] || dtype_used[DType::bfloat16]) s << template_text("scalar_types.cuh") << "\n";
    if (dtype_used[DType::complex64] || dtype_used[DType::complex128]) s << template_text("complex.cuh") << "\n";
    if (spec.small_only) s << "#define KJIT_ELEMENTWISE_SMALL_ONLY\n";
    s << template_text("elementwise.cuh") << "\n";
    if (!spec.preamble.empty()) s << "// preamble\n" << spec.preamble << "\n\n";

    // The operation as a function of one element of each parameter.
    std::vector<std::string> body_params;
    for (std::size_t k = 0; k < np; ++k) {
        const Param& p = params[k];
        const std::string t = cuda_type(*kernel.param_types[k]);
        if (p.raw)
            body_params.push_back("const kjit::Raw<" + std::string(p.is_output || p.non_const ? "" : "const ") + t + "> " + p.name);
        else
            body_params.push_back(p.is_output ? t + "& " + p.name : "const " + t + " " + p.name);
    }
    body_params.push_back("const long long i");
    body_params.push_back("const long long n");
    // CuPy's loop_prep and after_loop: the thread's state (loop_prep's top-level variables) is a
    // struct each variant keeps for its loop, passed to the body by reference.
    const bool hooked = hooks != nullptr && !hooks->empty();
    const std::string state_type = name + "_state";
    if (hooked) body_params.push_back(state_type + "& " + kStateName);
    int cost = 0;
    for (const StmtPtr& st : body.statements) cost += body_cost(st.get());
    const bool heavy = cost > kHeavyBody;
    // KJIT_TUNE_UNROLL=N: N vectors per thread in the contiguous variants, for measurements
    // (docs/perf-log.md); part of the plan note's name, as the source changes with it.
    if (const char* tune_unroll = std::getenv("KJIT_TUNE_UNROLL"); tune_unroll != nullptr && std::atoi(tune_unroll) > 0)
        m.unroll = std::min(std::atoi(tune_unroll), 16);
    if (heavy) m.unroll = 1;
    s << "namespace kjit_body {\n";
    if (hooked) {
        s << "struct " << state_type << " {\n";
        for (const Local& l : kernel.locals) {
            if (!l.in_state) continue;
            s << "    " << cuda_type(*l.type) << " " << l.name;
            if (l.array_length >= 0) s << "[" << l.array_length << "]";
            s << ";\n";
        }
        s << "};\n";
    }
    s << (heavy ? "__device__ __noinline__ void " : "__device__ __forceinline__ void ") << name << "(" << join(body_params, ", ") << ") {\n";
    for (const auto& [ph, t] : binding) s << "    typedef " << cuda_type(t) << " " << ph << ";\n";
    s << "    (void)i;\n    (void)n;\n";
    print_statements(kernel, body, 1, s, BodyOrigin{name + ":op", name + ".cu"});
    s << "}\n";
    std::string prologue, epilogue;
    if (hooked) {
        // The hooks see the raw parameters and n (the checker allows nothing else of the call).
        std::vector<std::string> hook_params{state_type + "& " + kStateName}, hook_args{kStateName};
        for (std::size_t k = 0; k < np; ++k) {
            if (!params[k].raw) continue;
            hook_params.push_back(body_params[k]);
            hook_args.push_back("args." + params[k].name);
        }
        hook_params.push_back("const long long n");
        hook_args.push_back("(long long)args.n");
        auto hook = [&](const char* suffix, const char* string, const Body& statements) {
            s << "__device__ __forceinline__ void " << name << suffix << "(" << join(hook_params, ", ") << ") {\n";
            for (const auto& [ph, t] : binding) s << "    typedef " << cuda_type(t) << " " << ph << ";\n";
            s << "    (void)n;\n";
            print_statements(kernel, statements, 1, s, BodyOrigin{name + ":" + string, name + ".cu"});
            s << "}\n";
        };
        hook("_prep", "loop_prep", hooks->prep);
        hook("_after", "after_loop", hooks->after);
        prologue = "    kjit_body::" + state_type + " " + kStateName + ";\n    kjit_body::" + name + "_prep(" + join(hook_args, ", ") + ");\n";
        epilogue = "    kjit_body::" + name + "_after(" + join(hook_args, ", ") + ");\n";
    }
    s << "}  // namespace kjit_body\n\n";

    // The launch arguments, one struct so that the launcher writes them with one copy.
    std::vector<ArgsField> fields;
    for (std::size_t k = 0; k < np; ++k) {
        const Param& p = params[k];
        const std::string t = cuda_type(stored(k));
        const std::string cst = p.is_output || (p.raw && p.non_const) ? "" : "const ";
        if (p.raw)
            fields.push_back({"kjit::Raw<" + cst + t + ">", p.name, kjit::detail::ArgField::raw, stored(k)});
        else if (scalar[k])
            fields.push_back({t, p.name, kjit::detail::ArgField::value, stored(k)});
        else
            fields.push_back({cst + t + "*", p.name, kjit::detail::ArgField::pointer, stored(k)});
    }
    print_args_struct(s, args_type, fields, true);

    const int V = m.vector_width;
    const int A = std::max(1, m.array_operands);
    // An input's element as the parameter's type (converted from how it is stored).
    auto as_param = [&](const Operand& o, const std::string& element) {
        if (params[o.param].is_output) return element;
        return convert_value(element, stored(o.param), *kernel.param_types[o.param]);
    };
    auto call_body = [&](const std::vector<std::string>& elements, const std::string& index) {
        std::vector<std::string> a = elements;
        a.push_back("(long long)(" + index + ")");
        a.push_back("args.n");
        if (hooked) a.push_back(kStateName);
        return "kjit_body::" + name + "(" + join(a, ", ") + ");";
    };
    // Every parameter's element, array operand `slot` at offset `offset(slot)`.
    auto elements_at = [&](const std::function<std::string(int)>& offset) {
        std::vector<std::string> e;
        for (const Operand& o : operands) {
            const std::string arg = "args." + params[o.param].name;
            e.push_back(o.slot < 0 ? arg : as_param(o, arg + "[" + offset(o.slot) + "]"));
        }
        return e;
    };
    // Whether the body needs an output's old value (it reads it, or may leave it unwritten).
    auto loads_output = [&](const Operand& o) {
        return kernel.param_read[o.param] || !definitely_assigned(body, o.param);
    };
    // The vector loop body shared by the contiguous and row variants: `where(o)` is the address of
    // operand o's first element of this step, `splat(o)` true when that operand repeats one value.
    auto vector_step = [&](const std::string& pad, const std::function<std::string(const Operand&)>& where,
                           const std::function<std::string(const Operand&)>& broadcast_test) {
        std::vector<std::string> vec_elements;
        for (const Operand& o : operands) {
            const Param& p = params[o.param];
            if (o.slot < 0) {
                vec_elements.push_back("args." + p.name);
                continue;
            }
            const std::string t = cuda_type(stored(o.param));
            const std::string var = "v_" + p.name;
            const std::string test = broadcast_test(o);
            if (p.is_output && !loads_output(o)) {
                s << pad << "kjit::Vec<" << t << ", V> " << var << ";\n";
            } else if (!p.is_output && !test.empty()) {
                s << pad << "const kjit::Vec<" << t << ", V> " << var << " = " << test << " ? kjit::splat<V>(*("
                  << where(o) << ")) : kjit::load<V>(" << where(o) << ");\n";
            } else {
                s << pad << (p.is_output ? "" : "const ") << "kjit::Vec<" << t << ", V> " << var << " = kjit::load<V>("
                  << where(o) << ");\n";
            }
            vec_elements.push_back(as_param(o, var + ".v[k]"));
        }
        s << "#pragma unroll\n" << pad << "for (int k = 0; k < V; ++k) " << call_body(vec_elements, "e + k") << "\n";
        for (const Operand& o : operands)
            if (o.slot >= 0 && params[o.param].is_output)
                s << pad << "kjit::store<V>(" << where(o) << ", v_" << params[o.param].name << ");\n";
    };

    // Small: contiguous operands of at most kSmallCallElements (runtime/detail/call_layout.hpp),
    // one element per thread, no alignment needed. Such calls last as long as a launch whatever
    // the kernel, and this one costs NVRTC less than half of the contiguous variant (no vectors,
    // no unrolled steps): the difference a first call on small arrays waits for.
    s << "__device__ __forceinline__ void " << name << "_small(const " << args_type << "& args) {\n" << prologue;
    s << "    const int e = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);\n";
    s << "    if (e < static_cast<int>(args.n)) " << call_body(elements_at([](int) { return std::string("e"); }), "e") << "\n";
    s << epilogue << "}\n\n";

    if (!spec.small_only) {
        // Contiguous: every array operand is C-contiguous over the same n elements and aligned to
        // V elements. Each thread takes U vectors a grid apart at once (all loads issued before any
        // use), then single vectors, then a scalar tail. U = 1 (one 16-byte vector per thread, one
        // block per 256 vectors) measured best on the H200 for every bandwidth case, 1-3.5% above
        // U = 4 (docs/perf-log.md); KJIT_TUNE_UNROLL sets U for measurements.
        s << "template <class Index>\n__device__ __forceinline__ void " << name << "_contiguous(const " << args_type
          << "& args) {\n" << prologue;
        s << "    constexpr int V = " << V << ", U = " << m.unroll << ";\n";
        s << "    const Index n = static_cast<Index>(args.n);\n";
        s << "    const Index stride = static_cast<Index>(kjit::thread_count());\n";
        s << "    const Index vectors = n / V;\n";
        s << "    Index v = static_cast<Index>(kjit::thread_index());\n";
        s << "    for (; v + (U - 1) * stride < vectors; v += U * stride) {\n";
        {
            std::vector<std::string> elements;
            for (const Operand& o : operands) {
                const Param& p = params[o.param];
                if (o.slot < 0) {
                    elements.push_back("args." + p.name);
                    continue;
                }
                s << "        kjit::Vec<" << cuda_type(stored(o.param)) << ", V> v_" << p.name << "[U];\n";
                elements.push_back(as_param(o, "v_" + p.name + "[u].v[k]"));
            }
            s << "#pragma unroll\n        for (int u = 0; u < U; ++u) {\n";
            s << "            const Index e = (v + u * stride) * V;\n";
            for (const Operand& o : operands) {
                const Param& p = params[o.param];
                if (o.slot < 0 || (p.is_output && !loads_output(o))) continue;
                s << "            v_" << p.name << "[u] = kjit::load<V>(args." << p.name << " + e);\n";
            }
            s << "        }\n";
            s << "#pragma unroll\n        for (int u = 0; u < U; ++u) {\n";
            s << "            const Index e = (v + u * stride) * V;\n";
            s << "#pragma unroll\n            for (int k = 0; k < V; ++k) " << call_body(elements, "e + k") << "\n";
            for (const Operand& o : operands)
                if (o.slot >= 0 && params[o.param].is_output)
                    s << "            kjit::store<V>(args." << params[o.param].name << " + e, v_" << params[o.param].name << "[u]);\n";
            s << "        }\n";
        }
        s << "    }\n";
        s << "    for (; v < vectors; v += stride) {\n";
        s << "        const Index e = v * V;\n";
        vector_step("        ", [&](const Operand& o) { return "args." + params[o.param].name + " + e"; },
                    [](const Operand&) { return std::string(); });
        s << "    }\n";
        s << "    for (Index e = vectors * V + static_cast<Index>(kjit::thread_index()); e < n; e += stride)\n";
        s << "        " << call_body(elements_at([](int) { return std::string("e"); }), "e") << "\n";
        s << epilogue << "}\n\n";

        // Strided: any shapes and strides (broadcasting by zero strides), in C order over the shape.
        s << "template <class Index>\n__device__ __forceinline__ void " << name << "_strided(const " << args_type
          << "& args, const kjit::Layout<" << A << ">& layout) {\n" << prologue;
        s << "    const Index n = static_cast<Index>(args.n);\n";
        s << "    const Index stride = static_cast<Index>(kjit::thread_count());\n";
        s << "    for (Index e = static_cast<Index>(kjit::thread_index()); e < n; e += stride) {\n";
        s << "        Index off[" << A << "];\n";
        s << "        kjit::offsets(layout, e, off);\n";
        s << "        " << call_body(elements_at([](int slot) { return "off[" + std::to_string(slot) + "]"; }), "e") << "\n";
        s << "    }\n" << epilogue << "}\n\n";

        // Rows: the last dimension is contiguous (stride 1) or broadcast (stride 0) in every operand
        // and a multiple of V long, so V elements of a row move with vector loads (or one load
        // repeated); the other dimensions are strided. Broadcasting a row or a column runs here.
        if (!m.rows32.empty()) {
            s << "__device__ __forceinline__ void " << name << "_rows(const " << args_type << "& args, const kjit::Layout<" << A
              << ">& layout) {\n" << prologue;
            s << "    typedef int Index;\n";
            s << "    constexpr int V = " << V << ";\n";
            s << "    const int last = layout.ndim - 1;\n";
            s << "    const Index inner = static_cast<Index>(layout.shape[last]);\n";
            s << "    const Index stride = static_cast<Index>(kjit::thread_count());\n";
            s << "    const Index vectors = static_cast<Index>(args.n) / V;\n";
            s << "    for (Index v = static_cast<Index>(kjit::thread_index()); v < vectors; v += stride) {\n";
            s << "        const Index e = v * V;\n";
            s << "        const Index row = e / inner;\n";
            s << "        const Index col = e - row * inner;\n";
            s << "        Index off[" << A << "];\n";
            s << "        kjit::outer_offsets(layout, row, off);\n";
            vector_step(
                "        ",
                [&](const Operand& o) {
                    const std::string slot = std::to_string(o.slot);
                    return "args." + params[o.param].name + " + off[" + slot + "] + col * static_cast<Index>(layout.strides[" +
                           slot + "][last])";
                },
                [&](const Operand& o) { return "(layout.strides[" + std::to_string(o.slot) + "][last] == 0)"; });
            s << "    }\n" << epilogue << "}\n\n";
        }

        // Tiled: two dimensions where some inputs are transposed against the outputs (their first
        // dimension is the contiguous one). Each block takes TILE x TILE tiles; transposed inputs are
        // read along their contiguous dimension into shared memory, then every element is computed
        // in the outputs' order, so that reads and writes stay coalesced. Each thread issues all of
        // its loads of a step before using any (PER elements per operand), which is what brings the
        // transposed read near the copy's speed (docs/perf-log.md).
        if (!m.tiled32.empty()) {
            s << "__device__ __forceinline__ void " << name << "_tiled(const " << args_type << "& args, const kjit::Layout<" << A
              << ">& layout) {\n" << prologue;
            // A thread works on one lane of the tile and every STEP-th line across it: its PER
            // elements are at one base address plus multiples of a stride, which keeps registers
            // few (computing every element's address apart took 191 registers, one block per SM).
            s << "    constexpr int TILE = " << m.tile << ", STEP = 256 / TILE, PER = TILE / STEP;  // blockDim.x is 256\n";
            std::vector<const Operand*> inputs;
            for (const Operand& o : operands)
                if (o.slot >= 0 && !params[o.param].is_output) inputs.push_back(&o);
            for (const Operand* o : inputs)
                s << "    __shared__ " << cuda_type(stored(o->param)) << " tile_" << params[o->param].name << "[TILE][TILE + 1];\n";
            s << "    const int rows = static_cast<int>(layout.shape[0]), cols = static_cast<int>(layout.shape[1]);\n";
            s << "    const int tiles_across = (cols + TILE - 1) / TILE, tiles = ((rows + TILE - 1) / TILE) * tiles_across;\n";
            s << "    const int lane = threadIdx.x % TILE, band = threadIdx.x / TILE;\n";
            auto stride = [&](const Operand& o, int d) {
                return "(int)layout.strides[" + std::to_string(o.slot) + "][" + std::to_string(d) + "]";
            };
            for (const Operand* o : inputs)
                s << "    const bool staged_" << params[o->param].name << " = " << stride(*o, 0) << " == 1 && " << stride(*o, 1) << " != 1;\n";
            s << "    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {\n";
            s << "        const int r0 = (t / tiles_across) * TILE, c0 = (t % tiles_across) * TILE;\n";
            // Staging: row r0 + lane, columns c0 + band + k * STEP (along the input's contiguous
            // dimension across a warp); every load first, then the stores into the tile.
            s << "        const int sr = r0 + lane;\n";
            for (const Operand* o : inputs) {
                const std::string& pn = params[o->param].name;
                s << "        " << cuda_type(stored(o->param)) << " v_" << pn << "[PER];\n";
                s << "        if (staged_" << pn << ") {\n";
                s << "            const auto* base = args." << pn << " + sr * " << stride(*o, 0) << " + (c0 + band) * " << stride(*o, 1) << ";\n";
                s << "#pragma unroll\n            for (int k = 0; k < PER; ++k)\n";
                s << "                if (sr < rows && c0 + band + k * STEP < cols) v_" << pn << "[k] = base[k * STEP * " << stride(*o, 1) << "];\n";
                s << "        }\n";
            }
            for (const Operand* o : inputs) {
                const std::string& pn = params[o->param].name;
                s << "        if (staged_" << pn << ") {\n#pragma unroll\n            for (int k = 0; k < PER; ++k)\n";
                s << "                if (sr < rows && c0 + band + k * STEP < cols) tile_" << pn << "[band + k * STEP][lane] = v_" << pn << "[k];\n";
                s << "        }\n";
            }
            s << "        __syncthreads();\n";
            // Computing: column c0 + lane, rows r0 + band + k * STEP (the outputs' order across a
            // warp); every input's values first, one loop per input and case (a select between the
            // tile and memory would issue both loads), then the body and the stores.
            s << "        const int cc = c0 + lane;\n";
            for (const Operand* o : inputs) {
                const std::string& pn = params[o->param].name;
                s << "        if (staged_" << pn << ") {\n#pragma unroll\n            for (int k = 0; k < PER; ++k)\n";
                s << "                if (r0 + band + k * STEP < rows && cc < cols) v_" << pn << "[k] = tile_" << pn << "[lane][band + k * STEP];\n";
                s << "        } else {\n";
                s << "            const auto* base = args." << pn << " + (r0 + band) * " << stride(*o, 0) << " + cc * " << stride(*o, 1) << ";\n";
                s << "#pragma unroll\n            for (int k = 0; k < PER; ++k)\n";
                s << "                if (r0 + band + k * STEP < rows && cc < cols) v_" << pn << "[k] = base[k * STEP * " << stride(*o, 0) << "];\n";
                s << "        }\n";
            }
            s << "#pragma unroll\n        for (int k = 0; k < PER; ++k) {\n";
            s << "            const int r = r0 + band + k * STEP;\n";
            s << "            if (r >= rows || cc >= cols) continue;\n";
            std::vector<std::string> elements;
            for (const Operand& o : operands) {
                if (o.slot < 0)
                    elements.push_back("args." + params[o.param].name);
                else if (params[o.param].is_output)
                    elements.push_back("args." + params[o.param].name + "[r * " + stride(o, 0) + " + cc * " + stride(o, 1) + "]");
                else
                    elements.push_back(as_param(o, "v_" + params[o.param].name + "[k]"));
            }
            s << "            " << call_body(elements, "r * cols + cc") << "\n";
            s << "        }\n";
            s << "        __syncthreads();\n";
            s << "    }\n" << epilogue << "}\n\n";
        }
    }

    const std::string bounds = "__launch_bounds__(256)";
    const std::string layout_param = "const kjit::Layout<" + std::to_string(A) + "> layout";
    auto entry = [&](const std::string& symbol, const std::string& params, const std::string& call) {
        if (symbol.empty()) return;
        const std::string line = "extern \"C\" __global__ void " + bounds + " " + symbol + "(const " + args_type + " args" +
                                 params + ") { " + name + call + "; }\n";
        s << line;
        m.entry_lines.emplace_back(symbol, line);
    };
    if (!spec.small_only) {
        entry(m.contiguous32, "", "_contiguous<int>(args)");
        entry(m.contiguous64, "", "_contiguous<long long>(args)");
        entry(m.strided32, ", " + layout_param, "_strided<int>(args, layout)");
        entry(m.strided64, ", " + layout_param, "_strided<long long>(args, layout)");
        entry(m.rows32, ", " + layout_param, "_rows(args, layout)");
        entry(m.tiled32, ", " + layout_param, "_tiled(args, layout)");
    }
    entry(m.small32, "", "_small(args)");
    m.source = number_line_directives(s.str());
    return m;
}

}  // namespace kjit::jit::codegen
