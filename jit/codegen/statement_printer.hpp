// Prints a checked kernel body back as CUDA C++: the user's statements as they wrote them, with
// explicit conversions only where CUDA's overloads for half, bfloat16 and complex would not follow
// C's rules. The code generator (jit/codegen/elementwise.hpp) wraps the result in kernels.
#pragma once

#include <sstream>
#include <string>

#include "jit/frontend/ast.hpp"
#include "jit/frontend/type_checker.hpp"

namespace kjit::jit::codegen {

// The name of the thread's state (loop_prep's variables) in generated code: a struct the body
// functions take by reference.
inline constexpr const char* kStateName = "_kjit_state";

// Where a body's statements came from. print_statements puts a `#line` directive before each
// statement, so that NVRTC's messages, compute-sanitizer and Nsight (with -lineinfo) name the
// user's string and line ("axpb:op(2)"), and after the body one that names the generated file
// again (numbered by number_line_directives, once the whole source is known).
struct BodyOrigin {
    std::string file;     // "<kernel>:<string>": "axpb:op", "sumsq:map"
    std::string program;  // the generated file's name in NVRTC's messages: "axpb.cu"
};

// The body's statements, `indent` levels of four spaces deep.
void print_statements(const frontend::CheckedKernel& kernel, const frontend::Body& body, int indent, std::ostringstream& out,
                      const BodyOrigin& origin);

// `source` with every directive print_statements left after a body numbered: the line after it is
// the generated file's line that it is. Code generators call it on the finished source.
std::string number_line_directives(std::string source);

// A primary expression converting the expression `e` of type `from` to `to` as C would (through
// CUDA's conversion functions for half, bfloat16 and complex).
std::string convert_value(const std::string& e, DType from, DType to);

// The CUDA spelling of a dtype in generated code ("float", "__half", "kjit::complex<float>").
std::string cuda_type(DType t);

}  // namespace kjit::jit::codegen
