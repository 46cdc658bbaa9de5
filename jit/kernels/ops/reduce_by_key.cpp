// kjit::group_sorted_keys and kjit::reduce_by_key: the runs of a sorted key column
// (jit/kernels/ops/segments.hpp) reduced by a segmented reduction.
#include "kjit/error.hpp"
#include "kjit/segmented.hpp"
#include "jit/frontend/params.hpp"
#include "jit/kernels/ops/segments.hpp"

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
