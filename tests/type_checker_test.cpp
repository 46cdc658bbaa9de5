// The type checker: C's conversions, what it accepts, and the exact diagnostic of each rejection.
#include "test_support.hpp"

#include "jit/frontend/conversions.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/error.hpp"

using kjit::DType;
using kjit::ElementwiseKernel;
using kjit::TypeBinding;

namespace {

const TypeBinding f32{{"T", DType::float32}};
const TypeBinding i32{{"T", DType::int32}};

// The full text of the error `check` throws, or "" when it throws none.
std::string diagnostic(const ElementwiseKernel& k, const TypeBinding& types = {}) {
    try {
        k.check(types);
    } catch (const kjit::Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("usual arithmetic conversions follow C, with CUDA's 16-bit floats and complex", "[typecheck]") {
    using kjit::jit::frontend::usual_arithmetic_conversion;
    auto uac = [](DType a, DType b) { return std::string(usual_arithmetic_conversion(a, b).name()); };
    CHECK(uac(DType::int8, DType::int8) == "int32");    // integer promotion, unlike NumPy
    CHECK(uac(DType::uint16, DType::bool_) == "int32");
    CHECK(uac(DType::int32, DType::uint32) == "uint32");
    CHECK(uac(DType::int64, DType::uint32) == "int64");
    CHECK(uac(DType::int64, DType::uint64) == "uint64");
    CHECK(uac(DType::int32, DType::float32) == "float32");
    CHECK(uac(DType::float32, DType::float64) == "float64");
    CHECK(uac(DType::float16, DType::float16) == "float16");
    CHECK(uac(DType::float16, DType::int32) == "float16");
    CHECK(uac(DType::bfloat16, DType::float16) == "float32");
    CHECK(uac(DType::bfloat16, DType::float64) == "float64");
    CHECK(uac(DType::complex64, DType::float64) == "complex128");
    CHECK(uac(DType::complex64, DType::int64) == "complex64");
    CHECK(uac(DType::complex128, DType::float32) == "complex128");
}

TEST_CASE("accepted kernels check with and without types", "[typecheck]") {
    const ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "axpb");
    CHECK(diagnostic(axpb) == "");
    CHECK(diagnostic(axpb, f32) == "");
    CHECK(axpb.placeholders() == std::vector<std::string>{"T"});
    const ElementwiseKernel loops("raw T table, int32 k", "float64 y",
                                  "double acc = 0;\n"
                                  "for (int j = 0; j < k; ++j) { if (j % 2) continue; acc += (double)table[(i + j) % n]; }\n"
                                  "while (acc > 100.0) { acc /= 2; if (acc < 1) break; }\n"
                                  "auto s = acc > 0 ? sqrt(acc) : -acc;\n"
                                  "y = static_cast<float64>(s) + T(1);",
                                  "loops");
    CHECK(diagnostic(loops, f32) == "");
    CHECK(diagnostic(loops, {{"T", DType::complex64}}).find("cannot cast complex64 to float64") != std::string::npos);
    const ElementwiseKernel bits("T a, T b", "T y", "y = (a & b) | (a ^ ~b) << 2 >> 1;", "bits");
    CHECK(diagnostic(bits, i32) == "");
    CHECK(diagnostic(bits, {{"T", DType::uint8}}) == "");
    const ElementwiseKernel cplx("T z, float32 s", "T y", "y = z * s + conj(z) * exp(z) - sqrt(z) / abs(z);", "cplx");
    CHECK(diagnostic(cplx, {{"T", DType::complex64}}) == "");
    CHECK(diagnostic(cplx, {{"T", DType::complex128}}) == "");
}

TEST_CASE("golden diagnostics of the type rules", "[typecheck]") {
    struct Case {
        const char* in;
        const char* out;
        const char* op;
        TypeBinding types;
        const char* expected;
    };
    const Case cases[] = {
        {"T x", "T y", "y = sqr(x);", f32,
         "op:1:5: error: unknown function 'sqr'\ny = sqr(x);\n    ^\nhint: did you mean 'sqrt'?"},
        {"T x", "T y", "y = xx + 1;", f32,
         "op:1:5: error: unknown name 'xx'\ny = xx + 1;\n    ^\nhint: did you mean 'x'?"},
        {"T x", "T y", "x = y;", f32,
         "op:1:1: error: cannot assign to input parameter 'x'\nx = y;\n^\nhint: inputs are read-only; declare it in "
         "the output list to write it"},
        {"T x", "T y", "y = x % 2;", f32,
         "op:1:7: error: % needs integer operands, not float32 and int32\ny = x % 2;\n      ^\nhint: for floats use "
         "fmod(a, b)"},
        {"T x", "T y", "y = x & 1;", f32,
         "op:1:7: error: bitwise & needs integer operands, not float32 and int32\ny = x & 1;\n      ^\nhint: bit "
         "operations on floats are not allowed; cast to an integer type first"},
        {"T x", "T y", "y = ~x;", {{"T", DType::float64}},
         "op:1:5: error: bitwise ~ needs an integer operand, not float64\ny = ~x;\n    ^\nhint: bit operations on "
         "floats are not allowed; cast to an integer type first"},
        {"T x, T t", "T y", "y = t[0];", f32,
         "op:1:6: error: 't' is not a raw parameter, so it cannot be indexed\ny = t[0];\n     ^\nhint: elementwise "
         "parameters are one element each; declare it as 'raw T t' to index the whole array"},
        {"raw T t, T x", "T y", "y = t[x];", f32,
         "op:1:7: error: an index must be an integer, not float32\ny = t[x];\n      ^\nhint: cast it, as in "
         "t[(long long)k]"},
        {"raw T t", "T y", "y = t;", f32,
         "op:1:5: error: raw parameter 't' must be indexed, as in t[i]\ny = t;\n    ^\nhint: raw parameters are whole "
         "arrays; elementwise parameters are one element each"},
        {"raw T t", "T y", "t[i] = 1; y = 0;", f32,
         "op:1:2: error: cannot assign to an element of input parameter 't'\nt[i] = 1; y = 0;\n ^\nhint: inputs are "
         "read-only; declare it '_non_const' (CuPy's modifier) or in the output list to write it"},
        {"T x", "T y", "i = 3; y = x;", f32,
         "op:1:1: error: cannot assign to 'i'\ni = 3; y = x;\n^\nhint: it is set by kjit for each element"},
        {"T x", "T y", "U t = x; y = t;", f32,
         "op:1:1: error: type placeholder 'U' is not bound: no parameter has type U\nU t = x; y = t;\n^\nhint: use a "
         "concrete type such as float32, or a placeholder of the parameters"},
        {"T x", "T y", "float x = 1; y = x;", f32,
         "op:1:7: error: 'x' is already a parameter\nfloat x = 1; y = x;\n      ^\nhint: choose another name for the "
         "local"},
        {"T x", "T y", "break;", f32, "op:1:1: error: break outside a loop\nbreak;\n^"},
        {"T z", "float32 y", "y = z;", {{"T", DType::complex64}},
         "op:1:5: error: cannot convert complex64 to float32 in an assignment\ny = z;\n    ^\nhint: take real(z), "
         "imag(z) or abs(z) first"},
        {"T z", "T y", "y = z < z ? z : z;", {{"T", DType::complex128}},
         "op:1:7: error: complex numbers have no order: < cannot compare complex128 and complex128\ny = z < z ? z : "
         "z;\n      ^\nhint: compare abs(z) or real(z)"},
        {"T x", "T y", "y = pow(x);", f32, "op:1:5: error: pow() takes 2 arguments, not 1\ny = pow(x);\n    ^"},
        {"T x", "T y", "y = erf(x);", {{"T", DType::complex64}},
         "op:1:5: error: erf() is not defined for complex arguments\ny = erf(x);\n    ^"},
        {"T x", "T y", "const float c = 1; c = 2; y = x;", f32,
         "op:1:20: error: cannot assign to const local 'c'\nconst float c = 1; c = 2; y = x;\n                   ^"},
        {"T x", "T y", "y = x(1);", f32,
         "op:1:5: error: 'x' is a parameter, not a function\ny = x(1);\n    ^"},
        {"T x, T exp", "T y", "y = exp(x);", f32,
         "op:1:5: error: 'exp' is a parameter, not a function\ny = exp(x);\n    ^\nhint: rename the parameter to call "
         "exp()"},
        {"T x", "T y", "T sin = x; y = sin(x);", f32,
         "op:1:16: error: 'sin' is a local variable, not a function\nT sin = x; y = sin(x);\n               ^\nhint: "
         "rename the variable to call sin()"},
        {"T x", "T y", "y = 99999999999999999999;", f32, nullptr},  // the lexer's error; checked elsewhere
        {"T x", "T y", "y = 18446744073709551615;", f32,
         "op:1:5: error: integer literal 18446744073709551615 is too large for a signed 64-bit integer\ny = "
         "18446744073709551615;\n    ^\nhint: add a u suffix for an unsigned 64-bit value"},
    };
    for (const Case& c : cases) {
        INFO(c.op);
        const std::string got = diagnostic(ElementwiseKernel(c.in, c.out, c.op, "k"), c.types);
        CHECK_FALSE(got.empty());
        if (c.expected != nullptr) CHECK(got == c.expected);
    }
}

TEST_CASE("type errors are TypeError, syntax errors ParseError", "[typecheck]") {
    CHECK_THROWS_AS(ElementwiseKernel("T x", "T y", "y = x % 2;").check(f32), kjit::TypeError);
    CHECK_THROWS_AS(ElementwiseKernel("T x", "T y", "y = x +;").check(f32), kjit::ParseError);
    // The generic check accepts what only a binding can reject; the binding then rejects it.
    const ElementwiseKernel mod("T x", "T y", "y = x % 2;");
    CHECK_NOTHROW(mod.check());
    CHECK_NOTHROW(mod.check(i32));
    CHECK_THROWS_AS(mod.check(f32), kjit::TypeError);
}

TEST_CASE("a type error in a kernel string says where, as a parse error does", "[typecheck]") {
    try {
        ElementwiseKernel("T x", "T y", "y = x;\ny = x % 2.5;").check(f32);
        FAIL("no TypeError");
    } catch (const kjit::TypeError& e) {
        const kjit::SourceLocation& at = e.location();
        CHECK(at.where == "op");
        CHECK(at.line == 2);
        CHECK(at.column == 7);
        CHECK(at.message == "% needs integer operands, not float32 and float64");
        CHECK(at.snippet == "y = x % 2.5;\n      ^");
        CHECK(at.hint == "for floats use fmod(a, b)");
        CHECK(std::string(e.what()).rfind("op:2:7: error: % needs integer operands", 0) == 0);
    }
    // A binding that leaves a placeholder unbound points at the parameter that needs it.
    try {
        ElementwiseKernel("T x", "T y", "y = x;").check({{"U", DType::float32}});
        FAIL("no TypeError");
    } catch (const kjit::TypeError& e) {
        CHECK(e.location().where == "in");
        CHECK(e.location().line == 1);
        CHECK(e.location().column == 1);
    }
    // A type mistake made with no kernel string has no place.
    try {
        (void)DType::parse("floaty");
        FAIL("no TypeError");
    } catch (const kjit::TypeError& e) {
        CHECK(e.location().line == 0);
        CHECK(e.location().where.empty());
    }
}

TEST_CASE("bindings: missing, unknown and malformed", "[typecheck]") {
    const ElementwiseKernel k("T x, U s", "T y", "y = x * s;", "k");
    CHECK(diagnostic(k, {{"T", DType::float32}}) ==
          "in:1:6: error: no type given for placeholder 'U' of parameter 's'\nT x, U s\n     ^\nhint: bind it, as in "
          "--types U=float32");
    CHECK(diagnostic(k, {{"T", DType::float32}, {"U", DType::int8}, {"V", DType::int8}}) ==
          "'V' is not a type placeholder of this kernel (its placeholders: T, U)");
    CHECK(kjit::parse_type_binding(" T = float32 , U=int64") == TypeBinding{{"T", DType::float32}, {"U", DType::int64}});
    CHECK_THROWS_WITH(kjit::parse_type_binding("T=float32,T=int8"), Catch::Matchers::Contains("gives 'T' twice"));
    CHECK_THROWS_WITH(kjit::parse_type_binding("T"), Catch::Matchers::Contains("must look like T=float32"));
    CHECK_THROWS_WITH(kjit::parse_type_binding("TT=int8"), Catch::Matchers::Contains("not a placeholder"));
    CHECK_THROWS_AS(kjit::parse_type_binding("T=float31"), kjit::TypeError);
}

TEST_CASE("kernel names must be C identifiers", "[typecheck]") {
    CHECK(diagnostic(ElementwiseKernel("T x", "T y", "y = x;", "my-kernel")) ==
          "name:1:3: error: a kernel name must be a C identifier (letters, digits and '_', not starting with a "
          "digit)\nmy-kernel\n  ^");
    CHECK_THROWS_AS(ElementwiseKernel("T x", "T y", "y = x;", "_k").check(), kjit::ParseError);
    CHECK_THROWS_AS(ElementwiseKernel("T x", "T y", "y = x;", "").check(), kjit::ParseError);
}

TEST_CASE("preamble functions become callable", "[typecheck]") {
    kjit::KernelOptions opts;
    opts.preamble = "#include <cuda_fp16.h>\n// helpers\n__device__ float squash(float v) { return v / (1.0f + fabsf(v)); }\n"
                    "template <typename X> __device__ X twice(X v) { return v + v; }\n";
    const ElementwiseKernel k("T x", "T y", "y = squash(x) + twice(x);", "k", opts);
    CHECK(diagnostic(k, f32) == "");
    const ElementwiseKernel missing("T x", "T y", "y = squish(x);", "k", opts);
    CHECK(diagnostic(missing, f32).find("did you mean 'squash'?") != std::string::npos);
}
