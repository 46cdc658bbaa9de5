// Helpers shared by the test files: GPU detection for [gpu] tests, random data and arrays, reading
// arrays back independently of the library, temp dirs.
#pragma once

#include <catch2/catch.hpp>

#include <complex>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

// kjit's headers do not bring in the driver's: the tests use its types and status codes.
#include <cuda.h>

#include "kjit/array.hpp"
#include "kjit/cache.hpp"
#include "kjit/device.hpp"
#include "kjit/dtype.hpp"

namespace kjit::test {

// True when a CUDA device can be used. [gpu] tests start with KJIT_REQUIRE_GPU(), which reports
// the test as skipped (a visible warning) when there is none; the ctest entry for [gpu] tests is
// reported as skipped as a whole in that case (tests/main.cpp).
inline bool gpu_available() { return kjit::Device::count() > 0; }

// A fresh random engine per test, seeded from the clock so each run sees new data; the seed is
// printed when a check fails (Catch's INFO) so a failure can be replayed with KJIT_TEST_SEED.
std::mt19937_64& rng();
std::uint64_t seed();

// Random bytes for `count` elements of `dtype`, valid values of that type (bools are 0/1, floats
// finite and away from zero so that nothing hides behind zeros).
std::vector<unsigned char> random_elements(kjit::DType dtype, std::int64_t count);

// Element k of C-ordered bytes of dtype `t`, as a complex double (real types: imaginary part 0;
// 64-bit integers rounded to double).
std::complex<double> element_value(const std::vector<unsigned char>& bytes, kjit::DType t, std::size_t k);

// Runs work(0) ... work(count - 1) on every core (at least two threads) and returns what each
// returned, in order: compile tests check the results on the test's own thread.
std::vector<std::string> run_on_all_cores(std::size_t count, const std::function<std::string(std::size_t)>& work);

// Every dtype kjit has, in DType::Id order.
std::vector<kjit::DType> all_dtypes();

// A host array in C order filled with random_elements.
kjit::Array random_array(kjit::DType dtype, const kjit::Shape& shape);

// The elements of a host array in C order, walked through its strides here rather than with the
// library's own copy, so that the check does not depend on the code under test.
std::vector<unsigned char> host_bytes_c_order(const kjit::Array& a);

// A host array of `values` (C order; shape: 1-D when empty), and the elements of any host array
// as a vector, read through its strides (host_bytes_c_order).
template <class T>
kjit::Array host_array(const std::vector<T>& values, kjit::DType t, kjit::Shape shape = {}) {
    if (shape.empty()) shape = {static_cast<std::int64_t>(values.size())};
    kjit::Array a = kjit::Array::empty(shape, t, kjit::Device::cpu());
    std::memcpy(a.data(), values.data(), values.size() * sizeof(T));
    return a;
}
template <class T>
std::vector<T> values_of(const kjit::Array& a) {
    std::vector<T> v(static_cast<std::size_t>(a.size()));
    const std::vector<unsigned char> bytes = host_bytes_c_order(a);
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
}

// Sets (or unsets, for null) an environment variable for the scope, then restores it.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        if (value != nullptr) ::setenv(name, value, 1);
        else ::unsetenv(name);
    }
    ~ScopedEnv() {
        if (old_) ::setenv(name_.c_str(), old_->c_str(), 1);
        else ::unsetenv(name_.c_str());
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    std::string name_;
    std::optional<std::string> old_;
};

// Restores the process cache's settings when a test that changes them ends.
struct ProcessCacheGuard {
    kjit::CacheSettings saved = kjit::cache_settings();
    ~ProcessCacheGuard() { kjit::configure_cache(saved); }
};

// Settings whose writable cache folder is `dir` (no read-only layers, disk on).
inline kjit::CacheSettings cache_in(const std::filesystem::path& dir) {
    kjit::CacheSettings s;
    s.dir = dir.string();
    return s;
}

// A new empty directory under the system temp dir, removed when the object dies.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

}  // namespace kjit::test

#define KJIT_REQUIRE_GPU()                                                                       \
    do {                                                                                         \
        if (!::kjit::test::gpu_available()) {                                                    \
            WARN("SKIPPED (no GPU): " << ::kjit::no_device_reason());                            \
            return;                                                                              \
        }                                                                                        \
    } while (0)

// For [gpu] tests that need `n` GPUs (tagged [gpu2] too when n is 2): skipped with a visible
// warning on a machine with fewer.
#define KJIT_REQUIRE_GPUS(n)                                                                     \
    do {                                                                                         \
        KJIT_REQUIRE_GPU();                                                                      \
        if (::kjit::Device::count() < (n)) {                                                     \
            WARN("SKIPPED (needs " << (n) << " GPUs, this machine has " << ::kjit::Device::count() << ")"); \
            return;                                                                              \
        }                                                                                        \
    } while (0)
