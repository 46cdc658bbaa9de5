#include "test_support.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include "kjit/half.hpp"

namespace kjit::test {

std::uint64_t seed() {
    static const std::uint64_t s = [] {
        if (const char* env = std::getenv("KJIT_TEST_SEED")) return static_cast<std::uint64_t>(std::strtoull(env, nullptr, 10));
        return static_cast<std::uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count());
    }();
    return s;
}

std::mt19937_64& rng() {
    static std::mt19937_64 engine(seed());
    return engine;
}

namespace {

// Finite, away from zero, both signs: nothing hides behind zeros and products stay in range.
double random_real() {
    std::uniform_real_distribution<double> mag(0.125, 8.0);
    std::bernoulli_distribution negative(0.5);
    const double v = mag(rng());
    return negative(rng()) ? -v : v;
}

template <class T>
void put(unsigned char* dst, T v) {
    std::memcpy(dst, &v, sizeof v);
}

template <class T>
T random_int() {
    std::uniform_int_distribution<long long> d(static_cast<long long>(std::numeric_limits<T>::min()),
                                               static_cast<long long>(std::numeric_limits<T>::max() / 2));
    if constexpr (std::is_same_v<T, std::uint64_t>) {
        return rng()();  // the whole range
    } else {
        return static_cast<T>(d(rng()));
    }
}

}  // namespace

std::vector<unsigned char> random_elements(DType dtype, std::int64_t count) {
    std::vector<unsigned char> out(static_cast<std::size_t>(count) * dtype.itemsize());
    for (std::int64_t k = 0; k < count; ++k) {
        unsigned char* p = out.data() + k * dtype.itemsize();
        switch (dtype.id()) {
            case DType::bool_: put<unsigned char>(p, static_cast<unsigned char>(rng()() & 1u)); break;
            case DType::int8: put(p, random_int<std::int8_t>()); break;
            case DType::int16: put(p, random_int<std::int16_t>()); break;
            case DType::int32: put(p, random_int<std::int32_t>()); break;
            case DType::int64: put(p, random_int<std::int64_t>()); break;
            case DType::uint8: put(p, random_int<std::uint8_t>()); break;
            case DType::uint16: put(p, random_int<std::uint16_t>()); break;
            case DType::uint32: put(p, random_int<std::uint32_t>()); break;
            case DType::uint64: put(p, random_int<std::uint64_t>()); break;
            case DType::float16: put(p, half(static_cast<float>(random_real()))); break;
            case DType::bfloat16: put(p, bfloat16(static_cast<float>(random_real()))); break;
            case DType::float32: put(p, static_cast<float>(random_real())); break;
            case DType::float64: put(p, random_real()); break;
            case DType::complex64:
                put(p, std::complex<float>(static_cast<float>(random_real()), static_cast<float>(random_real())));
                break;
            case DType::complex128: put(p, std::complex<double>(random_real(), random_real())); break;
        }
    }
    return out;
}

std::complex<double> element_value(const std::vector<unsigned char>& bytes, DType t, std::size_t k) {
    const unsigned char* p = bytes.data() + k * t.itemsize();
    auto get = [&](auto v) {
        std::memcpy(&v, p, sizeof v);
        return v;
    };
    switch (t.id()) {
        case DType::bool_: return get(std::uint8_t{}) != 0 ? 1.0 : 0.0;
        case DType::int8: return get(std::int8_t{});
        case DType::int16: return get(std::int16_t{});
        case DType::int32: return get(std::int32_t{});
        case DType::int64: return static_cast<double>(get(std::int64_t{}));
        case DType::uint8: return get(std::uint8_t{});
        case DType::uint16: return get(std::uint16_t{});
        case DType::uint32: return get(std::uint32_t{});
        case DType::uint64: return static_cast<double>(get(std::uint64_t{}));
        case DType::float16: return half::to_float(get(std::uint16_t{}));
        case DType::bfloat16: return bfloat16::to_float(get(std::uint16_t{}));
        case DType::float32: return get(float{});
        case DType::float64: return get(double{});
        case DType::complex64: return std::complex<double>(get(std::complex<float>{}));
        case DType::complex128: return get(std::complex<double>{});
    }
    return 0.0;
}

std::vector<std::string> run_on_all_cores(std::size_t count, const std::function<std::string(std::size_t)>& work) {
    std::vector<std::string> results(count);
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> workers;
    for (unsigned w = 0; w < std::max(2u, std::thread::hardware_concurrency()); ++w)
        workers.emplace_back([&] {
            for (std::size_t j; (j = next++) < count;) results[j] = work(j);
        });
    for (std::thread& t : workers) t.join();
    return results;
}

std::vector<DType> all_dtypes() {
    std::vector<DType> out;
    for (int id = 0; id < DType::count; ++id) out.emplace_back(static_cast<DType::Id>(id));
    return out;
}

Array random_array(DType dtype, const Shape& shape) {
    Array a = Array::empty(shape, dtype, Device::cpu());
    const std::vector<unsigned char> data = random_elements(dtype, a.size());
    if (!data.empty()) std::memcpy(a.data(), data.data(), data.size());
    return a;
}

std::vector<unsigned char> host_bytes_c_order(const Array& a) {
    REQUIRE(a.is_host());
    const std::size_t itemsize = a.itemsize();
    std::vector<unsigned char> out;
    out.reserve(a.nbytes());
    const auto* base = static_cast<const unsigned char*>(a.data());
    std::vector<std::int64_t> index(a.ndim(), 0);
    for (std::int64_t n = 0; n < a.size(); ++n) {
        std::int64_t offset = 0;
        for (int d = 0; d < a.ndim(); ++d) offset += index[d] * a.strides()[d];
        const unsigned char* p = base + offset * static_cast<std::int64_t>(itemsize);
        out.insert(out.end(), p, p + itemsize);
        for (int d = a.ndim() - 1; d >= 0; --d) {
            if (++index[d] < a.shape()[d]) break;
            index[d] = 0;
        }
    }
    return out;
}

TempDir::TempDir() {
    static std::uint64_t counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("kjit-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + std::to_string(rng()() % 100000));
    std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

}  // namespace kjit::test
