#include "kjit/error.hpp"

#include <string>

#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit {
namespace {

std::string parse_error_text(const std::string& where, int line, int column, const std::string& message,
                             const std::string& snippet, const std::string& hint) {
    std::string s = where + ":" + std::to_string(line) + ":" + std::to_string(column) + ": error: " + message;
    if (!snippet.empty()) s += "\n" + snippet;
    if (!hint.empty()) s += "\nhint: " + hint;
    return s;
}

std::string cuda_error_text(CUresult code, const std::string& call, const std::string& file, int line,
                            const std::string& detail) {
    std::string s = "CUDA error " + detail::cu_status_name(code) + " (" + detail::cu_status_text(code) + ") in " +
                    call + " at " + file + ":" + std::to_string(line);
    if (!detail.empty()) s += ": " + detail;
    return s;
}

std::string mib(std::size_t bytes) {
    return std::to_string(bytes / (1024 * 1024)) + " MiB";
}

std::string oom_detail(std::size_t requested, std::size_t free_bytes, std::size_t total_bytes) {
    return "cannot allocate " + std::to_string(requested) + " bytes (" + mib(requested) + ") on the device: " +
           std::to_string(free_bytes) + " bytes (" + mib(free_bytes) + ") free of " + mib(total_bytes);
}

}  // namespace

ParseError::ParseError(std::string where, int line, int column, std::string message, std::string snippet,
                       std::string hint)
    : Error(parse_error_text(where, line, column, message, snippet, hint)),
      at_{std::move(where), line, column, std::move(message), std::move(snippet), std::move(hint)} {}

TypeError::TypeError(SourceLocation at)
    : Error(parse_error_text(at.where, at.line, at.column, at.message, at.snippet, at.hint)), at_(std::move(at)) {}

CompileError::CompileError(std::string message, std::string log, std::string source_excerpt)
    : Error(message + (log.empty() ? "" : "\nNVRTC log:\n" + log) +
            (source_excerpt.empty() ? "" : "\ngenerated source:\n" + source_excerpt)),
      log_(std::move(log)),
      source_excerpt_(std::move(source_excerpt)) {}

CompileError::CompileError(WholeText, std::string what, std::string log)
    : Error(what), log_(std::move(log)) {}

LinkError::LinkError(std::string message, std::string log)
    : CompileError(WholeText{}, message + (log.empty() ? "" : "\nnvJitLink log:\n" + log), log) {}

CudaError::CudaError(int code, std::string call, std::string file, int line, std::string detail)
    : Error(cuda_error_text(static_cast<CUresult>(code), call, file, line, detail)), code_(code), call_(std::move(call)) {}

OutOfMemory::OutOfMemory(int code, std::string call, std::string file, int line, std::size_t requested,
                         std::size_t free_bytes, std::size_t total_bytes)
    : CudaError(code, std::move(call), std::move(file), line, oom_detail(requested, free_bytes, total_bytes)),
      requested_(requested),
      free_(free_bytes) {}

NvrtcError::NvrtcError(int code, std::string call, std::string file, int line, std::string status_text)
    : Error("NVRTC error " + std::to_string(code) + " (" + status_text + ") in " + call + " at " + file + ":" +
            std::to_string(line)),
      code_(code) {}

namespace detail {

namespace {
// "on cuda:1": the device whose context is current, where the driver can say (with several GPUs
// a failure must name the one that failed; asked only once something has).
std::string current_device_text() {
    Driver* d = try_driver();
    if (d == nullptr || d->cuCtxGetCurrent == nullptr || d->cuCtxGetDevice == nullptr) return {};
    CUcontext ctx = nullptr;
    CUdevice dev{};
    if (d->cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx == nullptr || d->cuCtxGetDevice(&dev) != CUDA_SUCCESS) return {};
    return "on cuda:" + std::to_string(static_cast<int>(dev));
}
}  // namespace

void throw_cuda_error(CUresult status, const char* call, const char* file, int line) {
    throw CudaError(status, call, file, line, current_device_text());
}

}  // namespace detail
}  // namespace kjit
