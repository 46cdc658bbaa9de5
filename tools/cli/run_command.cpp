// `kjit run`: evaluates an elementwise or reduction kernel on .npy files and literal scalars, on
// the GPU or (--device cpu, the default without a GPU) on the CPU through the host back end.
// Every mistake that can be found without a GPU is reported before one is looked for.
//   kjit run --in "T x, T a" --out "T y" --op "y = a * x" --arg x=x.npy --arg a=2.5 --save y=y.npy
//   kjit run --in "T x" --out "T y" --map x --reduce "a + b" --post "y = a" --identity 0
//            --arg x=x.npy --axis 1 --keepdims --save y=y.npy
#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "jit/frontend/params.hpp"
#include "kjit/error.hpp"
#include "kjit/npy.hpp"
#include "kjit/scalar.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/kernel_flags.hpp"
#include "tools/cli/run_reduction.hpp"

namespace kjit::cli {
namespace {

struct RunFlags {
    std::vector<std::string> args, saves;
    std::int64_t size = -1;
    std::vector<std::string> axes;  // reductions only
    bool keepdims = false;          // reductions only
    std::string device;             // "cpu", "gpu", or empty: the GPU when there is one
};

// The flags of one kind used with the other.
void check_flags_fit(const KernelRequest& r, const RunFlags& run) {
    if (r.is_reduction()) {
        if (run.size != -1) throw Error("--size is for elementwise kernels; a reduction's size comes from its inputs");
        return;
    }
    if (!run.axes.empty()) throw Error("--axis is for reductions (--map, --reduce, --post); this kernel is elementwise");
    if (run.keepdims) throw Error("--keepdims is for reductions (--map, --reduce, --post); this kernel is elementwise");
}

// "name=value" into its two parts; the flag's name for errors.
std::pair<std::string, std::string> split_assignment(const std::string& item, const char* flag) {
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
        throw Error(fmt::format("{} '{}': write NAME=VALUE", flag, item));
    return {item.substr(0, eq), item.substr(eq + 1)};
}

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A literal scalar: true/false, an integer (int64), a real (float64), optionally typed as
// "float32:2.5" (any dtype name). Throws Error naming the argument.
Scalar parse_scalar(const std::string& name, const std::string& text) {
    std::string value = text;
    std::optional<DType> type;
    if (const std::size_t colon = text.find(':'); colon != std::string::npos) {
        type = DType::parse(text.substr(0, colon));
        value = text.substr(colon + 1);
    }
    Scalar s;
    if (value == "true" || value == "false") {
        s = Scalar(value == "true");
    } else {
        const char* begin = value.c_str();
        char* end = nullptr;
        errno = 0;
        const long long i = std::strtoll(begin, &end, 0);
        if (!value.empty() && *end == '\0' && errno == 0) {
            s = Scalar(static_cast<std::int64_t>(i));
        } else {
            errno = 0;
            const double d = std::strtod(begin, &end);
            if (value.empty() || *end != '\0' || errno == ERANGE)
                throw Error(fmt::format("--arg {}={}: not a .npy file nor a number (write 2.5, -3, true, or float32:2.5)",
                                        name, text));
            s = Scalar(d);
        }
    }
    return type ? s.cast(*type) : s;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_status) {
    auto flags = std::make_shared<KernelFlags>();
    auto run = std::make_shared<RunFlags>();
    CLI::App* cmd = app.add_subcommand("run", "Run an elementwise or reduction kernel on .npy files and scalars, on the GPU or the CPU");
    add_kernel_flags(*cmd, *flags);
    cmd->add_option("--arg", run->args, "NAME=FILE.npy or NAME=VALUE (2.5, -3, true, float32:2.5); outputs optional")
        ->take_all();
    cmd->add_option("--save", run->saves, "NAME=FILE.npy: write an output")->take_all();
    cmd->add_option("--size", run->size, "The element count, when no argument is a non-raw array");
    cmd->add_option("--axis", run->axes, "Reduction: the axes reduced (repeat or write 0,2; negative count from the end; default: all)")
        ->allow_extra_args(false);
    cmd->add_flag("--keepdims", run->keepdims, "Reduction: keep the reduced axes in the outputs, with extent 1");
    cmd->add_option("--device", run->device,
                    "cpu or gpu: where the inputs are loaded and the kernel runs (default: the GPU when there is one; "
                    "cpu runs elementwise kernels and reductions through the host back end)")
        ->check(CLI::IsMember({"cpu", "gpu"}));
    cmd->callback([flags, run, &exit_status] {
        const KernelRequest r = load_kernel(*flags);
        if (r.bindings.size() > 1) throw Error("kjit run takes one type binding; pick one with --types");
        check_flags_fit(r, *run);
        const std::optional<std::vector<int>> axes = parse_axes(run->axes);
        const std::vector<jit::frontend::Param> params =
            jit::frontend::parse_param_lists(jit::frontend::SourceText{"in", r.in_params()}, jit::frontend::SourceText{"out", r.out_params()});
        std::map<std::string, std::string> given, saves;
        for (const std::string& a : run->args) {
            auto [name, value] = split_assignment(a, "--arg");
            if (!given.emplace(name, value).second) throw Error("--arg " + name + " is given twice");
        }
        for (const std::string& a : run->saves) {
            auto [name, path] = split_assignment(a, "--save");
            if (!ends_with(path, ".npy")) throw Error("--save " + a + ": the file name must end in .npy");
            saves[name] = path;
        }
        for (const auto& [name, value] : given) {
            bool known = false;
            for (const jit::frontend::Param& p : params) known = known || p.name == name;
            if (!known) throw Error("--arg " + name + ": the kernel has no parameter '" + name + "'");
        }
        for (const auto& [name, path] : saves) {
            bool output = false;
            for (const jit::frontend::Param& p : params) output = output || (p.name == name && p.is_output);
            if (!output) throw Error("--save " + name + ": the kernel has no output '" + name + "'");
        }
        // Literal scalars are checked before anything needs the GPU.
        std::map<std::string, Scalar> scalars;
        for (const jit::frontend::Param& p : params) {
            const auto it = given.find(p.name);
            if (it == given.end() || ends_with(it->second, ".npy")) continue;
            if (p.is_output) throw Error("output '" + p.name + "' must be a .npy file");
            Scalar s = parse_scalar(p.name, it->second);
            // --types fixes a placeholder's type for scalars that would otherwise decide it.
            if (p.is_placeholder && !r.bindings.empty() && r.bindings.front().count(p.type.spelling))
                s = s.cast(r.bindings.front().at(p.type.spelling));
            scalars.emplace(p.name, s);
        }
        // Arguments in parameter order: every input, then the outputs if any is given.
        bool outputs_given = false;
        for (const jit::frontend::Param& p : params) outputs_given = outputs_given || (p.is_output && given.count(p.name));
        for (const jit::frontend::Param& p : params) {
            if (p.is_output && !outputs_given) break;
            if (!given.count(p.name))
                throw Error(fmt::format("{} '{}' needs a value: --arg {}=FILE.npy{}", p.is_output ? "output" : "input", p.name,
                                        p.name, p.is_output ? " (give every output, or none)" : " or --arg NAME=2.5"));
        }
        // Where the .npy inputs are loaded, which is where the kernel runs.
        const bool has_gpu = Device::count() > 0;
        const bool on_cpu = run->device == "cpu" || (run->device.empty() && !has_gpu);
        if (!on_cpu && !has_gpu)
            throw NoDeviceError(std::string("kjit run needs a GPU for --device gpu (--device cpu runs the kernel on the CPU): ") +
                                no_device_reason());
        const Device gpu = on_cpu ? Device::cpu() : Device::cuda(0);
        const Stream stream = on_cpu ? Stream::current() : Stream::legacy_default(gpu);

        std::vector<Array> arrays;
        arrays.reserve(params.size());
        std::vector<KernelArg> args;
        for (const jit::frontend::Param& p : params) {
            if (p.is_output && !outputs_given) break;
            const auto it = given.find(p.name);
            if (ends_with(it->second, ".npy")) {
                arrays.push_back(load_npy(it->second, gpu, stream));
                args.emplace_back(arrays.back());
            } else {
                args.emplace_back(scalars.at(p.name));
            }
        }
        const std::span<const KernelArg> all(args);
        const Outputs outputs = r.is_reduction() ? run_reduction(r.reduction(), all, ReduceOptions{{stream}, axes, run->keepdims})
                                                 : r.elementwise()(all, CallOptions{stream, run->size});
        std::size_t k = 0;
        for (const jit::frontend::Param& p : params) {
            if (!p.is_output) continue;
            const Array& y = outputs[k++];
            const auto save = saves.find(p.name);
            if (save != saves.end()) save_npy(save->second, y, stream);
            fmt::print("{}: {} {}{}\n", p.name, y.dtype().name(), shape_to_string(y.shape()),
                       save != saves.end() ? " -> " + save->second : "");
        }
        if (!on_cpu) stream.synchronize();
        exit_status = 0;
    });
}

}  // namespace kjit::cli
