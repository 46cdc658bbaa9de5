#include "jit/codegen/reduction.hpp"

#include "jit/codegen/entry_points.hpp"

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <sstream>

#include "jit/codegen/args_struct.hpp"
#include "jit/codegen/statement_printer.hpp"
#include "jit/codegen/templates.hpp"
#include "kjit/error.hpp"

namespace kjit::jit::codegen {

using namespace frontend;

namespace {

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
    std::string s;
    for (const std::string& p : parts) s += (s.empty() ? "" : sep) + p;
    return s;
}

// A user's string on one comment line.
std::string one_line(std::string s) {
    std::replace(s.begin(), s.end(), '\n', ' ');
    std::replace(s.begin(), s.end(), '\r', ' ');
    return s;
}

void typedefs(const TypeBinding& binding, std::ostringstream& s) {
    for (const auto& [ph, t] : binding) s << "    typedef " << cuda_type(t) << " " << ph << ";\n";
}

// An expression piece as a device function returning the reduce type.
void expression_function(const std::string& fn, const std::vector<std::string>& params, const ReductionPiece& piece,
                         const std::string& r, const TypeBinding& binding, bool index_args, const BodyOrigin& origin,
                         std::ostringstream& s) {
    s << "__device__ __forceinline__ " << r << " " << fn << "(" << join(params, ", ") << ") {\n";
    typedefs(binding, s);
    if (index_args) s << "    (void)i;\n    (void)n;\n";
    s << "    " << r << " " << kReductionResult << ";\n";
    print_statements(piece.kernel, piece.body, 1, s, origin);
    s << "    return " << kReductionResult << ";\n}\n";
}

}  // namespace

void print_reduction_entry_points(const std::string& name, const std::string& args_type, const std::string& ops_type, int in_slots,
                                  GeneratedReduction& m, std::ostream& s) {
    const std::string layout = "const kjit::ReduceLayout<" + std::to_string(in_slots) + ", " + std::to_string(m.outputs) + "> layout";
    const std::string head = "extern \"C\" __global__ void __launch_bounds__(512) ";
    struct Entry {
        std::string* symbol;
        const char* strategy;
        const char* index;
        const char* suffix;
    };
    const Entry entries[] = {
        {&m.full32, "full", "int", "32"},           {&m.full64, "full", "long long", "64"},
        {&m.rows_warp32, "rows_warp", "int", "32"}, {&m.rows_warp64, "rows_warp", "long long", "64"},
        {&m.rows_block32, "rows_block", "int", "32"}, {&m.rows_block64, "rows_block", "long long", "64"},
        {&m.columns32, "columns", "int", "32"},     {&m.columns64, "columns", "long long", "64"},
        {&m.columns_split32, "columns_split", "int", "32"}, {&m.columns_split64, "columns_split", "long long", "64"},
        {&m.columns_finish32, "columns_finish", "int", "32"}, {&m.columns_finish64, "columns_finish", "long long", "64"},
        {&m.segments_warp32, "segments_warp", "int", "32"}, {&m.segments_warp64, "segments_warp", "long long", "64"},
        {&m.segments_block32, "segments_block", "int", "32"}, {&m.segments_block64, "segments_block", "long long", "64"},
        {&m.small32, "small", "int", "32"},
        {&m.bins64, "bins", "long long", "64"},     {&m.bins_finish64, "bins_finish", "long long", "64"},
    };
    for (const Entry& e : entries) {
        *e.symbol = name + "_" + e.strategy + e.suffix;
        const std::string strategy = e.strategy;
        std::string extra_params, extra_args;
        if (strategy == "full" || strategy == "columns_split") {
            extra_params = ", void* workspace";
            extra_args = ", workspace";
        } else if (strategy == "columns_finish") {
            extra_params = ", const void* workspace, const int chunks";
            extra_args = ", workspace, chunks";
        } else if (strategy == "bins") {
            extra_params = ", const int* group_of, const long long* offsets, void* workspace";
            extra_args = ", group_of, offsets, workspace";
        } else if (strategy == "bins_finish") {
            extra_params = ", const int* group_of, const long long* offsets, const void* workspace, const int blocks";
            extra_args = ", group_of, offsets, workspace, blocks";
        } else if (strategy.rfind("segments", 0) == 0) {
            extra_params = ", const long long* offsets";
            extra_args = ", offsets";
        }
        const std::string line = head + *e.symbol + "(const " + args_type + " args, " + layout + extra_params + ") { kjit::reduce_" +
                                 strategy + "<" + ops_type + ", " + e.index + ">(args, layout" + extra_args + "); }\n";
        s << line;
        m.entry_lines.emplace_back(*e.symbol, line);
    }
}

