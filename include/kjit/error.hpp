// kjit's exception hierarchy. Every error kjit reports derives from kjit::Error, so one catch
// clause covers them all; the subclasses say what kind of mistake it was and carry its details.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include <cuda.h>

namespace kjit {

// Base of every kjit exception.
class Error : public std::runtime_error {
public:
    explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// A kernel string that does not parse: `where` names the string ("op", "in", "out"...),
// line and column are 1-based, `snippet` is the source line with a caret under the column.
class ParseError : public Error {
public:
    ParseError(std::string where, int line, int column, std::string message, std::string snippet,
               std::string hint = {});
    const std::string& where() const noexcept { return where_; }
    int line() const noexcept { return line_; }
    int column() const noexcept { return column_; }
    const std::string& message() const noexcept { return message_; }
    const std::string& snippet() const noexcept { return snippet_; }
    const std::string& hint() const noexcept { return hint_; }

private:
    std::string where_;
    int line_;
    int column_;
    std::string message_;
    std::string snippet_;
    std::string hint_;
};

// A well-formed kernel or call whose types do not fit (wrong dtype, write to an input...).
class TypeError : public Error {
public:
    using Error::Error;
};

// Shapes that cannot be broadcast, reshaped or viewed as asked.
class ShapeError : public Error {
public:
    using Error::Error;
};

// NVRTC rejected the generated source: the log and the generated lines around the error.
class CompileError : public Error {
public:
    CompileError(std::string message, std::string log, std::string source_excerpt);
    const std::string& log() const noexcept { return log_; }
    const std::string& source_excerpt() const noexcept { return source_excerpt_; }

private:
    std::string log_;
    std::string source_excerpt_;
};

// A CUDA driver call failed. Keeps the raw status, the call's text and where it was made.
class CudaError : public Error {
public:
    CudaError(CUresult code, std::string call, std::string file, int line, std::string detail = {});
    CUresult code() const noexcept { return code_; }
    const std::string& call() const noexcept { return call_; }

private:
    CUresult code_;
    std::string call_;
};

// An allocation that does not fit: names the size asked and the free memory at the time.
class OutOfMemory : public CudaError {
public:
    OutOfMemory(CUresult code, std::string call, std::string file, int line, std::size_t requested,
                std::size_t free_bytes, std::size_t total_bytes);
    std::size_t requested_bytes() const noexcept { return requested_; }
    std::size_t free_bytes() const noexcept { return free_; }

private:
    std::size_t requested_;
    std::size_t free_;
};

// An NVRTC API call failed to run (as opposed to rejecting a program, which is CompileError).
class NvrtcError : public Error {
public:
    NvrtcError(int code, std::string call, std::string file, int line, std::string status_text);
    int code() const noexcept { return code_; }

private:
    int code_;
};

// No CUDA driver, no NVRTC, or no GPU: the message says which one is missing.
class NoDeviceError : public Error {
public:
    using Error::Error;
};

// The kernel cache cannot be used as asked (bad directory, damaged manifest...).
class CacheError : public Error {
public:
    using Error::Error;
};

// A file kjit reads or writes (.npy, manifests) is missing, unreadable or malformed.
class IoError : public Error {
public:
    using Error::Error;
};

}  // namespace kjit
