// kjit's exception hierarchy. Every error kjit reports derives from kjit::Error, so one catch
// clause covers them all; the subclasses say what kind of mistake it was and carry its details.
#pragma once

#include "kjit/export.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>


namespace kjit {

// Base of every kjit exception.
class KJIT_API Error : public std::runtime_error {
public:
    explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// A place in a kernel string and what is wrong there: `where` names the string ("op", "in",
// "out"...), line and column are 1-based, `snippet` is the source line with a caret under the
// column.
struct KJIT_API SourceLocation {
    std::string where;
    int line = 0;
    int column = 0;
    std::string message;
    std::string snippet;
    std::string hint;
};

// A kernel string that does not parse.
class KJIT_API ParseError : public Error {
public:
    ParseError(std::string where, int line, int column, std::string message, std::string snippet,
               std::string hint = {});
    const std::string& where() const noexcept { return at_.where; }
    int line() const noexcept { return at_.line; }
    int column() const noexcept { return at_.column; }
    const std::string& message() const noexcept { return at_.message; }
    const std::string& snippet() const noexcept { return at_.snippet; }
    const std::string& hint() const noexcept { return at_.hint; }
    const SourceLocation& location() const noexcept { return at_; }

private:
    SourceLocation at_;
};

// A well-formed kernel or call whose types do not fit (wrong dtype, write to an input...). A
// mistake inside a kernel string has its place, and its text is formatted as a ParseError's;
// location().line is 0 for the others (a call's arguments, a binding).
class KJIT_API TypeError : public Error {
public:
    using Error::Error;
    explicit TypeError(SourceLocation at);
    const SourceLocation& location() const noexcept { return at_; }

private:
    SourceLocation at_;
};

// Shapes that cannot be broadcast, reshaped or viewed as asked.
class KJIT_API ShapeError : public Error {
public:
    using Error::Error;
};

// NVRTC rejected the generated source: the log and the generated lines around the error.
class KJIT_API CompileError : public Error {
public:
    CompileError(std::string message, std::string log, std::string source_excerpt);
    const std::string& log() const noexcept { return log_; }
    const std::string& source_excerpt() const noexcept { return source_excerpt_; }

protected:
    // For a subclass whose log is another tool's: `what` is the whole text, the log already in it.
    struct WholeText {};
    CompileError(WholeText, std::string what, std::string log);

private:
    std::string log_;
    std::string source_excerpt_;
};

// nvJitLink could not link a module's device code (an undefined extern __device__ function, code
// for another architecture, an input it cannot read): the inputs by name, and nvJitLink's log.
// A CompileError, so that one catch covers everything that fails to build a module.
class KJIT_API LinkError : public CompileError {
public:
    LinkError(std::string message, std::string log);
};

// A CUDA driver call failed. Keeps the raw status (a CUresult: compare it with <cuda.h>'s
// CUDA_ERROR_* values), the call's text and where it was made.
class KJIT_API CudaError : public Error {
public:
    CudaError(int code, std::string call, std::string file, int line, std::string detail = {});
    int code() const noexcept { return code_; }
    const std::string& call() const noexcept { return call_; }

private:
    int code_;
    std::string call_;
};

// An allocation that does not fit: names the size asked and the free memory at the time.
class KJIT_API OutOfMemory : public CudaError {
public:
    OutOfMemory(int code, std::string call, std::string file, int line, std::size_t requested,
                std::size_t free_bytes, std::size_t total_bytes);
    std::size_t requested_bytes() const noexcept { return requested_; }
    std::size_t free_bytes() const noexcept { return free_; }

private:
    std::size_t requested_;
    std::size_t free_;
};

// An NVRTC API call failed to run (as opposed to rejecting a program, which is CompileError).
class KJIT_API NvrtcError : public Error {
public:
    NvrtcError(int code, std::string call, std::string file, int line, std::string status_text);
    int code() const noexcept { return code_; }

private:
    int code_;
};

// No CUDA driver, no NVRTC, or no GPU: the message says which one is missing.
class KJIT_API NoDeviceError : public Error {
public:
    using Error::Error;
};

// The kernel cache cannot be used as asked (bad directory, damaged manifest...).
class KJIT_API CacheError : public Error {
public:
    using Error::Error;
};

// A file kjit reads or writes (.npy, manifests) is missing, unreadable or malformed.
class KJIT_API IoError : public Error {
public:
    using Error::Error;
};

}  // namespace kjit