void print_scan_entry_points(const std::string& name, const std::string& args_type, const std::string& ops_type, int in_slots,
                             GeneratedReduction& m, std::ostream& s) {
    const std::string layout = "const kjit::ReduceLayout<" + std::to_string(in_slots) + ", " + std::to_string(m.outputs) + "> layout";
    const std::string head = "extern \"C\" __global__ void __launch_bounds__(kjit::scan_threads) ";
    struct Entry {
        std::string* symbol;
        const char* entry;
        const char* index;
        const char* suffix;
        const char* segmented;
    };
    const Entry entries[] = {
        {&m.scan32, "scan", "int", "32", "false"},
        {&m.scan64, "scan", "long long", "64", "false"},
        {&m.scan_segments32, "scan_segments", "int", "32", "true"},
        {&m.scan_segments64, "scan_segments", "long long", "64", "true"},
    };
    for (const Entry& e : entries) {
        *e.symbol = name + "_" + e.entry + e.suffix;
        const std::string line = head + *e.symbol + "(const " + args_type + " args, " + layout +
                                 ", void* workspace, const long long* offsets, const long long n_offsets, const int exclusive) { "
                                 "kjit::scan_tile<" + ops_type + ", " + e.index + ", " + e.segmented +
                                 ">(args, layout, workspace, offsets, n_offsets, exclusive != 0); }\n";
        s << line;
        m.entry_lines.emplace_back(*e.symbol, line);
    }
}

int scan_items_for(std::size_t itemsize) {
    int bytes = 160;
    if (const char* e = std::getenv("KJIT_SCAN_BYTES"); e != nullptr && *e != '\0') {
        bytes = std::atoi(e);
        if (bytes < 16 || bytes > 176)
            throw Error("KJIT_SCAN_BYTES=" + std::string(e) + ": a scan thread's bytes of values must be 16 to 176 (its block's "
                        "256 threads keep them in at most 48 KB of shared memory)");
    }
    return std::clamp(bytes / static_cast<int>(std::max<std::size_t>(1, itemsize)), 1, 40);
}

namespace {
std::atomic<std::uint64_t> g_generations{0};
}  // namespace

std::uint64_t reduction_generations() noexcept { return g_generations.load(std::memory_order_relaxed); }

