// `kjit demo`: tables, number formats, progress notes, the kernels and the scenarios' sizes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unistd.h>

#include <fmt/format.h>

#include "tools/cli/demo.hpp"

namespace kjit::cli::demo {

const Kernels& kernels() {
    static const Kernels k;
    return k;
}

void print_table(const std::vector<Row>& rows) {
    std::size_t width = 0;
    for (const Row& r : rows) width = std::max(width, r.what.size());
    for (const Row& r : rows) fmt::print("  {:<{}}  {:>10}  {}\n", r.what, width, duration(r.ms), r.note);
}

std::string grouped(std::int64_t n) {
    std::string digits = std::to_string(n < 0 ? -n : n), out;
    for (std::size_t k = 0; k < digits.size(); ++k) {
        if (k > 0 && (digits.size() - k) % 3 == 0) out += ',';
        out += digits[k];
    }
    return n < 0 ? "-" + out : out;
}

std::string duration(double ms) {
    if (ms >= 10000) return fmt::format("{:.1f} s", ms / 1000);
    if (ms >= 1000) return fmt::format("{:.2f} s", ms / 1000);
    if (ms >= 100) return fmt::format("{:.0f} ms", ms);
    if (ms >= 10) return fmt::format("{:.1f} ms", ms);
    if (ms >= 0.1) return fmt::format("{:.2f} ms", ms);
    return fmt::format("{:.1f} us", ms * 1000);
}

std::string compile_origin(double compile_ms) {
    return compile_ms == 0 ? "found in the kernel cache" : "compiled by NVRTC in " + duration(compile_ms);
}

Progress::Progress() : tty_(isatty(STDERR_FILENO) == 1) {}

void Progress::show(const std::string& what) const {
    if (!tty_) return;
    std::fprintf(stderr, "\r\033[K  ... %s", what.c_str());
    std::fflush(stderr);
}

void Progress::clear() const {
    if (!tty_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
}

std::int64_t add_scalar_size(double scale) { return std::max<std::int64_t>(1, std::llround(300e6 * scale)); }
std::int64_t matmul_side(double scale) { return std::max<std::int64_t>(2, std::llround(10000 * std::sqrt(scale))); }
std::int64_t readings_per_day_base(double scale) { return std::max<std::int64_t>(1, std::llround(10000 * scale)); }
std::int64_t fused_size(double scale) { return std::max<std::int64_t>(1, std::llround(100e6 * scale)); }

}  // namespace kjit::cli::demo
