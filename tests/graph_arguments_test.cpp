// The address moving behind Graph::update with arrays (runtime/detail/graph_arguments.hpp), on
// argument bytes made here: which words move, by how much, and which are left alone.
#include "test_support.hpp"

#include <cstring>

#include "runtime/detail/graph_arguments.hpp"

using kjit::detail::AddressMove;

namespace {

std::vector<std::byte> words(std::initializer_list<CUdeviceptr> values) {
    std::vector<std::byte> bytes(values.size() * 8);
    std::size_t k = 0;
    for (const CUdeviceptr v : values) std::memcpy(bytes.data() + 8 * k++, &v, 8);
    return bytes;
}

CUdeviceptr word(const std::vector<std::byte>& bytes, std::size_t at) {
    CUdeviceptr v;
    std::memcpy(&v, bytes.data() + at, 8);
    return v;
}

}  // namespace

TEST_CASE("addresses inside a replaced array move by the arrays' distance; others stay", "[graph]") {
    const CUdeviceptr x = 0x7f0000001000, y = 0x7f0000100000;
    const AddressMove moves[] = {{x, x + 4000, y}};
    // A struct argument: a pointer to the array's start, one into it, one just past it, a size.
    std::vector<std::byte> arg = words({x, x + 3996, x + 4000, 1000});
    CHECK(kjit::detail::move_addresses(arg, 0, moves) == 2);
    CHECK(word(arg, 0) == y);
    CHECK(word(arg, 8) == y + 3996);
    CHECK(word(arg, 16) == x + 4000);  // one past the end: not the array's memory
    CHECK(word(arg, 24) == 1000);
    // Moved again, from the new place.
    const AddressMove back[] = {{y, y + 4000, x}};
    CHECK(kjit::detail::move_addresses(arg, 0, back) == 2);
    CHECK(word(arg, 0) == x);
}

TEST_CASE("with several arrays moved, each address goes by its own array's distance, and each array found is marked",
          "[graph]") {
    const CUdeviceptr a = 0x7f0000001000, b = 0x7f0000003000, c = 0x7f0000009000;
    // Sorted by address, as Graph::update gives them; c is not in the arguments.
    const AddressMove moves[] = {{a, a + 256, 0x7e0000000000}, {b, b + 4096, 0x7d0000000000}, {c, c + 8, 0x7c0000000000}};
    std::vector<std::byte> arg = words({b + 8, a, a + 256, b - 1, 0x7f0000000fff});
    std::vector<char> matched(3, 0);
    CHECK(kjit::detail::move_addresses(arg, 0, moves, &matched) == 2);
    CHECK(word(arg, 0) == 0x7d0000000008);
    CHECK(word(arg, 8) == 0x7e0000000000);
    CHECK(word(arg, 16) == a + 256);  // between the arrays: nobody's
    CHECK(word(arg, 24) == b - 1);
    CHECK(word(arg, 32) == 0x7f0000000fff);  // below the lowest
    CHECK(matched == std::vector<char>{1, 1, 0});
}

TEST_CASE("only words aligned in the parameter buffer are read as addresses", "[graph]") {
    const CUdeviceptr x = 0x7f0000001000, y = 0x7f0000100000;
    const AddressMove moves[] = {{x, x + 4000, y}};
    // An argument at offset 4 (after an int parameter): its aligned words start 4 bytes in.
    std::vector<std::byte> arg(20);
    std::memcpy(arg.data(), &x, 8);      // at parameter-buffer offset 4: not aligned, not an address
    std::memcpy(arg.data() + 12, &x, 8); // at offset 16: aligned
    CHECK(kjit::detail::move_addresses(arg, 4, moves) == 1);
    CHECK(word(arg, 0) == x);
    CHECK(word(arg, 12) == y);
    CHECK(kjit::detail::holds_address_in(arg, 4, y, y + 1));
    CHECK_FALSE(kjit::detail::holds_address_in(arg, 4, x, x + 1));
    // Too short for a word: nothing.
    std::vector<std::byte> small(4);
    CHECK(kjit::detail::move_addresses(small, 0, moves) == 0);
}

TEST_CASE("the nodes' recorded arguments say whether a range is still used", "[graph]") {
    kjit::detail::GraphArguments args;
    kjit::detail::KernelNodeArguments node;
    node.buffer = words({0x7f0000001000, 64});
    node.offsets = {0, 8};
    node.sizes = {8, 8};
    args.kernels.push_back(node);
    CHECK(kjit::detail::kernels_use(args, 0x7f0000001000, 0x7f0000002000));
    CHECK_FALSE(kjit::detail::kernels_use(args, 0x7f0000002000, 0x7f0000003000));
    CHECK_FALSE(kjit::detail::kernels_use(args, 0, 64));  // 64 is in the second parameter, which is [0, 64)'s end: not in
    CHECK(kjit::detail::kernels_use(args, 64, 65));       // a size equal to an address in range reads as one: documented
}
