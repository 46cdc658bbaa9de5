#include "kjit/reduction_kernel.hpp"

#include <cctype>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "jit/kernels/manifest_fields.hpp"
#include "jit/frontend/params.hpp"
#include "jit/frontend/parser.hpp"
#include "jit/frontend/preamble.hpp"
#include "jit/compile/program_store.hpp"
#include "jit/kernels/reduction/calls.hpp"
#include "jit/codegen/reduction.hpp"
#include "jit/kernels/reduction/note.hpp"
#include "jit/kernels/reduction/struct_value.hpp"
#include "jit/frontend/type_checker.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/device_attributes.hpp"
#include "runtime/detail/module.hpp"

namespace kjit {

struct ReductionKernel::Spec {
    std::string in, out, map, reduce, post, identity, name;
    KernelOptions options;
    // Bindings already called, built on the first call (jit/kernels/reduction/calls.hpp).
    std::shared_ptr<jit::kernels::ReductionCalls> calls = std::make_shared<jit::kernels::ReductionCalls>();
    // Set for kjit's own reductions that write their module themselves (argmin, argmax).
    jit::kernels::CustomGenerator custom;
    // Set for kjit's own string reductions with a fold_vector of their own (var of float32,
    // ReductionKernelAccess::with_fold_vector): its CUDA text, and the manifest entry they record.
    std::string fold_vector, builtin_entry;
};

namespace {

std::string trim(const std::string& text) {
    std::size_t b = 0, e = text.size();
    while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
    return text.substr(b, e - b);
}


// The reduce type as written: a dtype, a placeholder, a struct, or nothing (the map expression's type).
struct ReduceTypeSpec {
    std::string text;         // trimmed
    std::optional<DType> dtype;
    std::string placeholder;  // "T" when it is one
    std::optional<jit::frontend::StructDecl> struct_decl;  // a struct running value
};

// `preamble`: where a struct named by the reduce type is defined, as CuPy allows.
ReduceTypeSpec parse_reduce_type(const std::string& raw, const std::string& preamble) {
    ReduceTypeSpec r;
    r.text = trim(raw);
    if (r.text.empty()) return r;
    const jit::frontend::SourceText src{"reduce_type", raw};
    if (jit::frontend::is_struct_decl(raw)) {
        r.struct_decl = jit::frontend::parse_struct_decl(src);
        return r;
    }
    const std::size_t lead = raw.find(r.text);
    const jit::frontend::SourcePos pos{1, static_cast<int>(lead) + 1, static_cast<std::uint32_t>(lead)};
    if (jit::frontend::is_placeholder_name(r.text)) {
        r.placeholder = r.text;
        return r;
    }
    DType d;
    if (DType::try_parse(r.text, d)) {
        r.dtype = d;
        return r;
    }
    // C type words in any order ("long unsigned int").
    std::vector<std::string_view> words;
    std::string_view rest = r.text;
    while (!rest.empty()) {
        const std::size_t sp = rest.find(' ');
        if (sp != 0) words.push_back(rest.substr(0, sp));
        if (sp == std::string_view::npos) break;
        rest.remove_prefix(sp + 1);
    }
    if (const auto c = jit::frontend::canonical_c_type(words); c && DType::try_parse(*c, d)) {
        r.dtype = d;
        return r;
    }
    if (auto decl = jit::frontend::find_preamble_struct(preamble, r.text)) {
        r.struct_decl = std::move(decl);
        return r;
    }
    jit::frontend::fail_parse(src, pos, "unknown reduce type '" + r.text + "'",
                    "a dtype (float32, float64, int64...), a C type name, a placeholder (one upper-case letter), a struct "
                    "('struct { float64 n; float64 mean; }') or the name of a struct the preamble defines");
}

// The reduce type CuPy takes when none is given: the first output's, as that output declares it.
ReduceTypeSpec output_reduce_type(const std::vector<jit::frontend::Param>& params) {
    for (const jit::frontend::Param& p : params) {
        if (!p.is_output) continue;
        ReduceTypeSpec r;
        r.text = p.type.spelling;
        if (p.is_placeholder) r.placeholder = p.type.spelling;
        else r.dtype = p.dtype;
        return r;
    }
    return {};  // no output: analyze() has already refused the kernel
}

// A synthetic parameter of the reduce type (a, b, _kjit_r).
jit::frontend::Param reduce_param(const std::string& name, const ReduceTypeSpec& rt, const std::optional<DType>& resolved, bool output) {
    jit::frontend::Param p;
    p.name = name;
    p.is_output = output;
    if (!rt.placeholder.empty()) {
        p.type.spelling = rt.placeholder;
        p.is_placeholder = true;
    } else {
        p.dtype = resolved;
        if (resolved) p.type.spelling = std::string(resolved->name());
    }
    return p;
}

// The synthetic parameters of a struct value (a, b, _kjit_r): one per field, "a.f".
std::vector<jit::frontend::Param> struct_params(const std::string& value, const jit::codegen::ReduceStruct& rs, bool output) {
    std::vector<jit::frontend::Param> ps;
    for (std::size_t k = 0; k < rs.decl.fields.size(); ++k) {
        const jit::frontend::StructField& f = rs.decl.fields[k];
        jit::frontend::Param p;
        p.name = value + "." + f.name;
        p.pos = f.pos;
        p.is_output = output;
        if (!f.placeholder.empty()) {
            p.type.spelling = f.placeholder;
            p.is_placeholder = true;
        } else {
            p.dtype = f.dtype;
            p.type.spelling = std::string(f.dtype->name());
        }
        ps.push_back(std::move(p));
    }
    return ps;
}

// Rejects names users may not write in a piece: kjit's own (starting with '_'), and `i` / `n`
// where they mean nothing.
class NameRules {
public:
    NameRules(const jit::frontend::SourceText& src, bool allow_index) : src_(src), allow_index_(allow_index) {}

