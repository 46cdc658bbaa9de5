// The header dict of a .npy file, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }:
// parsed when reading and written when saving. The framing around it (magic, version, length,
// padding) and the data belong to runtime/npy.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kjit/array.hpp"
#include "kjit/dtype.hpp"

namespace kjit::detail {

struct NpyHeader {
    DType dtype;
    bool big_endian = false;  // elements must be byte-swapped after reading
    bool fortran_order = false;
    Shape shape;
    std::uint64_t data_bytes = 0;  // itemsize * number of elements, checked against overflow
};

// Throws IoError "cannot read .npy file '<path>': <problem>", the form of every read error.
[[noreturn]] void fail_npy_read(const std::string& path, const std::string& problem);

// Parses and checks the header text (without the preamble; trailing padding and '\n' allowed).
// Throws IoError naming `path` for a malformed header, an unsupported dtype or a bad shape.
NpyHeader parse_npy_header(std::string_view text, const std::string& path);

// The header dict NumPy would write for these, without padding or the final '\n'.
std::string npy_header_text(DType dtype, bool fortran_order, const Shape& shape);

}  // namespace kjit::detail
