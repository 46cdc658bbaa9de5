// Compiling CUDA source with NVRTC (loaded at run time, runtime/detail/nvrtc.hpp): one call per
// program, cubin for the target's real architecture plus its PTX, errors as kjit exceptions.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jit/compile/arch.hpp"
#include "jit/compile/included_files.hpp"

namespace kjit::jit::compile {

struct CompileRequest {
    std::string source;
    std::string program_name;  // in NVRTC's messages and ours: "axpb.cu"
    ArchTarget target;         // from select_arch()
    // Appended after kjit's own options (compile_options()): "-lineinfo", "--use_fast_math"...
    std::vector<std::string> options;
    // Expressions naming __global__ template instantiations ("scale<float>"): their mangled names
    // come back in CompileResult::lowered_names, in this order.
    std::vector<std::string> name_expressions;
    // The source #includes CUDA toolkit headers (cuda_fp16.h, cuda_bf16.h), which NVRTC 13 does not
    // find on its own: add the toolkit's include folder. Also turned on by any `#include <`
    // in the source. The folder's path is not an option compile_options() lists (see there).
    bool toolkit_headers = false;
    // Headers NVRTC finds by name without a file, (include name, text), as nvrtcCreateProgram takes them.
    NamedHeaders headers;
    // The user's strings that the source's #line directives name ("axpb:op" and its text): the
    // error excerpt shows their lines where NVRTC's messages point into them.
    std::vector<std::pair<std::string, std::string>> user_texts;
};

struct CompileResult {
    std::vector<unsigned char> cubin;  // ELF for target.name(); empty when target.ptx_only
    std::string ptx;                   // always: for compute_<compiled>
    std::string log;                   // NVRTC's warnings, often empty
    ArchTarget target;
    std::vector<std::pair<std::string, std::string>> lowered_names;  // (expression, mangled name)
    double compile_ms = 0;             // wall time of the whole call
};

// The options kjit passes NVRTC for `request`, in order: "-std=c++17", "-default-device",
// "--gpu-architecture=sm_XX", then request.options. Machine-independent, so that a cache key can
// hash them: the toolkit include folder added for toolkit_headers is left out (the headers'
// content follows the toolkit, which nvrtc_version_key() identifies).
std::vector<std::string> compile_options(const CompileRequest& request);

// Compiles the program. Throws CompileError (message naming the program, NVRTC's log, the source
// lines around each line the log points at) when NVRTC rejects the source or the options;
// NvrtcError when an NVRTC call itself fails; NoDeviceError when there is no NVRTC. Safe to call
// from several threads at once (each call has its own NVRTC program).
CompileResult compile_cuda(const CompileRequest& request);

// NVRTC's version and build, for cache keys: "nvrtc-13.0+<build>", where <build> is the GNU build
// ID of the loaded libnvrtc ("bid:" + hex), or when it has none, an XXH3-64 hash of the file's
// bytes ("xxh3:" + hex). Computed once per library per process.
std::string nvrtc_version_key();

// Formats the lines of `source` around `lines` (1-based), each with its number, and a '>' marker
// on the lines themselves; separate groups are divided by "...". Used for CompileError.
std::string source_excerpt(std::string_view source, const std::vector<int>& lines, int context = 2);

// The line numbers that `log` reports for `program_name` ("axpb.cu(12): error: ..."), ascending.
std::vector<int> log_line_numbers(std::string_view log, std::string_view program_name);

}  // namespace kjit::jit::compile
