#include "runtime/detail/kernel_args.hpp"

namespace kjit::detail {
namespace {

std::uint32_t align_up(std::uint32_t x, std::uint32_t a) { return (x + a - 1) / a * a; }

}  // namespace

ArgsLayout args_layout(const std::vector<ArgField>& fields, const std::vector<DType>& types) {
    ArgsLayout l;
    std::uint32_t offset = 0, max_align = 8;  // `long long n` is always there
    for (std::size_t k = 0; k < fields.size(); ++k) {
        std::uint32_t size = 8, align = 8;
        if (fields[k] == ArgField::raw) size = sizeof(RawField);
        if (fields[k] == ArgField::value) size = align = static_cast<std::uint32_t>(types[k].itemsize());
        offset = align_up(offset, align);
        l.slots.push_back({fields[k], offset});
        offset += size;
        if (align > max_align) max_align = align;
    }
    l.n_offset = align_up(offset, 8);
    l.size = align_up(l.n_offset + 8, max_align);
    return l;
}

}  // namespace kjit::detail
