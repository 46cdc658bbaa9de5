#include "jit/compile/included_files.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include <fmt/format.h>
#define XXH_INLINE_ALL  // header-only, as cache/cache_key.cpp uses it
#include <xxhash.h>

#include "kjit/error.hpp"

namespace kjit::jit::compile {
namespace {

// Beyond this many distinct header files the program is refused rather than keyed partly.
constexpr std::size_t kMaxFiles = 8192;

struct Follower {
    std::vector<std::string> dirs;  // the include folders, in order
    std::set<std::string> seen;     // files already keyed, by normal path
    std::string key;

    // `text`'s includes, looked for in `own_dir` (quoted names only) and then in dirs.
    void follow(std::string_view text, const std::filesystem::path& own_dir) {
        for (const IncludeDirective& d : include_directives(text)) {
            const std::filesystem::path name(d.name);
            if (name.is_absolute()) {
                visit(d.name, name);
                continue;
            }
            if (d.quoted) visit(d.name, own_dir / name);
            for (const std::string& dir : dirs) visit(d.name, std::filesystem::path(dir) / name);
        }
    }

    void visit(const std::string& include_name, const std::filesystem::path& candidate) {
        std::error_code ec;
        if (!std::filesystem::is_regular_file(candidate, ec)) return;
        const std::string normal = candidate.lexically_normal().string();
        if (!seen.insert(normal).second) return;
        if (seen.size() > kMaxFiles)
            throw Error(fmt::format("the program includes more than {} header files (through {}): too many to key "
                                    "its cache entry by their contents",
                                    kMaxFiles, normal));
        std::ifstream in(candidate, std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (!in.good() && !in.eof())
            throw IoError(fmt::format("cannot read the header {} (included as \"{}\")", normal, include_name));
        const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
        key.append(1, '\0').append("file").append(1, '\0').append(include_name).append(1, '\0');
        key += fmt::format("{:016x}{:016x}", h.high64, h.low64);
        follow(bytes, candidate.parent_path());
    }
};

bool is_space(char c) { return c == ' ' || c == '\t'; }

}  // namespace

std::vector<std::string> include_dirs_of(const std::vector<std::string>& options, std::vector<std::string>* pre_included) {
    std::vector<std::string> dirs;
    for (std::size_t k = 0; k < options.size(); ++k) {
        const std::string& o = options[k];
        const bool has_next = k + 1 < options.size();
        if (o == "-I" || o == "--include-path") {
            if (has_next) dirs.push_back(options[++k]);
        } else if (o.starts_with("--include-path=")) {
            dirs.push_back(o.substr(15));
        } else if (o.starts_with("-I")) {
            dirs.push_back(o.substr(2));
        } else if (o == "-include" || o == "--pre-include") {
            if (has_next && pre_included) pre_included->push_back(options[k + 1]);
            ++k;
        } else if (o.starts_with("--pre-include=")) {
            if (pre_included) pre_included->push_back(o.substr(14));
        }
    }
    return dirs;
}

std::vector<IncludeDirective> include_directives(std::string_view text) {
    std::vector<IncludeDirective> found;
    std::size_t begin = 0;
    while (begin < text.size()) {
        std::size_t end = text.find('\n', begin);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view line = text.substr(begin, end - begin);
        begin = end + 1;
        std::size_t i = 0;
        while (i < line.size() && is_space(line[i])) ++i;
        if (i >= line.size() || line[i] != '#') continue;
        ++i;
        while (i < line.size() && is_space(line[i])) ++i;
        if (line.substr(i, 7) != "include") continue;
        i += 7;
        while (i < line.size() && is_space(line[i])) ++i;
        if (i >= line.size() || (line[i] != '"' && line[i] != '<')) continue;  // #include_next, a macro
        const char close = line[i] == '"' ? '"' : '>';
        const std::size_t stop = line.find(close, i + 1);
        if (stop == std::string_view::npos || stop == i + 1) continue;
        found.push_back({std::string(line.substr(i + 1, stop - i - 1)), close == '"'});
    }
    return found;
}

std::string included_files_key(std::string_view source, const NamedHeaders& headers,
                               const std::vector<std::string>& options) {
    std::vector<std::string> pre_included;
    Follower f{include_dirs_of(options, &pre_included), {}, {}};
    for (const auto& [name, text] : headers)
        f.key.append(1, '\0').append("header").append(1, '\0').append(name).append(1, '\0').append(text);
    // NVRTC looks for the main program's quoted includes in the working folder, as for named headers'.
    const std::filesystem::path here(".");
    for (const std::string& file : pre_included) {
        f.visit(file, std::filesystem::path(file));
        for (const std::string& dir : f.dirs) f.visit(file, std::filesystem::path(dir) / file);
    }
    f.follow(source, here);
    for (const auto& [name, text] : headers) f.follow(text, here);
    return f.key;
}

}  // namespace kjit::jit::compile
