#include "jit/kernels/ops/arg_reduction.hpp"

#include <sstream>

#include <nlohmann/json.hpp>

#include "jit/kernels/reduction/calls.hpp"
#include "jit/codegen/reduction.hpp"
#include "jit/codegen/statement_printer.hpp"
#include "jit/codegen/templates.hpp"
#include "kjit/error.hpp"

namespace kjit::jit::kernels {
namespace {

// The smallest (largest) value of t as CUDA code: the identity of argmax (argmin), which any element
// beats or ties with a smaller index. Floats use infinities from their bit patterns (-minimal
// compiles have no <cfloat>).
std::string extreme(DType t, bool largest) {
    switch (t.id()) {
        case DType::bool_: return largest ? "true" : "false";
        case DType::int8: return largest ? "(signed char)127" : "(signed char)(-128)";
        case DType::int16: return largest ? "(short)32767" : "(short)(-32768)";
        case DType::int32: return largest ? "2147483647" : "(-2147483647 - 1)";
        case DType::int64: return largest ? "9223372036854775807LL" : "(-9223372036854775807LL - 1)";
        case DType::uint8: return largest ? "(unsigned char)255" : "(unsigned char)0";
        case DType::uint16: return largest ? "(unsigned short)65535" : "(unsigned short)0";
        case DType::uint32: return largest ? "4294967295U" : "0U";
        case DType::uint64: return largest ? "18446744073709551615ULL" : "0ULL";
        case DType::float16: return largest ? "__ushort_as_half((unsigned short)0x7C00U)" : "__ushort_as_half((unsigned short)0xFC00U)";
        case DType::bfloat16:
            return largest ? "__ushort_as_bfloat16((unsigned short)0x7F80U)" : "__ushort_as_bfloat16((unsigned short)0xFF80U)";
        case DType::float32: return largest ? "__int_as_float(0x7f800000)" : "__int_as_float((int)0xff800000U)";
        case DType::float64:
            return largest ? "__longlong_as_double(0x7ff0000000000000LL)" : "__longlong_as_double((long long)0xfff0000000000000ULL)";
        default: throw TypeError("no extreme value for " + std::string(t.name()));
    }
}

CustomReduction generate(const std::string& name, bool max, const TypeBinding& types) {
    const auto it = types.find("T");
    if (it == types.end()) throw TypeError("reduction '" + name + "': no type given for placeholder 'T'");
    const DType t = it->second;
    if (t.is_complex())
        throw TypeError(std::string(max ? "argmax" : "argmin") + " of " + std::string(t.name()) +
                        ": kjit does not order complex numbers here (NumPy compares real parts, then imaginary parts)");
    const std::string T = codegen::cuda_type(t);
    std::ostringstream s;
    s << "// kjit " << (max ? "argmax" : "argmin") << " of " << t.name() << "\n";
    if (t == DType::float16) s << "#define KJIT_USE_FLOAT16\n" << codegen::template_text("scalar_types.cuh") << "\n";
    if (t == DType::bfloat16) s << "#define KJIT_USE_BFLOAT16\n" << codegen::template_text("scalar_types.cuh") << "\n";
    s << codegen::template_text("elementwise.cuh") << "\n" << codegen::template_text("reduction.cuh") << "\n" << codegen::template_text("arg_reduction.cuh") << "\n";
    const std::string args = name + "_args", ops = name + "_ops";
    s << "struct " << args << " {\n    const " << T << "* x;\n    long long* y;\n};\n\n";
    s << "struct " << ops << " : kjit::ArgOps<" << T << ", " << (max ? "true" : "false") << ", " << args << "> {\n"
      << "    static __device__ __forceinline__ value_type identity() { return value_type{" << extreme(t, !max)
      << ", 9223372036854775807LL}; }\n};\n\n";
    CustomReduction c;
    c.generated.array_inputs = 1;
    c.generated.outputs = 1;
    c.generated.vector_width = static_cast<int>(t.itemsize() >= 16 ? 1 : 16 / t.itemsize());
    codegen::print_reduction_entry_points(name, args, ops, 1, c.generated, s);
    c.generated.source = s.str();
    c.reduce_type = "(" + std::string(t.name()) + ", int64) pair";
    c.reduce_itemsize = 16;  // ArgValue<T>: T (at most 8 bytes) then a long long
    c.has_identity = true;
    nlohmann::json e;
    e["kind"] = "builtin";
    e["name"] = name;
    e["types"] = nlohmann::json::array({nlohmann::json{{"T", std::string(t.name())}}});
    c.spec_json = e.dump();
    return c;
}

}  // namespace

const ReductionKernel& arg_reduction_kernel(bool max) {
    static const ReductionKernel argmax = ReductionKernelAccess::custom("T x", "int64 y", "kjit_argmax",
                                                                        [](const TypeBinding& b) { return generate("kjit_argmax", true, b); });
    static const ReductionKernel argmin = ReductionKernelAccess::custom("T x", "int64 y", "kjit_argmin",
                                                                        [](const TypeBinding& b) { return generate("kjit_argmin", false, b); });
    return max ? argmax : argmin;
}

const ReductionKernel& builtin_kernel_named(const std::string& name) {
    if (name == "kjit_argmax") return arg_reduction_kernel(true);
    if (name == "kjit_argmin") return arg_reduction_kernel(false);
    throw CacheError("no built-in kernel '" + name + "' (kjit has kjit_argmin and kjit_argmax)");
}

}  // namespace kjit::jit::kernels
