// kjit::warm (include/kjit/cache.hpp): a manifest's modules loaded on a device ahead of its calls.
#include "cache/manifest.hpp"
#include "jit/kernels/precompile.hpp"
#include "kjit/cache.hpp"
#include "kjit/error.hpp"

namespace kjit {

WarmResult warm(const std::string& manifest_path, const Device& device) {
    if (!device.is_cuda()) throw Error("kjit::warm: " + device.to_string() + " is not a CUDA device");
    const jit::kernels::PrecompileResult r = jit::kernels::warm(cache::read_manifest(manifest_path), device.ordinal(), 0);
    WarmResult out;
    out.modules = r.loaded;
    out.compiled = r.compiled;
    out.failures = r.failures;
    out.seconds = r.seconds;
    return out;
}

}  // namespace kjit
