// The size limit of jit/kernels/ops/small_matmul_plan.hpp.
#include "jit/kernels/ops/small_matmul_plan.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "kjit/array.hpp"

namespace kjit::jit::kernels::ops {
namespace {

constexpr std::int64_t kDefaultLimit = 64 * 64 * 64;
constexpr std::int64_t kTile = 16;             // templates/small_matmul.cuh's KJIT_SMM_TILE
constexpr std::int64_t kMaxGridYZ = 65535;     // CUDA's limit on gridDim.y and gridDim.z

std::int64_t limit_from_environment() noexcept {
    const char* e = std::getenv("KJIT_SMALL_MATMUL_MAX");
    if (e == nullptr || *e == '\0') return kDefaultLimit;
    char* end = nullptr;
    const long long v = std::strtoll(e, &end, 10);
    return (end != nullptr && *end == '\0' && v >= 0) ? v : kDefaultLimit;
}

std::atomic<std::int64_t>& limit() noexcept {
    static std::atomic<std::int64_t> value{limit_from_environment()};
    return value;
}

}  // namespace

std::int64_t small_matmul_limit() noexcept { return limit().load(std::memory_order_relaxed); }
std::int64_t set_small_matmul_limit(std::int64_t value) noexcept { return limit().exchange(value); }

bool use_small_matmul(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch) noexcept {
    if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return false;
    if (batch > kMaxGridYZ || (m + kTile - 1) / kTile > kMaxGridYZ || (n + kTile - 1) / kTile > kMaxGridYZ) return false;
    const std::int64_t cap = small_matmul_limit();
    // m·n·k·batch <= cap, without overflowing.
    std::int64_t work = m;
    for (std::int64_t f : {n, k, batch}) {
        if (work > cap / f) return false;
        work *= f;
    }
    return work <= cap;
}

bool cublas_crashes_on(DType dtype, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch) noexcept {
    if (!(dtype == DType::complex128) || (m != 1 && n != 1 && k != 1)) return false;
    // Within what the small kernel's grid holds (use_small_matmul's other conditions).
    if (m <= 0 || n <= 0 || k <= 0 || batch <= 0 || batch > kMaxGridYZ) return false;
    return (m + kTile - 1) / kTile <= kMaxGridYZ && (n + kTile - 1) / kTile <= kMaxGridYZ;
}

bool describe_small_matmul(const Array& a, const Array& b, const Array& c, SmallMatmul& s) noexcept {
    const int na = a.ndim(), nb = b.ndim();
    if (na < 1 || na > 3 || nb < 1 || nb > 3) return false;
    const Shape &as = a.shape(), &bs = b.shape();
    const Strides &at = a.strides(), &bt = b.strides();
    // a as (batch, m, k), b as (batch, k, n): a 1-D a is one row, a 1-D b one column.
    const std::int64_t a_batch = na == 3 ? as[0] : 1, b_batch = nb == 3 ? bs[0] : 1;
    s.m = na == 1 ? 1 : as[static_cast<std::size_t>(na - 2)];
    s.k = as[static_cast<std::size_t>(na - 1)];
    s.n = nb == 1 ? 1 : bs[static_cast<std::size_t>(nb - 1)];
    const std::int64_t b_rows = nb == 1 ? bs[0] : bs[static_cast<std::size_t>(nb - 2)];
    if (b_rows != s.k) return false;
    if (a_batch != b_batch && a_batch != 1 && b_batch != 1) return false;
    s.batch = std::max(a_batch, b_batch);
    // The result's shape: the batch axis when either operand has one, then m unless a was 1-D,
    // then n unless b was 1-D. c's stride along an axis it lacks does not matter (extent 1).
    const bool has_batch = na == 3 || nb == 3;
    const int nc = (has_batch ? 1 : 0) + (na > 1 ? 1 : 0) + (nb > 1 ? 1 : 0);
    if (c.ndim() != nc) return false;
    const Shape& cs = c.shape();
    const Strides& ct = c.strides();
    int d = 0;
    s.c_strides[0] = s.c_strides[1] = s.c_strides[2] = 0;
    if (has_batch) {
        if (cs[0] != s.batch) return false;
        s.c_strides[0] = ct[0];
        ++d;
    }
    if (na > 1) {
        if (cs[static_cast<std::size_t>(d)] != s.m) return false;
        s.c_strides[1] = ct[static_cast<std::size_t>(d++)];
    }
    if (nb > 1) {
        if (cs[static_cast<std::size_t>(d)] != s.n) return false;
        s.c_strides[2] = ct[static_cast<std::size_t>(d)];
    }
    if (s.batch > 1 && s.c_strides[0] == 0) return false;  // every batch would write the same elements
    // Operand strides (batch, row, column); a broadcast batch reads with stride 0.
    s.a_strides[0] = (na == 3 && a_batch > 1) ? at[0] : 0;
    s.a_strides[1] = na == 1 ? 0 : at[static_cast<std::size_t>(na - 2)];
    s.a_strides[2] = at[static_cast<std::size_t>(na - 1)];
    s.b_strides[0] = (nb == 3 && b_batch > 1) ? bt[0] : 0;
    s.b_strides[1] = bt[static_cast<std::size_t>(nb == 1 ? 0 : nb - 2)];
    s.b_strides[2] = nb == 1 ? 0 : bt[static_cast<std::size_t>(nb - 1)];
    return s.m > 0 && s.n > 0 && s.k > 0 && s.batch > 0;
}

}  // namespace kjit::jit::kernels::ops
