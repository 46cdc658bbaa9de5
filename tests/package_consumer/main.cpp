// Uses an installed kjit (tests/package_consumer/run.cmake: `cmake --install`; tools/package-test.sh:
// the .deb packages, through find_package and through pkg-config). Host arrays, dtypes and the
// version work anywhere; the GPU part reports a missing device instead of failing.
//   consumer               a kernel on host arrays when the host back end is there, else its message
//   consumer --need-host   the host back end must run the kernel (libkjit-host0 installed)
//   consumer --no-host     the host back end must be missing, and the error must say how to install it
#include <kjit/kjit.hpp>

#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    // The headers' version and the loaded library's agree (docs/ABI.md).
    if (KJIT_VERSION != kjit::version_number() || std::strcmp(KJIT_VERSION_STRING, kjit::version()) != 0) {
        std::printf("version mismatch: headers %s (%d), library %s (%d)\n", KJIT_VERSION_STRING, KJIT_VERSION,
                    kjit::version(), kjit::version_number());
        return 1;
    }
    const kjit::DType t = kjit::result_type(kjit::DType::parse("int16"), kjit::DType::float16);
    const float values[6] = {1, 2, 3, 4, 5, 6};
    const kjit::Array a = kjit::Array::from_host(values, kjit::DType::float32, {2, 3}, kjit::Device::cpu());
    const kjit::Array col = a.transpose().index(0, 1);  // the second column: 2, 5
    float out[2] = {};
    col.copy_to_host(out);
    std::printf("kjit %s: result_type(int16, float16) = %s, column = %g %g, GPUs: %d\n", kjit::version(),
                std::string(t.name()).c_str(), out[0], out[1], kjit::Device::count());
    if (!(t == kjit::DType::float32 && out[0] == 2 && out[1] == 5)) return 1;

    // A first kernel, compiled and run on host arrays by the host back end (libkjit_host.so).
    try {
        const kjit::ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "axpb");
        const kjit::Array y = axpb({a, 2.0f, 1.0f});
        float result[6] = {};
        y.copy_to_host(result);
        std::printf("host kernel y = 2 * x + 1: %g %g %g %g %g %g\n", result[0], result[1], result[2], result[3],
                    result[4], result[5]);
        for (int k = 0; k < 6; ++k)
            if (result[k] != 2 * values[k] + 1) return 1;
        if (mode == "--no-host") {
            std::printf("the host back end ran, but --no-host expected it missing\n");
            return 1;
        }
    } catch (const kjit::Error& e) {
        std::printf("host kernel: %s\n", e.what());
        if (mode == "--need-host") return 1;
        if (mode == "--no-host" && std::strstr(e.what(), "apt-get install libkjit-host0") == nullptr) {
            std::printf("the message does not say how to install libkjit-host0\n");
            return 1;
        }
    }
    return 0;
}
