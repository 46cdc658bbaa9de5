#include "jit/elf_image.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <cstring>
#include <string_view>

namespace kjit::jit::detail {
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

// The ELF header of the object this code is linked into, where the linker maps it (GNU ld and lld
// define the symbol when the headers are in a loaded segment, as they are by default).
extern "C" const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));

namespace {
// The program headers of the object kjit is linked into and its load bias, from its own ELF
// header; false when they cannot be read so.
struct OwnHeaders {
    ElfW(Phdr) phdrs[64];
    int count = 0;
    std::uintptr_t bias = 0;
};
bool own_headers(OwnHeaders& out) {
    const ElfW(Ehdr)& ehdr = __ehdr_start;
    // The program headers follow the header in the mapped file, outside the object the symbol
    // names: copied out from their address, not indexed from the symbol (which would read past
    // the object that the language, and UBSan, see).
    const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(&ehdr);
    out.count = ehdr.e_phnum;
    if (ehdr.e_phentsize != sizeof(ElfW(Phdr)) || out.count > 64) return false;
    std::memcpy(out.phdrs, reinterpret_cast<const void*>(base + ehdr.e_phoff), sizeof(ElfW(Phdr)) * static_cast<std::size_t>(out.count));
    for (int i = 0; i < out.count; ++i) {
        // The segment that maps the file's first byte maps the header: the object's load bias.
        if (out.phdrs[i].p_type == PT_LOAD && out.phdrs[i].p_offset == 0) {
            out.bias = base - out.phdrs[i].p_vaddr;
            return true;
        }
    }
    return false;
}
}  // namespace

// Reads bytes of the mapped file that belong to no object of the program (between string
// literals, in padding): AddressSanitizer would rightly report those reads as outside any global,
// so it does not instrument this function. The bytes read are discarded.
__attribute__((no_sanitize_address)) std::size_t map_in_own_image() {
    OwnHeaders own;
    if (!own_headers(own)) return 0;
    const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    std::size_t pages = 0;
    for (int i = 0; i < own.count; ++i) {
        const ElfW(Phdr)& ph = own.phdrs[i];
        // Code and read-only data, as the file maps them (written segments were touched at load).
        if (ph.p_type != PT_LOAD || (ph.p_flags & PF_W) != 0 || ph.p_filesz == 0) continue;
        const std::uintptr_t begin = (own.bias + ph.p_vaddr) & ~(page - 1), end = own.bias + ph.p_vaddr + ph.p_filesz;
        for (std::uintptr_t at = begin; at < end; at += page, ++pages) (void)*reinterpret_cast<const volatile unsigned char*>(at);
    }
    return pages;
}

}  // namespace kjit::jit::detail
