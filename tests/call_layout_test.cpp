// The iteration space of a call: broadcasting, dropping and merging dimensions, following the
// output's memory order, overlap tests and the choice of kernel variant. No GPU needed.
#include "test_support.hpp"

#include "runtime/detail/call_layout.hpp"

using namespace kjit::detail;

namespace {

struct View {
    std::vector<std::int64_t> shape, strides;
    char* data;
    int itemsize = 4;
    OperandView operand() const { return {data, itemsize, static_cast<int>(shape.size()), shape.data(), strides.data()}; }
};

CallLayout lay_out(const std::vector<View>& views) {
    std::vector<OperandView> ops;
    for (const View& v : views) ops.push_back(v.operand());
    CallLayout l;
    REQUIRE(broadcast_operands(ops.data(), static_cast<int>(ops.size()), l));
    return l;
}

alignas(64) char memory[1 << 16];

}  // namespace

TEST_CASE("operands broadcast by NumPy's rules with zero strides", "[layout]") {
    // (3, 1) against (4,) against (): (3, 4).
    const CallLayout l = lay_out({{{3, 1}, {1, 1}, memory}, {{4}, {1}, memory + 64}, {{}, {}, memory + 128}});
    REQUIRE(l.ndim == 2);
    CHECK(l.shape[0] == 3);
    CHECK(l.shape[1] == 4);
    CHECK(l.size == 12);
    CHECK(l.strides[0][0] == 1);
    CHECK(l.strides[0][1] == 0);
    CHECK(l.strides[1][0] == 0);
    CHECK(l.strides[1][1] == 1);
    CHECK(l.strides[2][0] == 0);
    CHECK(l.strides[2][1] == 0);

    const View a{{3}, {1}, memory}, b{{4}, {1}, memory};
    const OperandView ops[] = {a.operand(), b.operand()};
    CallLayout bad;
    CHECK_FALSE(broadcast_operands(ops, 2, bad));
    // Size 0 broadcasts with 1 and stays 0.
    const CallLayout empty = lay_out({{{0, 3}, {3, 1}, memory}, {{1, 3}, {3, 1}, memory}});
    CHECK(empty.size == 0);
}

TEST_CASE("simplify drops extent-1 dimensions and merges contiguous ones", "[layout]") {
    // A C-contiguous (2, 1, 3, 4) with a same-shaped output: one dimension of 24.
    CallLayout l = lay_out({{{2, 1, 3, 4}, {12, 12, 4, 1}, memory}, {{2, 1, 3, 4}, {12, 12, 4, 1}, memory + 4096}});
    simplify(l, false, 1);
    REQUIRE(l.ndim == 1);
    CHECK(l.shape[0] == 24);
    CHECK(l.strides[0][0] == 1);

    // A row broadcast (3, 4) + (4,): two dimensions stay (the row has stride 0 then 1).
    CallLayout r = lay_out({{{3, 4}, {4, 1}, memory}, {{4}, {1}, memory + 4096}, {{3, 4}, {4, 1}, memory + 8192}});
    simplify(r, true, 2);
    REQUIRE(r.ndim == 2);
    CHECK(r.strides[1][0] == 0);
    CHECK(r.strides[1][1] == 1);

    // Every other column of an (8, 8) is one run of stride 2; the first three of them are not.
    CallLayout every = lay_out({{{8, 4}, {8, 2}, memory}, {{8, 4}, {4, 1}, memory + 4096}});
    simplify(every, true, 1);
    CHECK(every.ndim == 1);
    CHECK(every.strides[0][0] == 2);
    CallLayout s = lay_out({{{8, 3}, {8, 2}, memory}, {{8, 3}, {3, 1}, memory + 4096}});
    simplify(s, true, 1);
    CHECK(s.ndim == 2);
}

TEST_CASE("with reordering allowed, transposed and reversed operations become contiguous", "[layout]") {
    // Both operands F-ordered (4, 5): after sorting by the output's strides, one run of 20.
    CallLayout f = lay_out({{{4, 5}, {1, 4}, memory}, {{4, 5}, {1, 4}, memory + 4096}});
    simplify(f, true, 1);
    REQUIRE(f.ndim == 1);
    CHECK(f.shape[0] == 20);
    CHECK(f.strides[0][0] == 1);
    CHECK(f.strides[1][0] == 1);
    // Not allowed (the kernel reads `i`): the order stays C order.
    CallLayout kept = lay_out({{{4, 5}, {1, 4}, memory}, {{4, 5}, {1, 4}, memory + 4096}});
    simplify(kept, false, 1);
    CHECK(kept.ndim == 2);

    // Both reversed: the base pointers move to the last element and the strides turn positive.
    char* x = memory + 400;
    char* y = memory + 4096 + 400;
    CallLayout rev = lay_out({{{10}, {-1}, x}, {{10}, {-1}, y}});
    simplify(rev, true, 1);
    REQUIRE(rev.ndim == 1);
    CHECK(rev.strides[0][0] == 1);
    CHECK(rev.strides[1][0] == 1);
    CHECK(rev.data[0] == x - 9 * 4);
    CHECK(rev.data[1] == y - 9 * 4);
}