GeneratedReduction generate_reduction(const ReductionModuleSpec& spec, const CheckedReduction& c, const TypeBinding& binding) {
    g_generations.fetch_add(1, std::memory_order_relaxed);
    if (!c.complete || (!c.reduce_type && !c.reduce_struct))
        throw TypeError("reduction '" + spec.name + "': every type placeholder needs a type to generate code");
    const std::string& name = spec.name;
    const ReduceValueLayout value = reduce_value_layout(c);
    const std::string r = c.reduce_struct ? c.reduce_struct->c_name : cuda_type(*c.reduce_type);
    GeneratedReduction m;

    std::vector<int> inputs, outputs;
    for (std::size_t k = 0; k < c.params.size(); ++k) (c.params[k].is_output ? outputs : inputs).push_back(static_cast<int>(k));
    std::vector<bool> scalar = spec.scalar;
    scalar.resize(c.params.size(), false);
    std::vector<std::optional<DType>> storage = spec.storage;
    storage.resize(c.params.size());
    for (std::size_t k = 0; k < c.params.size(); ++k) {
        const Param& p = c.params[k];
        if (scalar[k] && (p.raw || p.is_output))
            throw TypeError("parameter '" + p.name + "' cannot be a scalar: it is " + (p.raw ? "raw" : "an output"));
        if (storage[k] && *storage[k] == *c.param_types[k]) storage[k].reset();
        if (storage[k] && (p.raw || p.is_output || scalar[k]))
            throw TypeError("parameter '" + p.name + "' must be stored as its own type " + std::string(c.param_types[k]->name()) +
                            ": only array inputs convert on load");
    }
    // The dtype a parameter has in memory.
    auto stored = [&](int k) { return storage[k] ? *storage[k] : *c.param_types[k]; };
    auto is_array_input = [&](int k) { return !c.params[k].is_output && !c.params[k].raw && !scalar[k]; };

    std::vector<bool> used(DType::count, false);
    for (const ReduceValueField& f : value.fields) used[f.type.id()] = true;
    for (const ReductionPiece* p : {&c.map, &c.reduce, &c.identity, &c.post})
        for (std::size_t k = 0; k < used.size(); ++k)
            if (p->kernel.dtype_used[k]) used[k] = true;
    for (std::size_t k = 0; k < c.params.size(); ++k) {
        used[c.param_types[k]->id()] = true;
        used[stored(static_cast<int>(k)).id()] = true;
    }

    for (int k : inputs)
        if (is_array_input(k)) ++m.array_inputs;
    m.outputs = static_cast<int>(outputs.size());
    const int in_slots = std::max(1, m.array_inputs);

    std::ostringstream s;
    s << "// kjit reduction kernel '" << name << "'\n";
    s << "//   in:       " << one_line(spec.in_params) << "\n";
    s << "//   out:      " << one_line(spec.out_params) << "\n";
    s << "//   map:      " << one_line(spec.map_expr) << "\n";
    s << "//   reduce:   " << one_line(spec.reduce_expr) << "\n";
    s << "//   post:     " << one_line(spec.post_map_expr) << "\n";
    s << "//   identity: " << (c.has_identity ? one_line(spec.identity) : std::string("(none)")) << "\n";
    if (c.reduce_struct) {
        s << "//   reduce type: struct " << r << " {";
        for (const ReduceValueField& f : value.fields) s << " " << f.type.name() << " " << f.name << ";";
        s << " }\n";
    } else {
        s << "//   reduce type: " << c.reduce_type->name() << "\n";
    }
    if (!binding.empty()) {
        std::vector<std::string> b;
        for (const auto& [ph, t] : binding) b.push_back(ph + "=" + std::string(t.name()));
        s << "//   types: " << join(b, ", ") << "\n";
    }
    for (int k : inputs) {
        if (scalar[k]) s << "//   " << c.params[k].name << " passed as a scalar\n";
        if (storage[k]) s << "//   " << c.params[k].name << " stored as " << storage[k]->name() << "\n";
    }
    if (used[DType::float16]) s << "#define KJIT_USE_FLOAT16\n";
    if (used[DType::bfloat16]) s << "#define KJIT_USE_BFLOAT16\n";
    if (used[DType::float16] || used[DType::bfloat16]) s << template_text("scalar_types.cuh") << "\n";
    if (used[DType::complex64] || used[DType::complex128]) s << template_text("complex.cuh") << "\n";
    s << template_text("elementwise.cuh") << "\n";
    s << template_text("reduction.cuh") << "\n";
    if (spec.scan) s << template_text("scan.cuh") << "\n";
    for (const ReductionPiece* p : {&c.map, &c.reduce, &c.identity, &c.post})
        if (p->kernel.uses_atomics) {
            s << template_text("atomics.cuh") << "\n";
            break;
        }
    if (!spec.preamble.empty()) s << "// preamble\n" << spec.preamble << "\n\n";
    if (c.reduce_struct) {
        // The running value; its bytes must be laid out as the launcher sizes them (scratch
        // memory) and as the host back end keeps them.
        if (!c.reduce_struct->decl.from_preamble) {
            s << "struct " << r << " {\n";
            for (const ReduceValueField& f : value.fields) s << "    " << cuda_type(f.type) << " " << f.name << ";\n";
            s << "};\n";
        }
        s << "static_assert(sizeof(" << r << ") == " << value.size << ", \"kjit: struct " << r
          << " must have its fields' C layout (no alignas, no other members)\");\n\n";
    }

    // The user's pieces as device functions.
    auto param_type = [&](int k) { return cuda_type(*c.param_types[k]); };
    s << "namespace kjit_body {\n";
    {
        // map: one element of each input; i: its index in the reduction, n: the reduction's size.
        std::vector<std::string> ps;
        for (int k : inputs) {
            const Param& p = c.params[k];
            ps.push_back(p.raw ? "const kjit::Raw<" + std::string(p.non_const ? "" : "const ") + param_type(k) + "> " + p.name
                               : "const " + param_type(k) + " " + p.name);
        }
        ps.push_back("const long long i");
        ps.push_back("const long long n");
        expression_function(name + "_map", ps, c.map, r, binding, true, BodyOrigin{name + ":map", name + ".cu"}, s);
    }
    expression_function(name + "_reduce", {"const " + r + " a", "const " + r + " b"}, c.reduce, r, binding, false,
                        BodyOrigin{name + ":reduce", name + ".cu"}, s);
    if (c.has_identity)
        expression_function(name + "_identity", {}, c.identity, r, binding, false, BodyOrigin{name + ":identity", name + ".cu"}, s);
    {
        // post: the reduced value and each output; i: the output's index, n: the reduction's size.
        std::vector<std::string> ps{"const " + r + " a"};
        for (int k : outputs) ps.push_back(param_type(k) + "& " + c.params[k].name);
        ps.push_back("const long long i");
        ps.push_back("const long long n");
        s << "__device__ __forceinline__ void " << name << "_post(" << join(ps, ", ") << ") {\n";
        typedefs(binding, s);
        s << "    (void)i;\n    (void)n;\n";
        print_statements(c.post.kernel, c.post.body, 1, s, BodyOrigin{name + ":post", name + ".cu"});
        s << "}\n";
    }
    s << "}  // namespace kjit_body\n\n";

    // The launch arguments: inputs then outputs, in parameter order.
    const std::string args_type = name + "_args";
    std::vector<ArgsField> fields;
    for (int k : inputs) {
        const Param& p = c.params[k];
        if (p.raw)
            fields.push_back({"kjit::Raw<" + std::string(p.non_const ? "" : "const ") + param_type(k) + ">", p.name, kjit::detail::ArgField::raw, stored(k)});
        else if (scalar[k])
            fields.push_back({param_type(k), p.name, kjit::detail::ArgField::value, stored(k)});
        else
            fields.push_back({"const " + cuda_type(stored(k)) + "*", p.name, kjit::detail::ArgField::pointer, stored(k)});
    }
    for (int k : outputs) fields.push_back({param_type(k) + "*", c.params[k].name, kjit::detail::ArgField::pointer, stored(k)});
    print_args_struct(s, args_type, fields, false);

    // The pieces as templates/reduction.cuh calls them.
    const std::string ops_type = name + "_ops";
    s << "struct " << ops_type << " {\n";
    s << "    typedef " << r << " value_type;\n";
    // Enumerators, not static constexpr members, which -default-device makes device variables
    // (templates/elementwise.cuh says what those cost a module's load).
    if (spec.scan) s << "    enum : int { scan_items = " << scan_items_for(value.size) << " };\n";
    s << "    enum : bool { has_identity = " << (c.has_identity ? "true" : "false") << " };\n";
    s << "    enum : int { inputs = " << m.array_inputs << ", in_slots = " << in_slots << ", outputs = " << m.outputs
      << " };\n";
    {
        std::vector<std::string> a;
        int slot = 0;
        for (int k : inputs) {
            const Param& p = c.params[k];
            if (!is_array_input(k))
                a.push_back("args." + p.name);
            else
                a.push_back(convert_value("args." + p.name + "[off[" + std::to_string(slot++) + "]]", stored(k), *c.param_types[k]));
        }
        a.push_back("static_cast<long long>(j)");
        a.push_back("static_cast<long long>(n)");
        s << "    template <class Index>\n    static __device__ __forceinline__ value_type map(const " << args_type
          << "& args, const Index (&off)[in_slots], Index j, Index n) {\n";
        s << "        (void)off;\n";
        s << "        return kjit_body::" << name << "_map(" << join(a, ", ") << ");\n    }\n";
    }
    {
        // Vector loads: 16 bytes of the widest array input per step (none without array inputs).
        std::size_t widest = 0;
        for (int k : inputs)
            if (is_array_input(k)) widest = std::max(widest, stored(k).itemsize());
        const int V = widest == 0 ? 1 : static_cast<int>(std::max<std::size_t>(1, 16 / widest));
        m.vector_width = V;
        s << "    enum : int { vector = " << V << " };\n";
        std::vector<std::string> tests, a;
        int slot = 0;
        for (int k : inputs) {
            const Param& p = c.params[k];
            if (!is_array_input(k)) {
                a.push_back("args." + p.name);
                continue;
            }
            const std::string at = "args." + p.name + " + off[" + std::to_string(slot++) + "]";
            tests.push_back("kjit::is_aligned<vector>(" + at + ")");
            a.push_back(convert_value("v_" + p.name + ".v[k]", stored(k), *c.param_types[k]));
        }
        a.push_back("static_cast<long long>(j + k)");
        a.push_back("static_cast<long long>(n)");
        s << "    template <class Index>\n    static __device__ __forceinline__ bool aligned(const " << args_type
          << "& args, const Index (&off)[in_slots]) {\n";
        s << "        (void)args;\n        (void)off;\n";
        s << "        return " << (tests.empty() ? std::string("true") : join(tests, " && ")) << ";\n    }\n";
        // fold_vector_elements folds the vector's elements one by one; fold_vector is that, or
        // the spec's own text (kjit's var), which may call it for vectors it does not take.
        s << "    template <class Index>\n    static __device__ __forceinline__ void fold_vector_elements(value_type& v, bool& ok, const "
          << args_type << "& args, const Index (&off)[in_slots], Index j, Index n) {\n";
        s << "        (void)off;\n";
        slot = 0;
        for (int k : inputs) {
            const Param& p = c.params[k];
            if (!is_array_input(k)) continue;
            s << "        const kjit::Vec<" << cuda_type(stored(k)) << ", vector> v_" << p.name << " = kjit::load<vector>(args." << p.name
              << " + off[" << slot++ << "]);\n";
        }
        s << "#pragma unroll\n        for (int k = 0; k < vector; ++k)\n            kjit::combine<" << ops_type
          << ">(v, ok, kjit_body::" << name << "_map(" << join(a, ", ") << "), true);\n    }\n";
        s << "    template <class Index>\n    static __device__ __forceinline__ void fold_vector(value_type& v, bool& ok, const "
          << args_type << "& args, const Index (&off)[in_slots], Index j, Index n) {\n";
        if (spec.fold_vector.empty()) s << "        fold_vector_elements<Index>(v, ok, args, off, j, n);\n";
        else s << spec.fold_vector << "\n";
        s << "    }\n";
    }
    s << "    static __device__ __forceinline__ value_type reduce(const value_type& a, const value_type& b) { return kjit_body::"
      << name << "_reduce(a, b); }\n";
    if (c.has_identity)
        s << "    static __device__ __forceinline__ value_type identity() { return kjit_body::" << name << "_identity(); }\n";
    {
        std::vector<std::string> a{"v"};
        int slot = 0;
        for (int k : outputs) a.push_back("args." + c.params[k].name + "[off[" + std::to_string(slot++) + "]]");
        a.push_back("static_cast<long long>(o)");
        a.push_back("static_cast<long long>(n)");
        s << "    template <class Index>\n    static __device__ __forceinline__ void post(const " << args_type
          << "& args, const Index (&off)[outputs], const value_type& v, Index o, Index n) {\n";
        s << "        kjit_body::" << name << "_post(" << join(a, ", ") << ");\n    }\n";
    }
    s << "};\n\n";

    if (spec.scan) {
        m.scan_items = scan_items_for(value.size);
        s << "static_assert(" << ops_type << "::scan_items == " << m.scan_items << ", \"kjit: the launcher's items per thread\");\n";
        print_scan_entry_points(name, args_type, ops_type, in_slots, m, s);
    }
    else print_reduction_entry_points(name, args_type, ops_type, in_slots, m, s);
    m.source = number_line_directives(s.str());
    return m;
}

}  // namespace kjit::jit::codegen
