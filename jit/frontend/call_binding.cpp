#include "jit/frontend/call_binding.hpp"

#include "jit/frontend/parser.hpp"
#include "jit/frontend/preamble.hpp"
#include "jit/frontend/type_checker.hpp"
#include "kjit/error.hpp"

namespace kjit::jit::frontend {

CallSignature call_signature(std::string_view in_params, std::string_view out_params) {
    CallSignature sig;
    sig.params = parse_param_lists(SourceText{"in", in_params}, SourceText{"out", out_params});
    for (const Param& p : sig.params) {
        (p.is_output ? sig.outputs : sig.inputs)++;
        sig.has_raw = sig.has_raw || p.raw;
    }
    return sig;
}

namespace {

std::string describe(const Param& p) {
    return std::string(p.is_output ? "output" : "input") + (p.raw ? " raw" : "") + " '" + p.name + "'";
}

}  // namespace

BoundCall bind_call(const CallSignature& sig, const std::string& kernel_name, const ArgumentKind* args, std::size_t count) {
    const std::size_t np = sig.params.size();
    // Made only for an error: a first call of a cached kernel runs this once, cold, and every
    // string built there costs (docs/perf-log.md).
    const auto where = [&kernel_name] { return "kernel '" + kernel_name + "': "; };
    if (count != static_cast<std::size_t>(sig.inputs) && count != np)
        throw TypeError(where() + "takes " + std::to_string(sig.inputs) + " inputs" +
                        (sig.outputs ? " (then optionally its " + std::to_string(sig.outputs) + " outputs)" : std::string()) +
                        ", got " + std::to_string(count) + " arguments");
    auto arg = [&](std::size_t k) { return k < count ? args[k] : ArgumentKind{}; };
    BoundCall b;
    auto bind = [&](const Param& p, DType t) {
        auto [it, inserted] = b.types.emplace(p.type.spelling, t);
        return inserted ? std::optional<DType>() : std::optional<DType>(it->second);
    };
    // Outputs first: their dtypes are what the call writes.
    for (std::size_t k = static_cast<std::size_t>(sig.inputs); k < np; ++k) {
        const Param& p = sig.params[k];
        const ArgumentKind a = arg(k);
        if (a.kind == ArgumentKind::scalar) throw TypeError(where() + describe(p) + " must be an array, not a scalar");
        if (a.kind != ArgumentKind::array) continue;
        if (!p.is_placeholder) {
            if (!(a.dtype == *p.dtype))
                throw TypeError(where() + describe(p) + " is declared " + std::string(p.dtype->name()) + " but the array is " +
                                std::string(a.dtype.name()));
        } else if (const std::optional<DType> earlier = bind(p, a.dtype); earlier && !(*earlier == a.dtype)) {
            throw TypeError(where() + describe(p) + " is " + std::string(a.dtype.name()) + " but an earlier output made " +
                            p.type.spelling + " " + std::string(earlier->name()));
        }
    }
    // Array inputs in order.
    for (std::size_t k = 0; k < static_cast<std::size_t>(sig.inputs); ++k) {
        const Param& p = sig.params[k];
        const ArgumentKind a = arg(k);
        if (a.kind != ArgumentKind::array) continue;
        if (p.is_placeholder && !b.types.count(p.type.spelling)) bind(p, a.dtype);
    }
    // Scalars bind what no array did.
    for (std::size_t k = 0; k < static_cast<std::size_t>(sig.inputs); ++k) {
        const Param& p = sig.params[k];
        const ArgumentKind a = arg(k);
        if (a.kind == ArgumentKind::scalar && p.is_placeholder && !b.types.count(p.type.spelling)) bind(p, a.dtype);
    }
    b.param_types.resize(np);
    b.scalar.assign(np, false);
    b.storage.assign(np, std::nullopt);
    for (std::size_t k = 0; k < np; ++k) {
        const Param& p = sig.params[k];
        if (p.is_placeholder) {
            const auto it = b.types.find(p.type.spelling);
            if (it == b.types.end())
                throw TypeError(where() + "nothing gives placeholder '" + p.type.spelling + "' a type (" + describe(p) +
                                " uses it): pass an array for a parameter of type " + p.type.spelling +
                                (p.is_output ? ", or pass the output" : ""));
            b.param_types[k] = it->second;
        } else {
            b.param_types[k] = *p.dtype;
        }
        const ArgumentKind a = arg(k);
        if (p.is_output) continue;
        if (a.kind == ArgumentKind::scalar) {
            if (p.raw) throw TypeError(where() + describe(p) + " must be an array, not a scalar");
            if (a.dtype.is_complex() && !b.param_types[k].is_complex())
                throw TypeError(where() + "the complex scalar given for " + describe(p) + " cannot become " +
                                std::string(b.param_types[k].name()) + " without losing its imaginary part");
            b.scalar[k] = true;
            continue;
        }
        if (a.dtype == b.param_types[k]) continue;
        if (p.raw)
            throw TypeError(where() + describe(p) + " is " + std::string(b.param_types[k].name()) + " but the array is " +
                            std::string(a.dtype.name()) + ": raw arrays are indexed as they are and never converted");
        if (!can_cast_safely(a.dtype, b.param_types[k]))
            throw TypeError(where() + describe(p) + " is " + std::string(b.param_types[k].name()) + " but the array is " +
                            std::string(a.dtype.name()) + ", which does not convert to it without loss (NumPy's safe casting)");
        b.storage[k] = a.dtype;
    }
    return b;
}

}  // namespace kjit::jit::frontend