    void expr(const jit::frontend::Expr* e) const {
        using jit::frontend::ExprKind;
        if (e == nullptr) return;
        switch (e->kind) {
            case ExprKind::name: {
                const auto& n = static_cast<const jit::frontend::NameExpr&>(*e);
                if (!n.name.empty() && n.name[0] == '_')
                    jit::frontend::fail_parse(src_, n.pos, "'" + n.name + "' is reserved: names starting with '_' belong to kjit");
                if (!allow_index_ && (n.name == "i" || n.name == "n"))
                    jit::frontend::fail_type(src_, n.pos, "'" + n.name + "' has no meaning in the " + src_.where + " expression",
                                   "it combines values: use a and b" );
                return;
            }
            case ExprKind::unary: expr(static_cast<const jit::frontend::UnaryExpr*>(e)->operand.get()); return;
            case ExprKind::binary: {
                const auto* b = static_cast<const jit::frontend::BinaryExpr*>(e);
                expr(b->lhs.get());
                expr(b->rhs.get());
                return;
            }
            case ExprKind::assign: {
                const auto* a = static_cast<const jit::frontend::AssignExpr*>(e);
                expr(a->target.get());
                expr(a->value.get());
                return;
            }
            case ExprKind::conditional: {
                const auto* c = static_cast<const jit::frontend::ConditionalExpr*>(e);
                expr(c->condition.get());
                expr(c->if_true.get());
                expr(c->if_false.get());
                return;
            }
            case ExprKind::cast: expr(static_cast<const jit::frontend::CastExpr*>(e)->operand.get()); return;
            case ExprKind::call:
                for (const jit::frontend::ExprPtr& a : static_cast<const jit::frontend::CallExpr*>(e)->args) expr(a.get());
                return;
            case ExprKind::index: {
                const auto* ix = static_cast<const jit::frontend::IndexExpr*>(e);
                expr(ix->base.get());
                expr(ix->index.get());
                return;
            }
            default: return;
        }
    }

