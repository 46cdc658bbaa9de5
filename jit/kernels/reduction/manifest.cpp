#include "jit/kernels/reduction/manifest.hpp"

#include "jit/kernels/manifest_fields.hpp"
#include "jit/kernels/reduction/calls.hpp"
#include "kjit/error.hpp"

namespace kjit::jit::kernels {

bool is_reduction_manifest_entry(const nlohmann::json& e) {
    return e.is_object() && e.contains("kind") && e["kind"] == "reduction";
}

ManifestReduction reduction_from_manifest_entry(const nlohmann::json& e) {
    if (!is_reduction_manifest_entry(e)) throw CacheError("not a reduction entry: \"kind\" must be \"reduction\"");
    KernelOptions options;
    options.preamble = manifest_text(e, "preamble", false);
    options.nvrtc_options = manifest_text_list(e, "options");
    options.reduce_type = manifest_text(e, "reduce_type", false);
    const std::string name = e.contains("name") ? manifest_text(e, "name", true) : "reduce";
    // Read in the order a person would look for a mistake: the parameters, then the expressions.
    std::string in = manifest_text(e, "in", false), out = manifest_text(e, "out", false);
    std::string map = manifest_text(e, "map", true), reduce = manifest_text(e, "reduce", true);
    std::string post = manifest_text(e, "post", true), identity = manifest_text(e, "identity", false);
    ManifestReduction m{ReductionKernel(std::move(in), std::move(out), std::move(map), std::move(reduce), std::move(post),
                                        std::move(identity), name, std::move(options)),
                        {}, {}, {}};
    m.bindings = manifest_bindings(e);
    m.scalars = manifest_text_list(e, "scalars");
    m.storage = manifest_storage(e);
    return m;
}

}  // namespace kjit::jit::kernels
