#include "jit/codegen/args_struct.hpp"

namespace kjit::jit::codegen {

void print_args_struct(std::ostringstream& s, const std::string& type, const std::vector<ArgsField>& fields, bool with_n) {
    std::vector<kjit::detail::ArgField> kinds;
    std::vector<DType> types;
    s << "struct " << type << " {\n";
    for (const ArgsField& f : fields) {
        s << "    " << f.declaration << " " << f.name << ";\n";
        kinds.push_back(f.field);
        types.push_back(f.type);
    }
    if (with_n) s << "    long long n;\n";
    s << "};\n";
    // The offsets the launcher writes at (runtime/detail/kernel_args.cpp).
    const kjit::detail::ArgsLayout layout = kjit::detail::args_layout(kinds, types);
    auto check = [&](const std::string& field, std::uint32_t offset) {
        s << "static_assert(KJIT_OFFSETOF(" << type << ", " << field << ") == " << offset << ", \"kjit writes " << type << "::"
          << field << " at byte " << offset << "\");\n";
    };
    for (std::size_t k = 0; k < fields.size(); ++k) check(fields[k].name, layout.slots[k].offset);
    if (with_n) {
        check("n", layout.n_offset);
        s << "static_assert(sizeof(" << type << ") == " << layout.size << ", \"kjit passes " << layout.size << " bytes of " << type
          << "\");\n";
    } else {
        s << "static_assert(sizeof(" << type << ") <= " << layout.size << ", \"kjit passes " << layout.size << " bytes of " << type
          << "\");\n";
    }
    s << "\n";
}

}  // namespace kjit::jit::codegen
