// The exception hierarchy and what each error's message carries.
#include "test_support.hpp"

#include "kjit/error.hpp"

using Catch::Matchers::Contains;

TEST_CASE("ParseError prints where:line:col, the snippet and the hint", "[error]") {
    const kjit::ParseError e("op", 2, 7, "unknown name 'sqr'", "  y = sqr(x);\n        ^", "did you mean 'sqrt'?");
    CHECK(e.where() == "op");
    CHECK(e.line() == 2);
    CHECK(e.column() == 7);
    CHECK(std::string(e.what()) == "op:2:7: error: unknown name 'sqr'\n  y = sqr(x);\n        ^\nhint: did you mean 'sqrt'?");
}

TEST_CASE("every kjit error is a kjit::Error and a std::exception", "[error]") {
    auto is_kjit_error = [](auto&& make) {
        try {
            make();
        } catch (const kjit::Error&) {
            return true;
        } catch (...) {
            return false;
        }
        return false;
    };
    CHECK(is_kjit_error([] { throw kjit::ParseError("in", 1, 1, "m", ""); }));
    CHECK(is_kjit_error([] { throw kjit::TypeError("t"); }));
    CHECK(is_kjit_error([] { throw kjit::ShapeError("s"); }));
    CHECK(is_kjit_error([] { throw kjit::CompileError("c", "log", "src"); }));
    CHECK(is_kjit_error([] { throw kjit::LinkError("l", "log"); }));
    CHECK(is_kjit_error([] { throw kjit::CudaError(CUDA_ERROR_INVALID_VALUE, "cuX()", "f.cpp", 3); }));
    CHECK(is_kjit_error([] { throw kjit::OutOfMemory(CUDA_ERROR_OUT_OF_MEMORY, "cuY()", "f.cpp", 4, 10, 5, 20); }));
    CHECK(is_kjit_error([] { throw kjit::NvrtcError(3, "nvrtcZ()", "f.cpp", 5, "bad"); }));
    CHECK(is_kjit_error([] { throw kjit::NoDeviceError("n"); }));
    CHECK(is_kjit_error([] { throw kjit::CacheError("c"); }));
    CHECK(is_kjit_error([] { throw kjit::IoError("i"); }));
}

TEST_CASE("CudaError keeps the raw status and the call", "[error]") {
    const kjit::CudaError e(CUDA_ERROR_INVALID_VALUE, "d.cuMemcpy(dst, src, n)", "runtime/x.cpp", 12, "extra");
    CHECK(e.code() == CUDA_ERROR_INVALID_VALUE);
    CHECK(e.call() == "d.cuMemcpy(dst, src, n)");
    CHECK_THAT(std::string(e.what()), Contains("d.cuMemcpy(dst, src, n)") && Contains("runtime/x.cpp:12") &&
                                          Contains("extra"));
}

TEST_CASE("OutOfMemory names the size asked and the free memory", "[error]") {
    const kjit::OutOfMemory e(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAllocFromPoolAsync", "b.cpp", 1, 3u << 30, 1u << 29,
                              2u << 30);
    const kjit::CudaError& base = e;
    CHECK(base.code() == CUDA_ERROR_OUT_OF_MEMORY);
    CHECK(e.requested_bytes() == (3u << 30));
    CHECK(e.free_bytes() == (1u << 29));
    CHECK_THAT(std::string(e.what()), Contains("3221225472 bytes (3072 MiB)") && Contains("536870912 bytes (512 MiB) free"));
}

TEST_CASE("LinkError is a CompileError carrying nvJitLink's log", "[error]") {
    const kjit::LinkError e("cannot link raw module 'm' for sm_90", "error   : Undefined reference to 'f'");
    const kjit::CompileError& base = e;
    CHECK(base.log() == "error   : Undefined reference to 'f'");
    CHECK(base.source_excerpt().empty());
    CHECK_THAT(std::string(e.what()), Contains("cannot link raw module 'm' for sm_90\nnvJitLink log:\nerror   : Undefined"));
    CHECK_FALSE(std::string(e.what()).find("NVRTC") != std::string::npos);
}

TEST_CASE("CompileError carries the log and the source excerpt", "[error]") {
    const kjit::CompileError e("kernel 'axpb' failed to compile", "error: expected ;", "  3 | y = a * x");
    CHECK(e.log() == "error: expected ;");
    CHECK(e.source_excerpt() == "  3 | y = a * x");
    CHECK_THAT(std::string(e.what()), Contains("NVRTC log:\nerror: expected ;") && Contains("generated source:"));
}
