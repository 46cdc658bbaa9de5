// kjit::group_sorted_keys, group_keys and reduce_by_key: the runs of a sorted key column
// (jit/kernels/ops/segments.hpp) reduced by a segmented reduction; unsorted keys numbered through
// a table over their range (jit/kernels/ops/dense_groups.hpp) and reduced by group index, or
// sorted first.
#include "kjit/elementwise_kernel.hpp"
#include "kjit/error.hpp"
#include "kjit/segmented.hpp"
#include "kjit/sort.hpp"
#include "jit/frontend/lexer.hpp"
#include "jit/frontend/params.hpp"
#include "jit/kernels/elementwise/copy.hpp"
#include "jit/kernels/ops/dense_groups.hpp"
#include "jit/kernels/ops/segments.hpp"
#include "jit/kernels/reduction/calls.hpp"

namespace kjit {

KeyGroups group_sorted_keys(const Array& keys, std::optional<Stream> stream) {
    const Stream s = stream ? *stream : Stream::current();
    detail::Segments seg = detail::segments_of_sorted_keys(keys, s);
    return KeyGroups{std::move(seg.keys), std::move(seg.offsets), seg.count};
}

void group_sorted_keys(const Array& keys, const Array& offsets, const Array& group_keys, const Array& count,
                       std::optional<Stream> stream) {
    detail::segments_of_sorted_keys_into(keys, offsets, group_keys, count, stream ? *stream : Stream::current());
}

namespace {

// x[order[i]] for every i: a gather (x packed first when it is not contiguous, so that `raw`
// indexing is by element).
Array take(const Array& x, const Array& order, const Stream& stream) {
    static const ElementwiseKernel gather("raw T x, int64 o", "T y", "y = x[o]", "kjit_take");
    const Array packed = x.is_c_contiguous() ? x : jit::kernels::elementwise::pack(x, x.dtype(), stream);
    CallOptions o;
    o.stream = stream;
    return gather({packed, order}, o)[0];
}

// Whether the map names `i` or `n` (an element's place in its group, the group's size), which a
// reduction by group index does not know. A map that does not lex counts as naming them: its
// call reports the error.
bool map_reads_place(const std::string& map) {
    try {
        jit::frontend::Lexer lexer(jit::frontend::SourceText{"map", map});
        for (jit::frontend::Token t = lexer.next(); t.kind != jit::frontend::TokenKind::end; t = lexer.next())
            if (t.kind == jit::frontend::TokenKind::identifier && (t.text == "i" || t.text == "n")) return true;
        return false;
    } catch (const Error&) {
        return true;
    }
}

}  // namespace

KeyGroups group_keys(const Array& keys, std::optional<Stream> stream) {
    const Stream given = stream ? *stream : Stream::current();
    const Stream s = keys.valid() && !keys.is_host() ? given.for_device(keys.device()) : given;
    if (keys.valid())
        if (std::optional<KeyGroups> dense = jit::kernels::dense_key_groups(keys, s)) return std::move(*dense);
    Array order = argsort(keys, s);
    KeyGroups groups = group_sorted_keys(take(keys, order, s), s);
    groups.order = std::move(order);
    return groups;
}

Outputs reduce_by_key(const ReductionKernel& kernel, const KeyGroups& groups, std::span<const KernelArg> args,
                      const CallOptions& options) {
    if (!groups.order.valid() && !groups.group_of.valid()) return kernel.reduce_segments(args, groups.offsets, options);
    const std::vector<jit::frontend::Param> params =
        jit::frontend::parse_param_lists(jit::frontend::SourceText{"in", kernel.in_params()}, jit::frontend::SourceText{"out", kernel.out_params()});
    const Array& along = groups.group_of.valid() ? groups.group_of : groups.order;
    const std::int64_t n = along.size();
    const Stream given = options.stream ? *options.stream : Stream::current();
    const Stream s = along.is_host() ? given : given.for_device(along.device());
    std::vector<std::size_t> along_keys;  // the array inputs that run along the keys (one element broadcasts)
    for (std::size_t k = 0; k < args.size() && k < params.size(); ++k) {
        if (params[k].is_output || params[k].raw || !args[k].is_array() || !args[k].array().valid()) continue;
        const Array& a = args[k].array();
        if (a.size() == 1 && n != 1) continue;
        if (a.ndim() != 1 || a.size() != n)
            throw ShapeError("reduce_by_key with '" + kernel.name() + "': input '" + params[k].name + "' has shape " +
                             shape_to_string(a.shape()) + " but the keys had " + std::to_string(n) + " elements");
        along_keys.push_back(k);
    }
    if (groups.group_of.valid() && !kernel.identity().empty() && !map_reads_place(kernel.map_expr()) &&
        jit::kernels::bins_warps(jit::ReductionKernelAccess::value_bytes(kernel, args, options), groups.count) >= 1)
        return jit::ReductionKernelAccess::reduce_groups(kernel, args, groups.group_of, groups.offsets, options);
    const Array order = groups.order.valid() ? groups.order : argsort(groups.group_of, s);
    std::vector<KernelArg> taken(args.begin(), args.end());
    std::vector<Array> gathered;  // KernelArg points at its Array: these live until the call returns
    gathered.reserve(along_keys.size());
    for (const std::size_t k : along_keys) {
        gathered.push_back(take(args[k].array(), order, s));
        taken[k] = KernelArg(gathered.back());
    }
    return kernel.reduce_segments(taken, groups.offsets, options);
}

ReducedByKey reduce_by_key(const ReductionKernel& kernel, const Array& keys, std::span<const KernelArg> args,
                           const CallOptions& options) {
    // Each array input runs along the keys (a one-element input broadcasts).
    const std::vector<jit::frontend::Param> params =
        jit::frontend::parse_param_lists(jit::frontend::SourceText{"in", kernel.in_params()}, jit::frontend::SourceText{"out", kernel.out_params()});
    for (std::size_t k = 0; k < args.size() && k < params.size(); ++k) {
        if (params[k].is_output || params[k].raw || !args[k].is_array() || !args[k].array().valid()) continue;
        const Array& a = args[k].array();
        if (keys.valid() && a.size() != keys.size() && a.size() != 1)
            throw ShapeError("reduce_by_key with '" + kernel.name() + "': input '" + params[k].name + "' has shape " +
                             shape_to_string(a.shape()) + " but keys has shape " + shape_to_string(keys.shape()));
    }
    KeyGroups groups = group_sorted_keys(keys, options.stream);
    Outputs values = kernel.reduce_segments(args, groups.offsets, options);
    return ReducedByKey{std::move(groups.keys), std::move(values)};
}

}  // namespace kjit
