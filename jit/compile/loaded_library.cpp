#include "jit/compile/loaded_library.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <cstring>
#include <string_view>

namespace kjit::jit::compile {
namespace {

struct BuildIdSearch {
    std::uintptr_t address;
    std::string hex;
};

// The NT_GNU_BUILD_ID (hex) among the PT_NOTE segments of an object mapped at `bias`; empty if none.
std::string build_id_in_notes(const ElfW(Phdr)* phdrs, int count, std::uintptr_t bias) {
    for (int i = 0; i < count; ++i) {
        const ElfW(Phdr)& ph = phdrs[i];
        if (ph.p_type != PT_NOTE) continue;
        const auto* p = reinterpret_cast<const unsigned char*>(bias + ph.p_vaddr);
        const unsigned char* end = p + ph.p_memsz;
        const auto align4 = [](std::size_t n) { return (n + 3) & ~std::size_t{3}; };
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
            const unsigned char* name = p + sizeof(ElfW(Nhdr));
            const unsigned char* desc = name + align4(note->n_namesz);
            if (desc + note->n_descsz > end) break;
            if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
                std::string_view(reinterpret_cast<const char*>(name), 3) == "GNU") {
                static constexpr char kDigits[] = "0123456789abcdef";
                std::string hex;
                hex.reserve(2 * note->n_descsz);
                for (std::size_t k = 0; k < note->n_descsz; ++k) {
                    hex += kDigits[desc[k] >> 4];
                    hex += kDigits[desc[k] & 15];
                }
                return hex;
            }
            p = desc + align4(note->n_descsz);
        }
    }
    return {};
}

// Finds the object whose PT_LOAD covers the address, and its build ID.
int find_build_id(dl_phdr_info* info, std::size_t, void* data) {
    auto* search = static_cast<BuildIdSearch*>(data);
    bool covers = false;
    for (int i = 0; i < info->dlpi_phnum && !covers; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        const std::uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
        covers = ph.p_type == PT_LOAD && search->address >= begin && search->address < begin + ph.p_memsz;
    }
    if (!covers) return 0;
    search->hex = build_id_in_notes(info->dlpi_phdr, info->dlpi_phnum, info->dlpi_addr);
    return 1;
}

}  // namespace

std::string loaded_file(const void* address) {
    Dl_info info{};
    if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return {};
    return info.dli_fname;
}

std::string elf_build_id(const void* address) {
    BuildIdSearch search{reinterpret_cast<std::uintptr_t>(address), {}};
    dl_iterate_phdr(find_build_id, &search);
    return search.hex;
}

}  // namespace kjit::jit::compile
