// The registry and size limit of runtime/detail/small_matmul.hpp.
#include "runtime/detail/small_matmul.hpp"

#include <atomic>
#include <cstdlib>

namespace kjit::detail {
namespace {

constexpr std::int64_t kDefaultLimit = 64 * 64 * 64;
constexpr std::int64_t kTile = 16;             // templates/small_matmul.cuh's KJIT_SMM_TILE
constexpr std::int64_t kMaxGridYZ = 65535;     // CUDA's limit on gridDim.y and gridDim.z

std::atomic<SmallMatmulLaunch> g_launch{nullptr};

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

void register_small_matmul(SmallMatmulLaunch launch) noexcept { g_launch.store(launch, std::memory_order_release); }
SmallMatmulLaunch small_matmul() noexcept { return g_launch.load(std::memory_order_acquire); }

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

}  // namespace kjit::detail