    void stmt(const jit::frontend::Stmt* s) const {
        using jit::frontend::StmtKind;
        if (s == nullptr) return;
        switch (s->kind) {
            case StmtKind::expr: expr(static_cast<const jit::frontend::ExprStmt*>(s)->expr.get()); return;
            case StmtKind::decl:
                for (const jit::frontend::Declarator& d : static_cast<const jit::frontend::DeclStmt*>(s)->declarators) expr(d.init.get());
                return;
            case StmtKind::block:
                for (const jit::frontend::StmtPtr& b : static_cast<const jit::frontend::BlockStmt*>(s)->body) stmt(b.get());
                return;
            case StmtKind::if_: {
                const auto* i = static_cast<const jit::frontend::IfStmt*>(s);
                expr(i->condition.get());
                stmt(i->then_branch.get());
                stmt(i->else_branch.get());
                return;
            }
            case StmtKind::for_: {
                const auto* f = static_cast<const jit::frontend::ForStmt*>(s);
                stmt(f->init.get());
                expr(f->condition.get());
                expr(f->step.get());
                stmt(f->body.get());
                return;
            }
            case StmtKind::while_: {
                const auto* w = static_cast<const jit::frontend::WhileStmt*>(s);
                expr(w->condition.get());
                stmt(w->body.get());
                return;
            }
            default: return;
        }
    }

private:
    const jit::frontend::SourceText& src_;
    bool allow_index_;
};

// `_kjit_r = <expression>;` (or another target) as a body, the assignment placed at the expression.
jit::frontend::Body assigning_body(jit::frontend::ExprPtr e, const std::string& target_name = jit::codegen::kReductionResult) {
    const jit::frontend::SourcePos pos = e->pos;
    auto target = std::make_unique<jit::frontend::NameExpr>(pos);
    target->name = target_name;
    auto assign = std::make_unique<jit::frontend::AssignExpr>(pos, jit::frontend::AssignOp::assign, std::move(target), std::move(e));
    jit::frontend::Body body;
    body.statements.push_back(std::make_unique<jit::frontend::ExprStmt>(pos, std::move(assign)));
    return body;
}

// Parses and checks every piece of the kernel for `types` (possibly partial).
jit::codegen::CheckedReduction analyze(const ReductionKernel& k, const TypeBinding& types, bool need_complete) {
    jit::frontend::check_kernel_name(k.name());
    if (!k.options().loop_prep.empty() || !k.options().after_loop.empty())
        throw Error("reduction '" + k.name() + "': KernelOptions::" + (k.options().loop_prep.empty() ? "after_loop" : "loop_prep") +
                    " applies to elementwise kernels; a reduction's threads run map over their elements instead");
    jit::frontend::KernelSources sources;
    sources.in.text = k.in_params();
    sources.out.text = k.out_params();
    jit::codegen::CheckedReduction c;
    c.params = jit::frontend::parse_param_lists(sources.in, sources.out);
    int n_outputs = 0;
    for (const jit::frontend::Param& p : c.params) {
        if (!p.is_output) continue;
        ++n_outputs;
        if (p.raw) jit::frontend::fail_type(sources.out, p.pos, "a reduction's outputs cannot be raw", "outputs get one value per reduction");
        if (p.name == "a" || p.name == "b")
            jit::frontend::fail_type(sources.out, p.pos, "'" + p.name + "' names the reduced values in a reduction",
                           "choose another name for the output");
    }
    if (n_outputs == 0) jit::frontend::fail_parse(sources.out, {}, "a reduction needs at least one output");

    // CuPy's rule: without a reduce type, the partial results have the type of the first
    // output (an int8 input summed into an int64 output adds in int64).
    ReduceTypeSpec rt = parse_reduce_type(k.options().reduce_type, k.options().preamble);
    if (rt.text.empty()) rt = output_reduce_type(c.params);
    std::set<std::string> param_placeholders;
    for (const jit::frontend::Param& p : c.params)
        if (p.is_placeholder) param_placeholders.insert(p.type.spelling);
    // The placeholders of the reduce type (its own, or its fields').
    std::vector<std::string> rt_placeholders;
    if (!rt.placeholder.empty()) rt_placeholders.push_back(rt.placeholder);
    if (rt.struct_decl)
        for (const jit::frontend::StructField& f : rt.struct_decl->fields)
            if (!f.placeholder.empty()) rt_placeholders.push_back(f.placeholder);
    if (need_complete || !types.empty()) {
        TypeBinding for_params = types;
        for (const std::string& ph : rt_placeholders) {
            if (param_placeholders.count(ph)) continue;
            if (!types.count(ph))
                jit::frontend::fail_type(jit::frontend::SourceText{"reduce_type", k.options().reduce_type}, {},
                               "no type given for placeholder '" + ph + "' of the reduce type",
                               "bind it, as in --types " + ph + "=float32");
            for_params.erase(ph);
        }
        jit::frontend::check_binding(c.params, sources, for_params);
    }
    for (const jit::frontend::Param& p : c.params) {
        std::optional<DType> t = p.dtype;
        if (p.is_placeholder)
            if (auto it = types.find(p.type.spelling); it != types.end()) t = it->second;
        c.param_types.push_back(t);
    }
    const jit::frontend::OutsideNames preamble = jit::frontend::outside_names(k.options().preamble, k.options().nvrtc_options);
    std::vector<jit::frontend::Param> inputs, outputs;
    for (const jit::frontend::Param& p : c.params) (p.is_output ? outputs : inputs).push_back(p);

    if (rt.dtype) c.reduce_type = rt.dtype;
    else if (auto it = types.find(rt.placeholder); it != types.end()) c.reduce_type = it->second;
    if (rt.struct_decl) {
        jit::codegen::ReduceStruct rs;
        rs.decl = *rt.struct_decl;
        rs.c_name = rs.decl.name.empty() ? k.name() + "_value" : rs.decl.name;
        bool known = true;
        for (const jit::frontend::StructField& f : rs.decl.fields) {
            std::optional<DType> t = f.dtype;
            if (auto it = types.find(f.placeholder); !f.placeholder.empty() && it != types.end()) t = it->second;
            known = known && t.has_value();
            rs.types.push_back(t);
        }
        c.reduce_struct = std::move(rs);
        if (known) {
            const std::size_t bytes = jit::codegen::reduce_value_layout(c).size;
            if (bytes > jit::codegen::kMaxReduceValueBytes)
                jit::frontend::fail_type(jit::frontend::SourceText{"reduce_type", k.options().reduce_type}, {},
                                         "a struct running value of " + std::to_string(bytes) + " bytes: at most " +
                                             std::to_string(jit::codegen::kMaxReduceValueBytes) + " are allowed",
                                         "keep fewer or narrower fields");
        }
    }
    // The parameters a value of the reduce type becomes in a piece: `a`, or a.f for each field f.
    auto value_params = [&](const std::string& name, bool output) {
        if (c.reduce_struct) return struct_params(name, *c.reduce_struct, output);
        return std::vector<jit::frontend::Param>{reduce_param(name, rt, c.reduce_type, output)};
    };

    const jit::frontend::SourceText map_src{"map", k.map_expr()};
    auto check_piece = [&](const jit::frontend::SourceText& src, jit::frontend::Body body, std::vector<jit::frontend::Param> params) {
        jit::frontend::KernelSources s = sources;
        s.body = src;
        jit::codegen::ReductionPiece piece;
        piece.body = std::move(body);
        piece.kernel = jit::frontend::check_kernel(std::move(params), piece.body, s, types, preamble);
        return piece;
    };
    // values: the struct values the piece reads (a and b in reduce).
    auto expression_piece = [&](const jit::frontend::SourceText& src, bool allow_index, std::vector<jit::frontend::Param> params,
                                const std::vector<std::string>& values) {
        for (jit::frontend::Param& p : value_params(jit::codegen::kReductionResult, true)) params.push_back(std::move(p));
        if (!c.reduce_struct) {
            jit::frontend::ExprPtr e = jit::frontend::parse_expression(src);
            NameRules(src, allow_index).expr(e.get());
            return check_piece(src, assigning_body(std::move(e)), std::move(params));
        }
        std::vector<jit::frontend::ExprPtr> fields = jit::kernels::parse_struct_value(
            src, c.reduce_struct->decl, values, [&](const jit::frontend::Expr* e) { NameRules(src, allow_index).expr(e); });
        jit::frontend::Body body;
        for (std::size_t f = 0; f < fields.size(); ++f) {
            jit::frontend::Body one = assigning_body(std::move(fields[f]), std::string(jit::codegen::kReductionResult) + "." +
                                                                                c.reduce_struct->decl.fields[f].name);
            body.statements.push_back(std::move(one.statements.front()));
        }
        return check_piece(src, std::move(body), std::move(params));
    };

    c.map = expression_piece(map_src, true, inputs, {});
    const jit::frontend::SourceText reduce_src{"reduce", k.reduce_expr()};
    std::vector<jit::frontend::Param> reduce_params = value_params("a", false);
    for (jit::frontend::Param& p : value_params("b", false)) reduce_params.push_back(std::move(p));
    c.reduce = expression_piece(reduce_src, false, std::move(reduce_params), {"a", "b"});
    const jit::frontend::SourceText identity_src{"identity", k.identity()};
    c.has_identity = !trim(k.identity()).empty();
    if (c.has_identity) c.identity = expression_piece(identity_src, false, {}, {});

    const jit::frontend::SourceText post_src{"post", k.post_map_expr()};
    if (trim(k.post_map_expr()).empty())
        jit::frontend::fail_parse(post_src, {}, "post_map_expr is empty", "assign the outputs from a, as in 'y = a'");
    jit::frontend::Body post_body = jit::frontend::parse_body(post_src);
    for (const jit::frontend::StmtPtr& st : post_body.statements) NameRules(post_src, true).stmt(st.get());
    if (c.reduce_struct) jit::kernels::rewrite_field_reads(post_body, post_src, c.reduce_struct->decl, {"a"});
    std::vector<jit::frontend::Param> post_params = value_params("a", false);
    for (const jit::frontend::Param& p : outputs) post_params.push_back(p);
    c.post = check_piece(post_src, std::move(post_body), std::move(post_params));

    bool value_known = c.reduce_type.has_value();
    if (c.reduce_struct) {
        value_known = true;
        for (const std::optional<DType>& t : c.reduce_struct->types) value_known = value_known && t.has_value();
    }
    c.complete = value_known && c.map.kernel.complete && c.reduce.kernel.complete && c.post.kernel.complete &&
                 (!c.has_identity || c.identity.kernel.complete);
    for (const std::optional<DType>& t : c.param_types)
        if (!t) c.complete = false;
    if (need_complete && !c.complete)
        throw TypeError("reduction '" + k.name() + "': every type placeholder needs a type to generate code");
    return c;
}

jit::codegen::ReductionModuleSpec module_spec(const ReductionKernel& k, const jit::kernels::ModuleVariant& variant = {},
                                              bool scan = false) {
    jit::codegen::ReductionModuleSpec spec{k.name(),          k.in_params(), k.out_params(),      k.map_expr(),   k.reduce_expr(),
                                           k.post_map_expr(), k.identity(),  k.options().preamble, variant.scalar, variant.storage,
                                           scan};
    if (!scan) spec.fold_vector = jit::ReductionKernelAccess::fold_vector(k);
    return spec;
}

// The manifest entry for this kernel and one binding (DESIGN.md's format).
std::string spec_json(const ReductionKernel& k, const TypeBinding& types, const jit::kernels::ModuleVariant& variant) {
    // kjit's own (var): its strings would not make the same module, its entry names it.
    if (const std::string& builtin = jit::ReductionKernelAccess::builtin_entry(k); !builtin.empty()) return builtin;
    nlohmann::json e = jit::kernels::write_manifest_entry("reduction", k.name(), k.in_params(), k.out_params(), k.options().preamble,
                                                 k.options().nvrtc_options, types, variant);
    e["map"] = k.map_expr();
    e["reduce"] = k.reduce_expr();
    e["post"] = k.post_map_expr();
    e["identity"] = k.identity();
    if (!k.options().reduce_type.empty()) e["reduce_type"] = k.options().reduce_type;
    return e.dump();
}

// A reduction for one binding and variant, ready to be looked up: its generated module, what the
// cache needs, and the facts about its reduce type the launcher uses.
struct Prepared {
    jit::codegen::GeneratedReduction generated;
    jit::compile::CachedProgram program;
    std::string reduce_type;
    std::size_t reduce_itemsize = 0;
    bool has_identity = false;
};

Prepared prepare(const ReductionKernel& k, const jit::kernels::CustomGenerator& custom, const TypeBinding& types,
                 const jit::kernels::ModuleVariant& variant, bool scan = false) {
    Prepared p;
    if (custom) {
        for (const bool sc : variant.scalar)
            if (sc) throw TypeError("reduction '" + k.name() + "' takes arrays, not scalars");
        for (const auto& st : variant.storage)
            if (st) throw TypeError("reduction '" + k.name() + "' takes arrays of its own types only");
        jit::kernels::CustomReduction c = custom(types);
        p.generated = std::move(c.generated);
        p.reduce_type = std::move(c.reduce_type);
        p.reduce_itemsize = c.reduce_itemsize;
        p.has_identity = c.has_identity;
        p.program.spec_json = [s = std::move(c.spec_json)] { return s; };
    } else {
        const jit::codegen::CheckedReduction c = analyze(k, types, true);
        p.generated = jit::codegen::generate_reduction(module_spec(k, variant, scan), c, types);
        p.reduce_type = c.reduce_struct ? "struct " + c.reduce_struct->c_name : std::string(c.reduce_type->name());
        p.reduce_itemsize = jit::codegen::reduce_value_layout(c).size;
        p.has_identity = c.has_identity;
        // The program may live in the kernel's table of calls: it keeps the definition only.
        p.program.spec_json = [k = jit::ReductionKernelAccess::definition(k), types, variant] { return spec_json(k, types, variant); };
    }
    jit::compile::CachedProgram& prog = p.program;
    prog.request.source = p.generated.source;
    prog.request.program_name = k.name() + ".cu";
    prog.request.user_texts = {{k.name() + ":map", k.map_expr()},
                               {k.name() + ":reduce", k.reduce_expr()},
                               {k.name() + ":identity", k.identity()},
                               {k.name() + ":post", k.post_map_expr()}};
    // As for elementwise kernels: -minimal unless the user's preamble may need more.
    if (k.options().preamble.empty()) prog.request.options.push_back("-minimal");
    for (const std::string& o : k.options().nvrtc_options) prog.request.options.push_back(o);
    prog.kernel_name = k.name();
    prog.types = format_type_binding(types);
    prog.description = "reduction '" + k.name() + "' (" + prog.types + ")";
    return p;
}

// The facts of a prepared reduction the launcher uses (its loader aside).
jit::kernels::ReductionModule module_facts(const Prepared& p) {
    jit::kernels::ReductionModule m;
    m.reduce_itemsize = p.reduce_itemsize;
    m.has_identity = p.has_identity;
    m.array_inputs = p.generated.array_inputs;
    m.outputs = p.generated.outputs;
    m.vector_width = p.generated.vector_width;
    return m;
}

}  // namespace

ReductionKernel::ReductionKernel(std::string in_params, std::string out_params, std::string map_expr, std::string reduce_expr,
                                 std::string post_map_expr, std::string identity, std::string name, KernelOptions options)
    : spec_(std::make_shared<const Spec>(Spec{std::move(in_params), std::move(out_params), std::move(map_expr),
                                              std::move(reduce_expr), std::move(post_map_expr), std::move(identity),
                                              std::move(name), std::move(options)})) {}

const std::string& ReductionKernel::name() const noexcept { return spec_->name; }
const std::string& ReductionKernel::in_params() const noexcept { return spec_->in; }
const std::string& ReductionKernel::out_params() const noexcept { return spec_->out; }
const std::string& ReductionKernel::map_expr() const noexcept { return spec_->map; }
const std::string& ReductionKernel::reduce_expr() const noexcept { return spec_->reduce; }
const std::string& ReductionKernel::post_map_expr() const noexcept { return spec_->post; }
const std::string& ReductionKernel::identity() const noexcept { return spec_->identity; }
const KernelOptions& ReductionKernel::options() const noexcept { return spec_->options; }

void ReductionKernel::check(const TypeBinding& types) const {
    if (spec_->custom) {
        if (!types.empty()) (void)spec_->custom(types);
        return;
    }
    analyze(*this, types, false);
}

ReductionKernel jit::ReductionKernelAccess::custom(std::string in_params, std::string out_params, std::string name,
                                                   jit::kernels::CustomGenerator generate) {
    auto spec = std::make_shared<ReductionKernel::Spec>();
    spec->in = std::move(in_params);
    spec->out = std::move(out_params);
    spec->name = std::move(name);
    spec->custom = std::move(generate);
    return ReductionKernel(std::shared_ptr<const ReductionKernel::Spec>(std::move(spec)));
}

ReductionKernel jit::ReductionKernelAccess::definition(const ReductionKernel& kernel) {
    const ReductionKernel::Spec& s = *kernel.spec_;
    if (!s.calls) return kernel;
    auto spec = std::make_shared<ReductionKernel::Spec>(s);
    spec->calls = nullptr;
    return ReductionKernel(std::shared_ptr<const ReductionKernel::Spec>(std::move(spec)));
}

long jit::ReductionKernelAccess::owners(const ReductionKernel& kernel) { return kernel.spec_.use_count(); }

Outputs jit::ReductionKernelAccess::reduce_groups(const ReductionKernel& kernel, std::span<const KernelArg> args, const Array& group_of,
                                                  const Array& offsets, const CallOptions& options) {
    std::vector<Array> outputs;
    ReduceOptions reduce;
    static_cast<CallOptions&>(reduce) = options;
    jit::kernels::call_reduction(kernel, *kernel.spec_->calls, args, reduce, &outputs, &offsets, &group_of);
    return Outputs(std::move(outputs));
}

std::size_t jit::ReductionKernelAccess::value_bytes(const ReductionKernel& kernel, std::span<const KernelArg> args,
                                                    const CallOptions& options) {
    ReduceOptions reduce;
    static_cast<CallOptions&>(reduce) = options;
    return jit::kernels::reduction_value_bytes(kernel, *kernel.spec_->calls, args, reduce);
}

const jit::kernels::CustomGenerator& jit::ReductionKernelAccess::generator(const ReductionKernel& kernel) { return kernel.spec_->custom; }

ReductionKernel jit::ReductionKernelAccess::with_fold_vector(const ReductionKernel& kernel, std::string fold_vector,
                                                             std::string builtin_entry) {
    auto spec = std::make_shared<ReductionKernel::Spec>(*kernel.spec_);
    spec->calls = std::make_shared<jit::kernels::ReductionCalls>();
    spec->fold_vector = std::move(fold_vector);
    spec->builtin_entry = std::move(builtin_entry);
    return ReductionKernel(std::shared_ptr<const ReductionKernel::Spec>(std::move(spec)));
}

const std::string& jit::ReductionKernelAccess::fold_vector(const ReductionKernel& kernel) { return kernel.spec_->fold_vector; }
const std::string& jit::ReductionKernelAccess::builtin_entry(const ReductionKernel& kernel) { return kernel.spec_->builtin_entry; }

std::vector<std::string> ReductionKernel::placeholders() const {
    const std::vector<jit::frontend::Param> params =
        jit::frontend::parse_param_lists(jit::frontend::SourceText{"in", spec_->in}, jit::frontend::SourceText{"out", spec_->out});
    std::set<std::string> names;
    for (const jit::frontend::Param& p : params)
        if (p.is_placeholder) names.insert(p.type.spelling);
    const ReduceTypeSpec rt = parse_reduce_type(spec_->options.reduce_type, spec_->options.preamble);
    if (!rt.placeholder.empty()) names.insert(rt.placeholder);
    if (rt.struct_decl)
        for (const jit::frontend::StructField& f : rt.struct_decl->fields)
            if (!f.placeholder.empty()) names.insert(f.placeholder);
    return {names.begin(), names.end()};
}

std::string ReductionKernel::source(const TypeBinding& types) const {
    if (spec_->custom) return spec_->custom(types).generated.source;
    const jit::codegen::CheckedReduction c = analyze(*this, types, true);
    return jit::codegen::generate_reduction(module_spec(*this), c, types).source;
}

Binary ReductionKernel::compile(const TypeBinding& types, const std::string& arch) const {
    return jit::kernels::compile_reduction(*this, types, {}, arch).binary;
}

jit::kernels::ReductionBinary jit::kernels::compile_reduction(const ReductionKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                                            const std::string& arch) {
    Prepared p = prepare(kernel, ReductionKernelAccess::generator(kernel), types, variant);
    const jit::compile::FoundProgram found = jit::compile::find_or_compile_program(p.program, arch);
    const jit::codegen::GeneratedReduction& g = p.generated;
    ReductionBinary r;
    Binary& b = r.binary;
    b.arch = found.entry->meta.arch;
    b.cubin = found.entry->cubin;
    b.ptx = found.entry->ptx;
    b.log = found.log;
    b.source = g.source;
    b.compile_ms = found.compile_ms;
    // Each group's entry point under its label ("full32"); columns_split's second, the finish.
    for (int k = 0; k < kReductionEntryGroups; ++k)
        for (const bool index64 : {false, true}) {
            const auto group = static_cast<ReductionEntryGroup>(k);
            const std::vector<std::string> symbols = reduction_group_entries(g, group, index64);
            if (symbols.empty()) continue;
            if (!symbols[0].empty()) b.entry_points.emplace(reduction_group_label(group, index64), symbols[0]);
            if (symbols.size() > 1 && !symbols[1].empty())
                b.entry_points.emplace(std::string(group == ReductionEntryGroup::bins ? "bins_finish" : "columns_finish") + (index64 ? "64" : "32"),
                                       symbols[1]);
        }
    r.reduce_type = p.reduce_type;
    r.reduce_itemsize = p.reduce_itemsize;
    r.has_identity = p.has_identity;
    r.array_inputs = g.array_inputs;
    r.outputs = g.outputs;
    r.vector_width = g.vector_width;
    return r;
}

jit::kernels::ScanProgram jit::kernels::scan_program(const ReductionKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                                                     std::function<std::string()> spec_json) {
    Prepared p = prepare(kernel, {}, types, variant, true);
    p.program.spec_json = std::move(spec_json);
    p.program.description = "scan '" + kernel.name() + "' (" + p.program.types + ")";
    const int items = p.generated.scan_items;
    return {std::move(p.generated), std::move(p.program), p.reduce_type, p.reduce_itemsize, items};
}

jit::codegen::CheckedReduction jit::kernels::check_reduction(const ReductionKernel& kernel, const TypeBinding& types) {
    return analyze(kernel, types, true);
}

jit::kernels::ReductionModule jit::kernels::load_reduction(const ReductionKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                                         int ordinal) {
    const CustomGenerator& custom = ReductionKernelAccess::generator(kernel);
    // The note, the loader and the programs live in the kernel's table of calls: they keep its
    // definition only, made once here.
    const ReductionKernel definition = ReductionKernelAccess::definition(kernel);
    std::shared_ptr<PlanNote> note;
    // A reduction from strings: noted (jit/kernels/reduction/note.hpp). Not one with a fold of
    // kjit's own (var): a note is found by the kernel's strings, which do not say the fold.
    if (!custom && ReductionKernelAccess::fold_vector(kernel).empty()) {
        const NoteFields fields = reduction_note_fields(kernel, types, variant);
        note = std::make_shared<PlanNote>(fields.fields, kjit::detail::device_attributes(ordinal).compute_capability(),
                                          static_cast<std::size_t>(kReductionEntryGroups) * 2,
                                          [definition, types, variant] { return spec_json(definition, types, variant); },
                                          kernel.name(), format_type_binding(types));
        ReductionModule m;
        EntryGroups groups;
        if (note->noted_values() && reduction_from_note(*note->noted_values(), m, groups)) {
            // A noted plan: nothing is checked or generated unless a group the note has no key
            // for is needed.
            auto program_of = [definition, types, variant, made = std::optional<Prepared>()](std::size_t s) mutable {
                if (!made) made = prepare(definition, {}, types, variant);
                return reduction_group_program(made->program, made->generated, static_cast<ReductionEntryGroup>(s / 2),
                                               s % 2 == 1);
            };
            m.loader = std::make_shared<LazyEntryPoints>(std::move(program_of), std::move(groups),
                                                         "reduction '" + kernel.name() + "' (" + format_type_binding(types) + ")",
                                                         ordinal, std::move(note));
            return m;
        }
    }
    Prepared p = prepare(definition, custom, types, variant);
    ReductionModule m = module_facts(p);
    if (note) note->set_values(reduction_note_values(m, reduction_groups(p.generated)));
    m.loader = make_reduction_group_loader(std::move(p.program), std::move(p.generated), ordinal, std::move(note));
    return m;
}

jit::kernels::CompiledGroups jit::kernels::compile_reduction_group(const ReductionKernel& kernel, const TypeBinding& types,
                                                 const ModuleVariant& variant, const std::string& arch,
                                                 ReductionEntryGroup group, bool index64) {
    const Prepared p = prepare(kernel, ReductionKernelAccess::generator(kernel), types, variant);
    compile::CachedProgram program = reduction_group_program(p.program, p.generated, group, index64);
    const compile::FoundProgram found = compile::find_or_compile_program(program, arch);
    return {found.entry->meta.arch, found.compile_ms, found.entry->key, compile::alias_key(program)};
}

bool jit::kernels::note_reduction_programs(const ReductionKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                                           const std::string& arch, const std::vector<std::string>& keys,
                                           const std::vector<std::string>& aliases) {
    const std::size_t programs = static_cast<std::size_t>(kReductionEntryGroups) * 2;
    if (ReductionKernelAccess::generator(kernel) || !ReductionKernelAccess::fold_vector(kernel).empty() || keys.size() != programs ||
        aliases.size() != programs)
        return false;
    // Every group, as a call's note has them: a note missing one would send a call the long way
    // for it, which a read-only cache cannot note.
    for (std::size_t g = 0; g < programs; ++g)
        if (reduction_group_exists(static_cast<ReductionEntryGroup>(g / 2), g % 2 == 1) && (keys[g].empty() || aliases[g].empty())) return false;
    const Prepared p = prepare(kernel, {}, types, variant);
    const ReductionModule m = module_facts(p);
    const NoteFields fields = reduction_note_fields(kernel, types, variant);
    return write_plan_note(fields.fields, arch, reduction_note_values(m, reduction_groups(p.generated)), keys, aliases);
}

jit::kernels::CompiledGroups jit::kernels::compile_reduction_groups(const ReductionKernel& kernel, const TypeBinding& types,
                                                  const ModuleVariant& variant, const std::string& arch) {
    CompiledGroups all;
    for (int g = 0; g < kReductionEntryGroups; ++g)
        for (const bool index64 : {false, true}) {
            if (!reduction_group_exists(static_cast<ReductionEntryGroup>(g), index64)) continue;
            const CompiledGroups one = compile_reduction_group(kernel, types, variant, arch, static_cast<ReductionEntryGroup>(g), index64);
            all.arch = one.arch;
            all.compile_ms += one.compile_ms;
        }
    return all;
}

Outputs ReductionKernel::operator()(std::span<const KernelArg> args, const ReduceOptions& options) const {
    std::vector<Array> outputs;
    jit::kernels::call_reduction(*this, *spec_->calls, args, options, &outputs);
    return Outputs(std::move(outputs));
}

void ReductionKernel::prepare(std::span<const KernelArg> args, const ReduceOptions& options) const {
    jit::kernels::prepare_reduction(*this, *spec_->calls, args, options);
}

void ReductionKernel::launch(std::span<const KernelArg> args, const ReduceOptions& options) const {
    jit::kernels::call_reduction(*this, *spec_->calls, args, options, nullptr);
}

Outputs ReductionKernel::reduce_segments(std::span<const KernelArg> args, const Array& offsets, const CallOptions& options) const {
    std::vector<Array> outputs;
    ReduceOptions reduce;
    static_cast<CallOptions&>(reduce) = options;
    jit::kernels::call_reduction(*this, *spec_->calls, args, reduce, &outputs, &offsets);
    return Outputs(std::move(outputs));
}

}  // namespace kjit
