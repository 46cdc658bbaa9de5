// The nodes of an array expression (include/kjit/expr.hpp): immutable, shared between the
// expressions built from them, each with its dtype and broadcast shape known when it is made (so
// that a mistake is reported by the operator that makes it).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kjit/array.hpp"
#include "kjit/expr.hpp"
#include "kjit/scalar.hpp"

namespace kjit::detail {

struct ExprNode {
    enum class Kind : unsigned char { array, scalar, op };
    Kind kind = Kind::op;
    DType dtype;        // the value's dtype (a weak scalar's is resolved by the operator that takes it)
    Shape shape;        // broadcast shape (a scalar's is ())
    Device device = Device::cpu();
    bool has_device = false;  // false for a scalar
    // array
    Array array;
    // scalar: the value, and for a weak one (a C++ number) only its kind counts
    Scalar value;
    bool weak = false;
    // op
    ExprOp op = ExprOp::add;
    DType compute;      // the dtype the operands are converted to before the operation
    int height = 0;     // operators on the longest path down to an array or number
    std::vector<std::shared_ptr<const ExprNode>> operands;
};

using ExprNodePtr = std::shared_ptr<const ExprNode>;

// How deep operators may nest in one expression: walking it (to flatten it, and to free it) recurses
// that deep, and no real expression comes near.
inline constexpr int kMaxExprHeight = 2048;

// The node of `op` on `operands` (1 to 3), with NumPy's result dtype and broadcast shape; throws
// TypeError or ShapeError naming the operator and its operands.
ExprNodePtr make_op(ExprOp op, std::vector<ExprNodePtr> operands, DType cast_to = DType::bool_);

// What an operator is called in messages and in the kernel language.
const char* op_name(ExprOp op);

}  // namespace kjit::detail
