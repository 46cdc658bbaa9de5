// Parameter lists in CuPy's syntax (jit/frontend/params.hpp).
#include "test_support.hpp"

#include <string>

#include "jit/frontend/params.hpp"
#include "tests/params_as_text.hpp"
#include "kjit/error.hpp"

namespace {

using namespace kjit::jit::frontend;

std::vector<Param> params(std::string_view text, bool outputs = false) {
    return parse_params(SourceText{outputs ? "out" : "in", text}, outputs);
}

std::string params_error(std::string_view text) {
    try {
        params(text);
    } catch (const kjit::ParseError& e) {
        return e.what();
    }
    return {};
}

std::string lists_error(std::string_view in, std::string_view out) {
    try {
        parse_param_lists(SourceText{"in", in}, SourceText{"out", out});
    } catch (const kjit::ParseError& e) {
        return e.what();
    }
    return {};
}

}  // namespace

TEST_CASE("params: CuPy lists", "[params]") {
    const std::vector<Param> p = params("T x, raw T table, float32 alpha");
    REQUIRE(p.size() == 3);
    CHECK(p[0].name == "x");
    CHECK(p[0].type.spelling == "T");
    CHECK(p[0].is_placeholder);
    CHECK_FALSE(p[0].dtype);
    CHECK_FALSE(p[0].raw);
    CHECK_FALSE(p[0].is_output);
    CHECK(p[0].pos.column == 3);
    CHECK(p[0].type.pos.column == 1);
    CHECK(p[1].name == "table");
    CHECK(p[1].raw);
    CHECK(p[1].is_placeholder);
    CHECK(p[1].type.pos.column == 10);
    CHECK(p[1].pos.column == 12);
    CHECK(p[2].name == "alpha");
    CHECK_FALSE(p[2].is_placeholder);
    REQUIRE(p[2].dtype);
    CHECK(*p[2].dtype == kjit::DType::float32);
    CHECK(p[2].pos.offset == 26);
}

TEST_CASE("params: C and NumPy type names, multi-word types, outputs", "[params]") {
    const std::vector<Param> p =
        params("unsigned int k, long long m, unsigned long int z, double d, half h, bool b, complex128 c,\n"
               "  raw uint8 bytes, int8_t s, bfloat16 w",
               true);
    REQUIRE(p.size() == 10);
    const kjit::DType expected[] = {kjit::DType::uint32, kjit::DType::int64,   kjit::DType::uint64,
                                    kjit::DType::float64, kjit::DType::float16, kjit::DType::bool_,
                                    kjit::DType::complex128, kjit::DType::uint8, kjit::DType::int8,
                                    kjit::DType::bfloat16};
    for (std::size_t k = 0; k < p.size(); ++k) {
        INFO(p[k].name);
        REQUIRE(p[k].dtype);
        CHECK(*p[k].dtype == expected[k]);
        CHECK(p[k].is_output);
    }
    CHECK(p[0].type.spelling == "unsigned int");
    CHECK(p[2].type.spelling == "unsigned long");
    CHECK(p[7].raw);
    CHECK(p[7].pos.line == 2);
    CHECK(p[7].pos.column == 13);
}

TEST_CASE("params: empty lists", "[params]") {
    CHECK(params("").empty());
    CHECK(params("   \n\t").empty());
    CHECK(params("/* none */").empty());
}

TEST_CASE("params: parse_param_lists", "[params]") {
    const std::vector<Param> p = parse_param_lists(SourceText{"in", "T x, T y"}, SourceText{"out", "T z"});
    REQUIRE(p.size() == 3);
    CHECK(p[0].name == "x");
    CHECK_FALSE(p[0].is_output);
    CHECK(p[2].name == "z");
    CHECK(p[2].is_output);
    CHECK(parse_param_lists(SourceText{"in", ""}, SourceText{"out", ""}).empty());
    CHECK(lists_error("T x, T y", "T y") ==
          "out:1:3: error: 'y' is both an input and an output parameter\nT y\n  ^\n"
          "hint: the input is declared at in:1:8; give the output another name");
    CHECK(lists_error("T x", "T y, T y") == "out:1:8: error: duplicate parameter 'y'\nT y, T y\n       ^\n"
                                            "hint: 'y' is first declared at 1:3");
    CHECK(lists_error("T x,", "T y") == "in:1:5: error: expected a parameter after ','\nT x,\n    ^");
}

