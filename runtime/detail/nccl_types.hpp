// kjit's dtypes and reductions as NCCL's: which ncclDataType_t and how many of them an array is,
// and which dtypes or reductions NCCL cannot do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kjit/dtype.hpp"
#include "kjit/nccl.hpp"
#include "runtime/detail/nccl.hpp"

namespace kjit::detail {

// `count` kjit elements as NCCL sees them.
struct NcclElements {
    NcclDataType type = kNcclUint8;
    std::size_t count = 0;
};

// For reducing `count` elements of `dtype` with `op` (all_reduce, reduce_scatter), with an NCCL of
// version `nccl_version`. complex64 and complex128 reduce as (real, imaginary) float pairs for
// sum and avg; everything NCCL cannot reduce is a TypeError starting with `where`.
NcclElements nccl_reduction_elements(DType dtype, std::int64_t count, nccl::Op op, int nccl_version,
                                     const std::string& where);
// For moving `count` elements of `dtype` (all_gather, broadcast): NCCL's own type where it has
// one, else bytes (bool, int16, uint16, complex; bfloat16 before NCCL 2.10). Never throws.
NcclElements nccl_copy_elements(DType dtype, std::int64_t count, int nccl_version) noexcept;
// ncclRedOp_t for `op`; throws Error starting with `where` for avg before NCCL 2.10.
NcclRedOp nccl_red_op(nccl::Op op, int nccl_version, const std::string& where);

}  // namespace kjit::detail
