// What a program's #include lines bring in, as text for its cache key: an edited header must be a
// cache miss, never a stale cubin. NVRTC does not report the files it opened, so kjit follows the
// #include directives itself, as jitify2 does.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kjit::jit::compile {

// Named in-memory headers, as NVRTC takes them: (include name, text).
using NamedHeaders = std::vector<std::pair<std::string, std::string>>;

// The include folders that NVRTC options name: "-I dir", "-Idir", "--include-path=dir",
// "--include-path dir", in order. Files that "-include"/"--pre-include" name come back in
// `pre_included`.
std::vector<std::string> include_dirs_of(const std::vector<std::string>& options,
                                         std::vector<std::string>* pre_included = nullptr);

// Text that changes whenever the content of a header the program may include changes: every named
// header (name and text), then for every file found on disk, its include name and an XXH3-128 of
// its bytes. Every `#include "x"` / `<x>` of the source, of the named headers and of the files
// found is followed, in every candidate place (the including file's folder for quotes, then each
// include folder), whatever the preprocessor conditions around it: a header that is not used adds
// a key change too many, never one too few. Names that are not found (the toolkit's headers, keyed
// by NVRTC's identity, or files absent here) add nothing. Not followed: an include through a macro
// (`#include HEADER`), which the note in include/kjit/raw_kernel.hpp documents.
std::string included_files_key(std::string_view source, const NamedHeaders& headers,
                               const std::vector<std::string>& options);

// The include names of `text`'s directives, in order: `#include <a.h>` and `# include "b/c.h"`
// give "a.h" and "b/c.h" (the second flagged as quoted). Exposed for tests.
struct IncludeDirective {
    std::string name;
    bool quoted = false;
};
std::vector<IncludeDirective> include_directives(std::string_view text);

}  // namespace kjit::jit::compile