TEST_CASE("params: malformed lists", "[params]") {
    CHECK(params_error("T x, , T y") == "in:1:6: error: expected a parameter before ','\nT x, , T y\n     ^");
    CHECK(params_error(", T x") == "in:1:1: error: expected a parameter before ','\n, T x\n^");
    CHECK(params_error("T x,") == "in:1:5: error: expected a parameter after ','\nT x,\n    ^");
    CHECK(params_error("T x,  ") == "in:1:5: error: expected a parameter after ','\nT x,  \n    ^");
    CHECK(params_error("float32") == "in:1:8: error: expected a parameter name after 'float32'\nfloat32\n       ^");
    CHECK(params_error("float32 , T y") ==
          "in:1:8: error: expected a parameter name after 'float32'\nfloat32 , T y\n       ^");
    CHECK(params_error("unsigned int") ==
          "in:1:13: error: expected a parameter name after 'unsigned int'\nunsigned int\n            ^");
    CHECK(params_error("x, y") ==
          "in:1:1: error: parameter 'x' has no type\nx, y\n^\nhint: write the type before the name: 'T x' or 'float32 x'");
    CHECK(params_error("raw") == "in:1:4: error: expected a type after 'raw'\nraw\n   ^");
    CHECK(params_error("raw T") == "in:1:6: error: expected a parameter name after 'T'\nraw T\n     ^");
    CHECK(params_error("T 1") == "in:1:3: error: expected a parameter name after 'T', found '1'\nT 1\n  ^");
    CHECK(params_error("(T) x") ==
          "in:1:1: error: expected a parameter type, found '('\n(T) x\n^\n"
          "hint: types are NumPy names (float32, int64...), C names (float, unsigned int...) or a placeholder: one "
          "upper-case letter such as T");
    CHECK(params_error("float32 x y") ==
          "in:1:11: error: unexpected 'y' after parameter 'x'\nfloat32 x y\n          ^\nhint: separate parameters with ','");
    CHECK(params_error("float32 x;") == "in:1:10: error: unexpected ';' after parameter 'x'\nfloat32 x;\n         ^");
    CHECK(params_error("T x = 1") == "in:1:5: error: unexpected '=' after parameter 'x'\nT x = 1\n    ^");
    CHECK(params_error("T x[]") ==
          "in:1:4: error: unexpected '[' after parameter 'x'\nT x[]\n   ^\nhint: declare 'raw T x' and index it in the kernel");
    CHECK(params_error("float* p") ==
          "in:1:6: error: pointers are not allowed in parameter lists\nfloat* p\n     ^\n"
          "hint: declare 'raw float name' and index it in the kernel: name[k]");
    CHECK(params_error("float& p") == "in:1:6: error: references are not allowed in parameter lists\nfloat& p\n     ^");
    CHECK(params_error("const float x") ==
          "in:1:1: error: 'const' is not needed in parameter lists\nconst float x\n^\nhint: inputs are read-only; outputs are written");
    CHECK(params_error("int long char x") ==
          "in:1:1: error: 'int long char' is not a valid type\nint long char x\n^\n"
          "hint: C integer types are [unsigned] char, short, int, long, long long");
    CHECK(params_error("T x @") == "in:1:5: error: unexpected character '@' in kernel code\nT x @\n    ^");
}

TEST_CASE("params: unknown types", "[params]") {
    CHECK(params_error("flaot32 x") == "in:1:1: error: unknown type 'flaot32'\nflaot32 x\n^\nhint: did you mean 'float32'?");
    CHECK(params_error("T x, Float64 y") ==
          "in:1:6: error: unknown type 'Float64'\nT x, Float64 y\n     ^\nhint: did you mean 'float64'?");
    CHECK(params_error("doubel d") == "in:1:1: error: unknown type 'doubel'\ndoubel d\n^\nhint: did you mean 'double'?");
    CHECK(params_error("TT x") ==
          "in:1:1: error: unknown type 'TT'\nTT x\n^\nhint: a placeholder is one upper-case letter, such as T");
    CHECK(params_error("blorp x") ==
          "in:1:1: error: unknown type 'blorp'\nblorp x\n^\n"
          "hint: types are NumPy names (float32, int64...), C names (float, unsigned int...) or a placeholder: one "
          "upper-case letter such as T");
    CHECK(params_error("raw vec3 v") == "in:1:5: error: unknown type 'vec3'\nraw vec3 v\n    ^\n"
                                        "hint: types are NumPy names (float32, int64...), C names (float, unsigned "
                                        "int...) or a placeholder: one upper-case letter such as T");
}

TEST_CASE("params: reserved and duplicate names", "[params]") {
    CHECK(params_error("T i") == "in:1:3: error: 'i' is reserved: it is the element index\nT i\n  ^\nhint: choose another name");
    CHECK(params_error("T n") ==
          "in:1:3: error: 'n' is reserved: it is the number of elements\nT n\n  ^\nhint: choose another name");
    CHECK(params_error("T _x") ==
          "in:1:3: error: '_x' is reserved: names starting with '_' belong to kjit\nT _x\n  ^\nhint: choose another name");
    CHECK(params_error("T if") == "in:1:3: error: 'if' is a keyword and cannot name a parameter\nT if\n  ^");
    CHECK(params_error("T return") == "in:1:3: error: 'return' is a keyword and cannot name a parameter\nT return\n  ^");
    CHECK(params_error("T float") == "in:1:3: error: 'float' is a type name and cannot name a parameter\nT float\n  ^");
    CHECK(params_error("float32 T") ==
          "in:1:9: error: 'T' is a type name and cannot name a parameter\nfloat32 T\n        ^\n"
          "hint: a single upper-case letter names a type placeholder");
    CHECK(params_error("T raw x") ==
          "in:1:3: error: 'raw' cannot name a parameter\nT raw x\n  ^\nhint: 'raw' goes before the type: 'raw T x'");
    CHECK(params_error("T x, U x") ==
          "in:1:8: error: duplicate parameter 'x'\nT x, U x\n       ^\nhint: 'x' is first declared at 1:3");
    CHECK(params_error("T x,\n raw T x") ==
          "in:2:8: error: duplicate parameter 'x'\n raw T x\n       ^\nhint: 'x' is first declared at 1:3");
    // Names that merely contain reserved ones are fine.
    CHECK(params("T in_, T ni, T x_, T raw_, T iffy").size() == 5);
}

