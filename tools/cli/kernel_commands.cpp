// `kjit check`, `kjit source` and `kjit compile`: the front end and NVRTC from the command line,
// for elementwise and reduction kernels alike.
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "cache/file_io.hpp"
#include "jit/kernels/reduction/calls.hpp"
#include "kjit/error.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/kernel_flags.hpp"

namespace kjit::cli {
namespace {

// The single binding a command that generates code works on.
TypeBinding one_binding(const KernelRequest& r, const char* command) {
    if (r.bindings.size() > 1)
        throw Error(fmt::format("{} works on one type binding; the spec has {}: pick one with --types", command,
                                r.bindings.size()));
    if (r.bindings.empty()) {
        const auto placeholders = r.placeholders();
        if (!placeholders.empty())
            throw TypeError(fmt::format("{} needs types for the placeholders ({}): give --types {}=float32...", command,
                                        fmt::join(placeholders, ", "), placeholders.front()));
        return {};
    }
    return r.bindings.front();
}

// Through a temporary of a random name beside it (never a fixed "F.tmp" that a symlink could be
// planted at), renamed over it: a reader sees the old file or the whole new one.
void write_file(const std::string& path, const void* data, std::size_t size) {
    const std::string error = cache::replace_file(path, std::span(static_cast<const unsigned char*>(data), size), 0666,
                                                  cache::ModeIs::less_umask, /*durable=*/false);
    if (!error.empty()) throw IoError("cannot write '" + path + "': " + error);
}

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Writes -o FILE and prints what `kjit compile` made; for a reduction also its reduce type and
// entry points (one per strategy and index width).
void report_compiled(const KernelRequest& r, const TypeBinding& b, const Binary& bin, const std::string& output,
                     const jit::kernels::ReductionBinary* reduction) {
    if (!output.empty()) {
        if (ends_with(output, ".cubin")) {
            if (bin.cubin.empty())
                throw Error("no cubin for " + bin.arch + " (PTX only); write FILE.ptx instead");
            write_file(output, bin.cubin.data(), bin.cubin.size());
        } else if (ends_with(output, ".ptx")) {
            write_file(output, bin.ptx.data(), bin.ptx.size());
        } else {
            throw Error("-o: the file name must end in .cubin or .ptx, not '" + output + "'");
        }
    }
    fmt::print("compiled '{}'{} for {} in {:.1f} ms: cubin {} bytes, PTX {} bytes{}\n", r.name(),
               b.empty() ? "" : " (" + kjit::format_type_binding(b) + ")", bin.arch, bin.compile_ms, bin.cubin.size(),
               bin.ptx.size(), output.empty() ? "" : ", written to " + output);
    if (reduction != nullptr) {
        std::vector<std::string> entries;
        for (const char* name : {"full32", "full64", "rows_warp32", "rows_warp64", "rows_block32", "rows_block64", "columns32",
                                 "columns64", "columns_split32", "columns_split64", "columns_finish32", "columns_finish64", "segments_warp32", "segments_warp64",
                                 "segments_block32", "segments_block64", "small32", "bins64", "bins_finish64"})
            entries.push_back(bin.entry_point(name));
        fmt::print("reduce type {}, {}; entry points: {}\n", reduction->reduce_type,
                   reduction->has_identity ? "identity" : "no identity", fmt::join(entries, " "));
    }
    if (!bin.log.empty()) fmt::print(stderr, "NVRTC log:\n{}\n", bin.log);
}

}  // namespace

void add_kernel_commands(CLI::App& app, int& exit_status) {
    {
        auto flags = std::make_shared<KernelFlags>();
        CLI::App* cmd = app.add_subcommand("check", "Parse and type-check a kernel; exit 0 if valid, 1 with the diagnostic");
        add_kernel_flags(*cmd, *flags);
        cmd->callback([flags, &exit_status] {
            const KernelRequest r = load_kernel(*flags);
            if (r.bindings.empty()) {
                r.check();
                const auto placeholders = r.placeholders();
                if (placeholders.empty())
                    fmt::print("kernel '{}' is valid\n", r.name());
                else
                    fmt::print("kernel '{}' is valid for some types of {}; give --types to check the rules that depend "
                               "on them\n",
                               r.name(), fmt::join(placeholders, ", "));
            }
            for (const TypeBinding& b : r.bindings) {
                r.check(b);
                fmt::print("kernel '{}' is valid for {}\n", r.name(), kjit::format_type_binding(b));
            }
            exit_status = 0;
        });
    }
    {
        auto flags = std::make_shared<KernelFlags>();
        CLI::App* cmd = app.add_subcommand("source", "Print the CUDA source kjit generates for a kernel");
        add_kernel_flags(*cmd, *flags);
        cmd->callback([flags, &exit_status] {
            const KernelRequest r = load_kernel(*flags);
            std::fputs(r.source(one_binding(r, "kjit source")).c_str(), stdout);
            exit_status = 0;
        });
    }
    {
        auto flags = std::make_shared<KernelFlags>();
        auto arch = std::make_shared<std::string>();
        auto output = std::make_shared<std::string>();
        CLI::App* cmd = app.add_subcommand("compile", "Compile a kernel with NVRTC (no GPU needed)");
        add_kernel_flags(*cmd, *flags);
        cmd->add_option("--arch", *arch, "Target, e.g. sm_90 (default: KJIT_ARCH, else the GPU, else sm_80)");
        cmd->add_option("-o,--output", *output, "Write the cubin (FILE.cubin) or the PTX (FILE.ptx)");
        cmd->callback([flags, arch, output, &exit_status] {
            const KernelRequest r = load_kernel(*flags);
            const TypeBinding b = one_binding(r, "kjit compile");
            if (const auto* reduction = std::get_if<ReductionKernel>(&r.kernel)) {
                const jit::kernels::ReductionBinary made = jit::kernels::compile_reduction(*reduction, b, {}, *arch);
                report_compiled(r, b, made.binary, *output, &made);
            } else {
                report_compiled(r, b, std::get<ElementwiseKernel>(r.kernel).compile(b, *arch), *output, nullptr);
            }
            exit_status = 0;
        });
    }
}

}  // namespace kjit::cli