TEST_CASE("byte ranges, same elements and repeated elements", "[layout]") {
    char *lo, *hi;
    const View reversed{{10}, {-1}, memory + 400};
    byte_range(reversed.operand(), lo, hi);
    CHECK(lo == memory + 400 - 36);
    CHECK(hi == memory + 404);
    const View empty{{0, 5}, {5, 1}, memory};
    byte_range(empty.operand(), lo, hi);
    CHECK(lo == hi);

    const CallLayout same = lay_out({{{3, 4}, {4, 1}, memory}, {{3, 4}, {4, 1}, memory}});
    CHECK(same_elements(same, 0, 1));
    const CallLayout shifted = lay_out({{{3, 4}, {4, 1}, memory}, {{3, 4}, {4, 1}, memory + 4}});
    CHECK_FALSE(same_elements(shifted, 0, 1));
    const CallLayout transposed = lay_out({{{4, 4}, {4, 1}, memory}, {{4, 4}, {1, 4}, memory}});
    CHECK_FALSE(same_elements(transposed, 0, 1));
}

TEST_CASE("the variant follows layout, alignment and size", "[layout]") {
    VariantNeeds needs;
    needs.vector_width = 4;
    needs.has_rows = true;
    needs.has_tiled = true;
    needs.output_mask = 0b10;  // operand 1 is the output

    // Few elements, contiguous: the small variant, aligned or not.
    CallLayout few = lay_out({{{1000}, {1}, memory}, {{1000}, {1}, memory + 8192}});
    simplify(few, true, 1);
    CHECK(choose_variant(few, needs).variant == Variant::small);
    CallLayout few_off = lay_out({{{1000}, {1}, memory + 4}, {{1000}, {1}, memory + 8192}});
    simplify(few_off, true, 1);
    CHECK(choose_variant(few_off, needs).variant == Variant::small);
    CallLayout edge = lay_out({{{kSmallCallElements}, {1}, memory}, {{kSmallCallElements}, {1}, memory + 8192}});
    simplify(edge, true, 1);
    CHECK(choose_variant(edge, needs).variant == Variant::small);

    // More: vector loads when aligned.
    CallLayout c = lay_out({{{kSmallCallElements + 1}, {1}, memory}, {{kSmallCallElements + 1}, {1}, memory + 8192}});
    simplify(c, true, 1);
    CHECK(choose_variant(c, needs).variant == Variant::contiguous);
    CHECK_FALSE(choose_variant(c, needs).index64);

    // Misaligned by one float: no vector loads.
    CallLayout m = lay_out({{{100000}, {1}, memory + 4}, {{100000}, {1}, memory + 8192}});
    simplify(m, true, 1);
    CHECK(choose_variant(m, needs).variant == Variant::strided);

    // Row broadcast: rows when the row length is a multiple of the vector width.
    CallLayout r = lay_out({{{64, 128}, {128, 1}, memory}, {{128}, {1}, memory}, {{64, 128}, {128, 1}, memory + 32768}});
    needs.output_mask = 0b100;
    simplify(r, true, 2);
    CHECK(choose_variant(r, needs).variant == Variant::rows);
    CallLayout odd = lay_out({{{64, 127}, {127, 1}, memory}, {{127}, {1}, memory}, {{64, 127}, {127, 1}, memory + 32768}});
    simplify(odd, true, 2);
    CHECK(choose_variant(odd, needs).variant == Variant::strided);

    // A transposed input against a C-ordered output: tiled.
    CallLayout t = lay_out({{{64, 128}, {1, 64}, memory}, {{128}, {1}, memory}, {{64, 128}, {128, 1}, memory + 32768}});
    simplify(t, false, 2);
    CHECK(choose_variant(t, needs).variant == Variant::tiled);
    needs.has_tiled = false;
    CHECK(choose_variant(t, needs).variant == Variant::strided);

    // Beyond 2^31 elements: 64-bit indices.
    CallLayout big;
    big.ndim = 1;
    big.shape[0] = (std::int64_t{1} << 31) + 8;
    big.size = big.shape[0];
    big.operands = 2;
    big.data[0] = memory;
    big.data[1] = memory + 4096;
    big.itemsize[0] = big.itemsize[1] = 1;
    big.strides[0][0] = big.strides[1][0] = 1;
    needs.output_mask = 0b10;
    CHECK_FALSE(fits_int32(big));
    const VariantChoice b = choose_variant(big, needs);
    CHECK(b.variant == Variant::contiguous);
    CHECK(b.index64);
}
