// The iteration space of an elementwise call: every array operand's strides over the broadcast
// shape, then simplified (extent-1 dimensions dropped, dimensions reordered to follow the first
// output's memory order when the kernel does not depend on the visiting order, adjacent
// dimensions merged) and the kernel variant chosen. Fixed-size storage: a warm call allocates
// nothing here.
#pragma once

#include <cstdint>

#include "templates/launch_layout.cuh"

namespace kjit::detail {

constexpr int kMaxCallDims = 32;                // dimensions of a call's arrays
constexpr int kMaxKernelDims = kjit::max_dims;  // dimensions the strided kernels take
constexpr int kMaxCallOperands = 32;            // array operands of one call

// One array operand as an n-d view: element strides, base at element (0, ..., 0).
struct OperandView {
    char* data;
    int itemsize;
    int ndim;
    const std::int64_t* shape;
    const std::int64_t* strides;
};

// The arrays hold meaningful values for the first `ndim` dimensions and `operands` operands
// only, which broadcast_operands writes; they are left uninitialised otherwise (8.5 KB: zeroing
// them cost every reduction call, and a first call's page touches).
struct CallLayout {
    int ndim = 0;
    std::int64_t shape[kMaxCallDims];
    int operands = 0;
    char* data[kMaxCallOperands];
    int itemsize[kMaxCallOperands];
    std::int64_t strides[kMaxCallOperands][kMaxCallDims];
    std::int64_t size = 1;  // elements
};

// Broadcasts the operands (NumPy's rules) into `layout`. Returns false when the shapes do not
// broadcast; the caller reports them (it has the names).
bool broadcast_operands(const OperandView* operands, int count, CallLayout& layout);

// Drops extent-1 dimensions and merges dimensions that every operand walks as one. When
// `may_reorder`, first flips dimensions the operand `reference` walks backwards and sorts the
// dimensions by its strides (largest first), so that a transposed or reversed operation over
// contiguous arrays becomes one contiguous run; base pointers are moved to match.
void simplify(CallLayout& layout, bool may_reorder, int reference);

// The smallest and one past the largest byte an operand's view touches (over its own shape).
void byte_range(const OperandView& v, char*& lo, char*& hi);

// Whether two operands of the broadcast layout address exactly the same element at every index
// (an in-place update), judged before simplify().
bool same_elements(const CallLayout& layout, int a, int b);

// Whether every offset an operand reaches, and the element count, fit 32-bit index arithmetic.
bool fits_int32(const CallLayout& layout);

enum class Variant { contiguous, rows, tiled, strided, small };

// Calls of at most this many elements over contiguous operands take the small variant: one
// element per thread, no vectors. At this size a kernel lasts as long as its launch (about 2 us
// on the H200) whatever its loads, and the small variant compiles in under half the time of the
// contiguous one, which is what the first call of a kernel on small arrays waits for.
inline constexpr std::int64_t kSmallCallElements = std::int64_t{1} << 16;

struct VariantChoice {
    Variant variant = Variant::strided;
    bool index64 = false;
};

// What the module offers and needs: the vector width and which array operands are outputs
// (bit k: operand k).
struct VariantNeeds {
    int vector_width = 1;
    bool has_rows = false;
    bool has_tiled = false;
    std::uint64_t output_mask = 0;
};

// The fastest variant that handles `layout` (simplified); strided always does (<= 16 dims).
VariantChoice choose_variant(const CallLayout& layout, const VariantNeeds& needs);

}  // namespace kjit::detail
