#include "jit/compile/nvrtc_compiler.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <memory>

#include <fmt/format.h>

#include "jit/compile/nvrtc_version.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/nvrtc.hpp"

namespace kjit::jit::compile {
namespace {

// Owns one nvrtcProgram: destroyed on every path out of compile_cuda, errors included.
struct ProgramDeleter {
    const kjit::detail::NvrtcApi* api;
    void operator()(nvrtcProgram p) const noexcept {
        if (p != nullptr) api->nvrtcDestroyProgram(&p);  // nothing useful to do if this fails
    }
};
using UniqueProgram = std::unique_ptr<_nvrtcProgram, ProgramDeleter>;

std::string program_log(const kjit::detail::NvrtcApi& api, nvrtcProgram p) {
    std::size_t size = 0;
    KJIT_NVRTC_CHECK(api.nvrtcGetProgramLogSize(p, &size));
    std::string log(size, '\0');
    if (size > 0) KJIT_NVRTC_CHECK(api.nvrtcGetProgramLog(p, log.data()));
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    return log;
}

// Whether the text includes a header by name (<...> or "..."): then it gets the toolkit's
// include folders, as nvcc gives them; a source that includes nothing is compiled without.
bool has_include(std::string_view text) { return !include_directives(text).empty(); }

// The toolkit's include folder and, from CUDA 13 on, its CCCL folder (<cuda/std/...>, <cub/...>,
// <thrust/...> live in include/cccl), where CuPy users expect them found.
const std::vector<std::string>& toolkit_include_options(const kjit::detail::NvrtcApi& api) {
    static std::mutex mutex;
    static std::map<std::string, std::vector<std::string>> by_dir;
    const std::string& dir = toolkit_include_dir(api);
    const std::lock_guard lock(mutex);
    if (const auto it = by_dir.find(dir); it != by_dir.end()) return it->second;
    std::vector<std::string> options;
    if (!dir.empty()) {
        options.push_back("--include-path=" + dir);
        std::error_code ec;
        if (std::filesystem::is_directory(std::filesystem::path(dir) / "cccl", ec)) options.push_back("--include-path=" + dir + "/cccl");
    }
    return by_dir.emplace(dir, std::move(options)).first->second;
}

[[noreturn]] void throw_compile_error(const CompileRequest& request, const std::string& name, int status,
                                      const std::string& log) {
    if (status == NVRTC_ERROR_INVALID_OPTION) {
        std::string opts;
        for (const std::string& o : compile_options(request)) opts += (opts.empty() ? "" : " ") + o;
        throw CompileError(fmt::format("NVRTC rejected the options for '{}': {}", name, opts), log, {});
    }
    std::string message = fmt::format("cannot compile '{}' for {}", name, request.target.name());
    if (log.find("could not open source file") != std::string::npos)
        message += " (a header was not found; CUDA toolkit headers need CompileRequest::toolkit_headers "
                   "and the toolkit's include folder under $CUDA_PATH or /usr/local/cuda)";
    std::string excerpt = source_excerpt(request.source, log_line_numbers(log, name));
    for (const auto& [file, text] : request.user_texts) {
        const std::string lines = source_excerpt(text, log_line_numbers(log, file));
        if (!lines.empty()) excerpt += (excerpt.empty() ? "" : "\n") + file + ":\n" + lines;
    }
    throw CompileError(message, log, excerpt);
}

}  // namespace

std::vector<std::string> compile_options(const CompileRequest& request) {
    // C++17, not 20: generated code needs nothing newer, and C++20's rewritten comparisons would
    // make `complex == real` ambiguous with the reversed candidate. Measured the same speed.
    // -default-device: helpers in templates and preambles need no __device__ annotation.
    // No -lineinfo or --use_fast_math by default (docs/perf-log.md): callers add them.
    std::vector<std::string> o = {"-std=c++17", "-default-device",
                                  "--gpu-architecture=" + request.target.name()};
    o.insert(o.end(), request.options.begin(), request.options.end());
    return o;
}

CompileResult compile_cuda(const CompileRequest& request) {
    const auto start = std::chrono::steady_clock::now();
    const kjit::detail::NvrtcApi& api = kjit::detail::nvrtc();
    const std::string name = request.program_name.empty() ? "kjit_program.cu" : request.program_name;
    if (request.target.compiled == 0)
        throw Error(fmt::format("no target architecture for '{}': set CompileRequest::target from select_arch()",
                                name));

    // The last guard: NVRTC takes C strings, and a program cut at a NUL may compile to a module
    // without its kernel and be cached as a success. The checkers report NULs with positions.
    if (request.source.find('\0') != std::string::npos)
        throw CompileError(fmt::format("the program for '{}' holds a NUL byte: NVRTC would compile only the text before it", name), "", {});
    for (const std::string& o : request.options)
        if (o.find('\0') != std::string::npos)
            throw CompileError(fmt::format("an NVRTC option for '{}' holds a NUL byte", name), "", {});

    std::vector<const char*> header_texts, header_names;
    bool includes = request.toolkit_headers || has_include(request.source);
    for (const auto& [header_name, text] : request.headers) {
        if (text.find('\0') != std::string::npos || header_name.find('\0') != std::string::npos)
            throw CompileError(fmt::format("the header \"{}\" of '{}' holds a NUL byte", header_name, name), "", {});
        header_names.push_back(header_name.c_str());
        header_texts.push_back(text.c_str());
        includes = includes || has_include(text);
    }
    nvrtcProgram raw = nullptr;
    KJIT_NVRTC_CHECK(api.nvrtcCreateProgram(&raw, request.source.c_str(), name.c_str(), static_cast<int>(header_texts.size()),
                                            header_texts.empty() ? nullptr : header_texts.data(),
                                            header_names.empty() ? nullptr : header_names.data()));
    const UniqueProgram program(raw, ProgramDeleter{&api});
    for (const std::string& e : request.name_expressions)
        KJIT_NVRTC_CHECK(api.nvrtcAddNameExpression(raw, e.c_str()));

    std::vector<std::string> options = compile_options(request);
    if (includes) {
        const std::vector<std::string>& include = toolkit_include_options(api);
        options.insert(options.end(), include.begin(), include.end());
    }
    std::vector<const char*> argv;
    argv.reserve(options.size());
    for (const std::string& o : options) argv.push_back(o.c_str());

    const nvrtcResult status = api.nvrtcCompileProgram(raw, static_cast<int>(argv.size()), argv.data());
    CompileResult result;
    result.log = program_log(api, raw);
    if (status == NVRTC_ERROR_COMPILATION || status == NVRTC_ERROR_INVALID_OPTION)
        throw_compile_error(request, name, status, result.log);
    if (status != NVRTC_SUCCESS)  // NVRTC itself failed (out of memory, builtins missing...)
        kjit::detail::throw_nvrtc_error(status, "nvrtcCompileProgram(program, options)", __FILE__, __LINE__);

    // nvrtcGetPTX works after a compile for a real sm_XX (checked for NVRTC 12 and 13), so one
    // compile gives both: no second compute_XX pass (which would cost ~14 ms more).
    std::size_t size = 0;
    KJIT_NVRTC_CHECK(api.nvrtcGetPTXSize(raw, &size));
    result.ptx.assign(size, '\0');
    if (size > 0) KJIT_NVRTC_CHECK(api.nvrtcGetPTX(raw, result.ptx.data()));
    if (!result.ptx.empty() && result.ptx.back() == '\0') result.ptx.pop_back();
    if (!request.target.ptx_only) {
        KJIT_NVRTC_CHECK(api.nvrtcGetCUBINSize(raw, &size));
        result.cubin.resize(size);
        if (size > 0) KJIT_NVRTC_CHECK(api.nvrtcGetCUBIN(raw, reinterpret_cast<char*>(result.cubin.data())));
    }
    for (const std::string& e : request.name_expressions) {
        const char* lowered = nullptr;
        KJIT_NVRTC_CHECK(api.nvrtcGetLoweredName(raw, e.c_str(), &lowered));
        result.lowered_names.emplace_back(e, lowered);  // owned by the program: copy before destroying it
    }
    result.target = request.target;
    result.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return result;
}

std::string nvrtc_version_key() { return nvrtc_version_key(kjit::detail::nvrtc()); }

std::vector<int> log_line_numbers(std::string_view log, std::string_view program_name) {
    std::vector<int> errors;
    std::vector<int> others;  // warnings and remarks: shown only when there is no error line
    std::size_t begin = 0;
    while (begin < log.size()) {
        std::size_t end = log.find('\n', begin);
        if (end == std::string_view::npos) end = log.size();
        const std::string_view line = log.substr(begin, end - begin);
        begin = end + 1;
        if (!line.starts_with(program_name) || line.size() <= program_name.size() ||
            line[program_name.size()] != '(')
            continue;
        std::size_t i = program_name.size() + 1;
        int number = 0;
        const std::size_t digits_at = i;
        while (i < line.size() && line[i] >= '0' && line[i] <= '9' && number < 100000000)
            number = number * 10 + (line[i++] - '0');
        if (i == digits_at || !line.substr(i).starts_with("):")) continue;
        (line.find("error", i) != std::string_view::npos ? errors : others).push_back(number);
    }
    std::vector<int>& chosen = errors.empty() ? others : errors;
    std::sort(chosen.begin(), chosen.end());
    chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
    return chosen;
}

std::string source_excerpt(std::string_view source, const std::vector<int>& lines, int context) {
    // Split once; line i (1-based) is text[i - 1].
    std::vector<std::string_view> text;
    for (std::size_t begin = 0; begin <= source.size();) {
        std::size_t end = source.find('\n', begin);
        if (end == std::string_view::npos) end = source.size();
        text.push_back(source.substr(begin, end - begin));
        begin = end + 1;
    }
    if (!source.empty() && source.back() == '\n') text.pop_back();
    const int count = static_cast<int>(text.size());

    // At most this many error lines shown: a cascade of errors would repeat the whole program.
    constexpr std::size_t max_marked = 8;
    std::vector<int> marked;
    for (int l : lines)
        if (l >= 1 && l <= count && marked.size() < max_marked) marked.push_back(l);
    if (marked.empty()) return {};
    std::sort(marked.begin(), marked.end());

    const int width = static_cast<int>(std::to_string(std::min(count, marked.back() + context)).size());
    std::string out;
    int printed_up_to = 0;
    for (std::size_t k = 0; k < marked.size(); ++k) {
        const int first = std::max({1, marked[k] - context, printed_up_to + 1});
        const int last = std::min(count, marked[k] + context);
        if (printed_up_to != 0 && first > printed_up_to + 1) out += "   ...\n";
        for (int l = first; l <= last; ++l) {
            const bool mark = std::binary_search(marked.begin(), marked.end(), l);
            out += fmt::format("{} {:>{}} | {}\n", mark ? '>' : ' ', l, width, text[l - 1]);
        }
        printed_up_to = std::max(printed_up_to, last);
    }
    out.pop_back();
    return out;
}

}  // namespace kjit::jit::compile
