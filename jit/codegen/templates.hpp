// The CUDA templates (templates/*.cuh), embedded in the library at build time by
// cmake/embed_templates.cmake, so that generated source never depends on files installed next to
// the library or on the working directory.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace kjit::jit::codegen {

// The text of one template by file name ("complex.cuh"); throws kjit::Error naming the known
// templates when there is none of that name. The view stays valid for the life of the process.
std::string_view template_text(std::string_view name);

// The names of every embedded template, sorted.
const std::vector<std::string_view>& template_names();

namespace detail {

// One template as the generated file holds it: its text cut into parts (see embed_templates.cmake
// for why), joined on first use.
struct EmbeddedTemplate {
    std::string_view name;
    const std::string_view* parts;
    std::size_t part_count;
};

// Defined in the generated kjit_templates.cpp.
extern const EmbeddedTemplate embedded_templates[];
extern const std::size_t embedded_template_count;

}  // namespace detail
}  // namespace kjit::jit::codegen
