#include "jit/codegen/elementwise.hpp"

#include <algorithm>
#include <atomic>
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
    // (the larger tile measured faster: docs/PERFORMANCE.md).
    for (const int tile : {64, 32}) {
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
    if (kernel.uses_atomics) s << template_text("atomics.cuh") << "\n";
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
    // The hooks see the raw parameters and n (the checker allows nothing else of the call).
    std::vector<std::string> hook_params{state_type + "& " + kStateName}, hook_args{"st"};
    if (hooked) {
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

    // The accessors templates/elementwise.cuh's variants call (its contract is at the variants).
    const int A = std::max(1, m.array_operands);
    const std::string fn = "    static __device__ __forceinline__ void ";
    const std::string tfn = "    template <class Index>\n" + fn;
    const std::string args_param = "const " + args_type + "& args";
    // The body called with array operand o's element `element(o)`, at index `index`.
    auto call_body = [&](const std::function<std::string(const Operand&)>& element, const std::string& index) {
        std::vector<std::string> a;
        for (const Operand& o : operands) {
            const std::string arg = "args." + params[o.param].name;
            if (o.slot < 0) a.push_back(arg);
            else if (params[o.param].is_output) a.push_back(element(o));
            else a.push_back(convert_value(element(o), stored(o.param), *kernel.param_types[o.param]));
        }
        a.push_back("(long long)(" + index + ")");
        a.push_back("args.n");
        if (hooked) a.push_back("st");
        return "kjit_body::" + name + "(" + join(a, ", ") + ");";
    };
    auto in_memory = [&](const Operand& o) { return "args." + params[o.param].name + "[off[" + std::to_string(o.slot) + "]]"; };
    auto each_array = [&](const std::function<void(const Operand&, const Param&, const std::string&)>& f) {
        for (const Operand& o : operands)
            if (o.slot >= 0) f(o, params[o.param], cuda_type(stored(o.param)));
    };
    const std::string k_type = name + "_k";
    s << "struct " << k_type << " {\n    typedef " << args_type << " args;\n";
    s << "    enum : int { arrays = " << A << ", vector = " << m.vector_width << ", tile = " << m.tile
      << ", tile_per = " << m.tile * m.tile / 256 << " };\n";
    if (hooked) {
        s << "    typedef kjit_body::" << state_type << " state;\n";
        s << fn << "prep(state& st, " << args_param << ") { kjit_body::" << name << "_prep(" << join(hook_args, ", ") << "); }\n";
        s << fn << "after(state& st, " << args_param << ") { kjit_body::" << name << "_after(" << join(hook_args, ", ") << "); }\n";
    } else {
        s << "    struct state {};\n" << fn << "prep(state&, " << args_param << ") {}\n" << fn << "after(state&, " << args_param << ") {}\n";
    }
    s << tfn << "at(" << args_param << ", const Index (&off)[arrays], long long i, state& st) {\n        "
      << call_body(in_memory, "i") << "\n    }\n";
    if (!spec.small_only) {
        // Whether the body needs an output's old value (it reads it, or may leave it unwritten).
        auto loads_output = [&](const Operand& o) { return kernel.param_read[o.param] || !definitely_assigned(body, o.param); };
        s << "    struct vectors {\n";
        each_array([&](const Operand&, const Param& p, const std::string& t) { s << "        kjit::Vec<" << t << ", vector> " << p.name << ";\n"; });
        s << "    };\n";
        s << tfn << "load(vectors& v, " << args_param << ", const Index (&off)[arrays], const bool (&broadcast)[arrays]) {\n";
        each_array([&](const Operand& o, const Param& p, const std::string&) {
            const std::string at = "args." + p.name + " + off[" + std::to_string(o.slot) + "]";
            if (!p.is_output)
                s << "        v." << p.name << " = broadcast[" << o.slot << "] ? kjit::splat<vector>(*(" << at << ")) : kjit::load<vector>(" << at << ");\n";
            else if (loads_output(o))
                s << "        v." << p.name << " = kjit::load<vector>(" << at << ");\n";
        });
        s << "    }\n";
        s << tfn << "compute(vectors& v, " << args_param << ", Index e, state& st) {\n#pragma unroll\n        for (int k = 0; k < vector; ++k) "
          << call_body([&](const Operand& o) { return "v." + params[o.param].name + ".v[k]"; }, "e + k") << "\n    }\n";
        s << tfn << "store(const vectors& v, " << args_param << ", const Index (&off)[arrays]) {\n";
        each_array([&](const Operand& o, const Param& p, const std::string&) {
            if (p.is_output) s << "        kjit::store<vector>(args." << p.name << " + off[" << o.slot << "], v." << p.name << ");\n";
        });
        s << "    }\n";
    }
    if (!spec.small_only && !m.tiled32.empty()) {
        std::string tiles, lanes, calls;
        each_array([&](const Operand& o, const Param& p, const std::string& t) {
            if (p.is_output) return;
            tiles += "        " + t + " " + p.name + "[tile][tile + 1];\n";
            lanes += "        " + t + " " + p.name + "[tile_per];\n";
            calls += "        f(t." + p.name + ", l." + p.name + ", args." + p.name + ", " + std::to_string(o.slot) + ");\n";
        });
        s << "    struct tiles {\n" << tiles << "    };\n    struct lanes {\n" << lanes << "    };\n";
        s << "    template <class F>\n" << fn << "each_input(tiles& t, lanes& l, " << args_param << ", F&& f) {\n" << calls << "    }\n";
        s << fn << "at_tiled(" << args_param << ", const lanes& l, int k, const int (&off)[arrays], long long i, state& st) {\n        "
          << call_body([&](const Operand& o) { return params[o.param].is_output ? in_memory(o) : "l." + params[o.param].name + "[k]"; }, "i")
          << "\n    }\n";
    }
    s << "};\n\n";

    // The entry points, one line each (entry_points.hpp cuts a program down to some of them).
    const std::string layout_param = ", const kjit::Layout<" + std::to_string(A) + "> layout";
    auto entry = [&](const std::string& symbol, const std::string& params, const std::string& call) {
        if (symbol.empty()) return;
        const std::string line = "extern \"C\" __global__ void __launch_bounds__(256) " + symbol + "(const " + args_type + " args" + params +
                                 ") { kjit::" + call + "; }\n";
        s << line;
        m.entry_lines.emplace_back(symbol, line);
    };
    if (!spec.small_only) {
        entry(m.contiguous32, "", "contiguous<" + k_type + ", int>(args)");
        entry(m.contiguous64, "", "contiguous<" + k_type + ", long long>(args)");
        entry(m.strided32, layout_param, "strided<" + k_type + ", int>(args, layout)");
        entry(m.strided64, layout_param, "strided<" + k_type + ", long long>(args, layout)");
        entry(m.rows32, layout_param, "rows<" + k_type + ">(args, layout)");
        entry(m.tiled32, layout_param, "tiled<" + k_type + ">(args, layout)");
    }
    entry(m.small32, "", "small<" + k_type + ">(args)");
    m.source = number_line_directives(s.str());
    return m;
}

}  // namespace kjit::jit::codegen
