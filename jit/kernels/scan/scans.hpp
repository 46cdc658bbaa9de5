// What a ScanKernel is made of inside: a reduction whose map reads the scan's input and whose post
// writes its output (so that the reduction's checker, code generator and host back end serve it
// unchanged), compiled with templates/scan.cuh's entry points; and what it keeps between calls.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "jit/kernels/call_memo.hpp"
#include "jit/kernels/manifest_fields.hpp"
#include "jit/kernels/lazy_entry_points.hpp"
#include "jit/kernels/reduction/calls.hpp"
#include "kjit/scan_kernel.hpp"

namespace kjit::jit::kernels {

// The scan's strings as a reduction (ParseError / TypeError / Error for what a scan cannot be:
// not one input and one output, a raw parameter, no identity, a struct scan type).
ReductionKernel scan_as_reduction(const ScanKernel& kernel);

// templates/scan.cuh's entry points, each its own program: group g is scan (g / 2 == 0) or
// scan_segments (1), in a 32-bit (g % 2 == 0) or 64-bit index variant.
inline constexpr int kScanGroups = 4;
inline constexpr std::size_t scan_group(bool segmented, bool index64) { return (segmented ? 2u : 0u) + (index64 ? 1u : 0u); }
std::string scan_group_label(std::size_t group);  // "scan32", "scan_segments64"

// The manifest entry of this scan and binding ("kind": "scan").
std::string scan_spec_json(const ScanKernel& kernel, const TypeBinding& types, const ModuleVariant& variant);

// The scan's program for a binding (every entry point) and its entry points' names by group.
struct ScanModuleSource {
    ScanProgram program;
    std::vector<std::vector<std::string>> groups;
};
ScanModuleSource scan_module_source(const ScanKernel& kernel, const TypeBinding& types, const ModuleVariant& variant);

// One group compiled for `arch` or found in a cache (what `kjit precompile` does per job).
CompiledModules compile_scan_group(const ScanKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                                   const std::string& arch, std::size_t group);

// A manifest entry of "kind": "scan" (what a scan's call records in a cache's manifest): "scan"
// and "identity" (required), "name" (default "scan"), "in", "out", "reduce_type", "preamble",
// "options", "types", "storage". CacheError names a malformed field.
using ManifestScan = ManifestEntry<ScanKernel>;
bool is_scan_manifest_entry(const nlohmann::json& entry);
ManifestScan scan_from_manifest_entry(const nlohmann::json& entry);

struct ScanPlan {
    std::shared_ptr<LazyEntryPoints> loader;  // GPU plans
    host::ReductionCode host;                 // host plans
    std::size_t value_itemsize = 0;
    int items = 0;  // per thread, on the GPU (the module's NAME_ops::scan_items)
    frontend::BoundCall bound;
    detail::ArgsLayout args;
};
using ScanCalls = CallMemo<ScanPlan>;

// ScanKernel::prepare.
void prepare_scan(const ScanKernel& kernel, ScanCalls& calls, std::span<const KernelArg> args, const ScanOptions& options);

// ScanKernel's calls: `outputs` null for launch(); `offsets` non-null for scan_segments.
void call_scan(const ScanKernel& kernel, ScanCalls& calls, std::span<const KernelArg> args, const ScanOptions& options,
               std::vector<Array>* outputs, const Array* offsets = nullptr);

}  // namespace kjit::jit::kernels