TEST_CASE("params: random input throws only ParseError", "[params]") {
    std::mt19937_64& rng = kjit::test::rng();
    INFO("seed " << kjit::test::seed());
    const char* vocabulary[] = {"T", "U", "x", "y", "raw", "float32", "unsigned", "int", "long", "i", "n", "_a",
                                ",", " ", "*", "[", "]", "flaot32", "const", "if", "1", ";"};
    for (int round = 0; round < 3000; ++round) {
        std::string in;
        std::string out;
        for (std::size_t k = rng() % 12; k > 0; --k) in += std::string(vocabulary[rng() % 22]) + " ";
        for (std::size_t k = rng() % 6; k > 0; --k) out += std::string(vocabulary[rng() % 22]) + " ";
        INFO("in: " << in << " out: " << out);
        try {
            parse_param_lists(SourceText{"in", in}, SourceText{"out", out});
        } catch (const kjit::ParseError&) {
        }
    }
}


TEST_CASE("params: simple lists read without the lexer as the full parser reads them", "[params]") {
    for (const char* text : {"T x, raw T table, float32 alpha", "", "  \n ", "T x", " T  x ,\n\tU y\n", "raw float64 t", "float x",
                             "unsigned int x", "T x,", ", T x", "T", "T x y", "T i", "T n", "T _x", "T raw", "T if", "T float32",
                             "T U", "T x, T x", "const T x", "T* x", "T x[3]", "T x /* c */, U y", "int8 x, bool b, complex64 z",
                             "raw raw x", "foo x", "T 1x", "T x,,T y", "half h, bfloat16 b", "T x\r\n, T y"}) {
        INFO(text);
        CHECK(kjit::test::params_as_text(text, true) == kjit::test::params_as_text(text, false));
    }
    // Random lists from the words, spaces and punctuation that lists are made of.
    const char* const pieces[] = {"T", "U", "x", "y", "z1", "i", "n", "_a", "raw", "float32", "float", "int", "unsigned", "long",
                                  "const", "auto", "void", "bool", "if", "int64", "complex128", ",", ",", " ", " ", "  ",
                                  "\n", "\t", "*", "&", "[2]", "/* c */", "// c\n", "1", "é"};
    std::uniform_int_distribution<std::size_t> piece(0, std::size(pieces) - 1), length(0, 12);
    for (int trial = 0; trial < 3000; ++trial) {
        std::string text;
        for (std::size_t k = length(kjit::test::rng()); k > 0; --k) {
            text += pieces[piece(kjit::test::rng())];
            if (piece(kjit::test::rng()) % 3 != 0) text += ' ';
        }
        INFO(text);
        REQUIRE(kjit::test::params_as_text(text, true) == kjit::test::params_as_text(text, false));
    }
    // Lists shaped as lists are, most of them valid, with the odd reserved name or C type.
    const char* const types[] = {"T", "U", "float32", "float", "double", "half", "int32", "uint8", "bool", "complex64", "unsigned int", "Q"};
    const char* const names[] = {"x", "y", "alpha", "t2", "out_", "i", "n", "_p", "raw", "T", "float32", "for", "x"};
    const char* const spaces[] = {"", " ", "  ", "\n", "\t", " \n "};
    std::uniform_int_distribution<std::size_t> type(0, std::size(types) - 1), name(0, std::size(names) - 1),
        space(0, std::size(spaces) - 1), count(1, 5);
    int accepted = 0;
    for (int trial = 0; trial < 3000; ++trial) {
        std::string text = spaces[space(kjit::test::rng())];
        for (std::size_t k = count(kjit::test::rng()); k > 0; --k) {
            if (piece(kjit::test::rng()) % 5 == 0) text += "raw ";
            text += std::string(types[type(kjit::test::rng())]) + spaces[space(kjit::test::rng())] + " " + names[name(kjit::test::rng())] +
                    spaces[space(kjit::test::rng())] + (k > 1 ? "," : "") + spaces[space(kjit::test::rng())];
        }
        INFO(text);
        const std::string read = kjit::test::params_as_text(text, true);
        REQUIRE(read == kjit::test::params_as_text(text, false));
        accepted += read.rfind("error", 0) != 0;
    }
    CHECK(accepted > 300);  // the comparison covered lists that parse, not only errors
}
