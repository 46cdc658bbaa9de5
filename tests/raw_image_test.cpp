// RawModule::from_file and from_image: cubins, PTX, fatbins and LTO-IR built by nvcc at build time
// (tests/data/raw_image.cu), read, refused where they cannot run, and launched on the GPU (LTO-IR's
// link: raw_link_test.cpp).
#include "test_support.hpp"

#include <fstream>
#include <iterator>

#include "fake_driver.hpp"
#include "gpu_data.hpp"
#include "jit/kernels/raw/image.hpp"
#include "kjit/error.hpp"
#include "kjit/raw_kernel.hpp"
#include "runtime/detail/driver.hpp"

using Catch::Matchers::Contains;
using kjit::ImageKind;
using kjit::RawModule;

namespace {

// The folder of nvcc's binaries beside kjit_tests, or empty (with a warning) when the build had
// no nvcc.
std::filesystem::path binaries() {
    std::error_code ec;
    const std::filesystem::path dir = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "binaries";
    if (std::filesystem::exists(dir / "raw_image_sm90.cubin", ec)) return dir;
    WARN("SKIPPED: no nvcc-built binaries in " << dir.string() << " (the build found no nvcc)");
    return {};
}

std::vector<unsigned char> bytes_of(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A pretend sm_90 GPU whose modules load and whose functions are found by any name.
kjit::detail::DriverApi fake_gpu() { return kjit::test::make_fake_launching_driver(); }

void check_affine_and_negate(const RawModule& m) {
    const int n = 70001;
    const kjit::test::DeviceData x = kjit::test::random_device(kjit::DType::float32, {n});
    const kjit::Array y = kjit::test::poisoned(kjit::DType::float32, {n});
    m.get_function("affine")((n + 255) / 256, 256, {x.device, y, n});
    const auto xs = [&](std::size_t k) { return kjit::test::element_value(x.host, kjit::DType::float32, k).real(); };
    CHECK(kjit::test::mismatches(y, [&](std::size_t k) { return 3.0 * xs(k) + 1.0; }, 1e-6, 1e-6) == 0);
    const kjit::Array z = kjit::test::poisoned(kjit::DType::float32, {n});
    m.get_function("_Z6negatePKfPfi")((n + 127) / 128, 128, {x.device, z, n});
    CHECK(kjit::test::mismatches(z, [&](std::size_t k) { return -xs(k); }, 0, 0) == 0);
}

}  // namespace

TEST_CASE("binaries are recognised by their first bytes and read for their architectures", "[raw][image]") {
    const std::filesystem::path dir = binaries();
    if (dir.empty()) return;
    using kjit::jit::kernels::detect_image_kind;
    using kjit::jit::kernels::read_image;
    const auto read = [&](const char* file) {
        std::vector<unsigned char> b = bytes_of(dir / file);
        const ImageKind kind = detect_image_kind(b, file);
        return read_image(std::move(b), kind, file);
    };
    const auto sm80 = read("raw_image_sm80.cubin");
    CHECK(sm80.kind == ImageKind::cubin);
    CHECK(sm80.archs == std::vector<std::string>{"sm_80"});
    CHECK(read("raw_image_sm90.cubin").archs == std::vector<std::string>{"sm_90"});
    const auto ptx = read("raw_image_80.ptx");
    CHECK(ptx.kind == ImageKind::ptx);
    CHECK(ptx.archs == std::vector<std::string>{"compute_80"});
    const auto fat = read("raw_image.fatbin");
    CHECK(fat.kind == ImageKind::fatbin);
    CHECK(fat.archs == std::vector<std::string>{"sm_80", "sm_90", "compute_90"});
    CHECK(read("raw_image_90.ltoir").kind == ImageKind::ltoir);
    CHECK(read("raw_image_sm80.cubin").key != read("raw_image_sm90.cubin").key);

    // What the bytes are not.
    CHECK_THROWS_WITH(detect_image_kind({'h', 'i'}, "x.bin"), Contains("x.bin is neither a cubin"));
    CHECK_THROWS_WITH(read_image(bytes_of(dir / "raw_image_80.ptx"), ImageKind::cubin, "p"), Contains("p is not a cubin"));
    CHECK_THROWS_WITH(read_image({}, ImageKind::ptx, "e"), Contains("e is empty"));
    std::vector<unsigned char> cut = bytes_of(dir / "raw_image.fatbin");
    cut.resize(100);
    CHECK_THROWS_WITH(read_image(cut, ImageKind::fatbin, "cut"), Contains("cut is not a fatbin"));
    std::vector<unsigned char> elf = bytes_of(dir / "raw_image_sm90.cubin");
    elf.resize(20);
    CHECK_THROWS_WITH(read_image(elf, ImageKind::cubin, "short"), Contains("short is not a 64-bit ELF cubin"));
}

TEST_CASE("from_file: a missing file is an IoError naming it; a binary is not compiled", "[raw][image]") {
    CHECK_THROWS_AS(RawModule::from_file("/nonexistent/k.cubin"), kjit::IoError);
    CHECK_THROWS_WITH(RawModule::from_file("/nonexistent/k.cubin"), Contains("/nonexistent/k.cubin"));
    const std::filesystem::path dir = binaries();
    if (dir.empty()) return;
    const RawModule cubin = RawModule::from_file((dir / "raw_image_sm90.cubin").string());
    CHECK(cubin.name() == "raw_image_sm90.cubin");
    CHECK(cubin.image_kind() == ImageKind::cubin);
    CHECK_FALSE(RawModule("extern \"C\" __global__ void k() {}").image_kind());
    const kjit::Binary b = cubin.compile();
    CHECK(b.arch == "sm_90");
    CHECK(b.cubin == bytes_of(dir / "raw_image_sm90.cubin"));
    CHECK(RawModule::from_file((dir / "raw_image_80.ptx").string(), "affine_ptx").compile().ptx.find(".target sm_80") !=
          std::string::npos);
    CHECK_THROWS_WITH(RawModule::from_file((dir / "raw_image.fatbin").string()).compile(), Contains("built elsewhere"));
    // Mangled names are kernel names here: no name expressions to check them against.
    CHECK_NOTHROW(cubin.get_function("_Z6negatePKfPfi"));
}

TEST_CASE("binaries for another architecture are refused on first use, naming both", "[raw][image]") {
    const std::filesystem::path dir = binaries();
    if (dir.empty()) return;
    const kjit::detail::ScopedDriverOverride fake(fake_gpu(), 1);
    const int loads = kjit::test::fake_state().modules_loaded;
    // The sm_90 cubin loads on the (pretend) 9.0 GPU.
    const RawModule sm90 = RawModule::from_file((dir / "raw_image_sm90.cubin").string());
    CHECK(sm90.get_function("affine").attributes(kjit::Device::cuda(0)).arch == "sm_90");
    CHECK(kjit::test::fake_state().modules_loaded == loads + 1);
    // The sm_80 cubin does not run on 9.0.
    const RawModule sm80 = RawModule::from_file((dir / "raw_image_sm80.cubin").string());
    CHECK_THROWS_WITH(sm80.get_function("affine").attributes(kjit::Device::cuda(0)),
                      Contains("raw_image_sm80.cubin") && Contains("a cubin for sm_80") &&
                          Contains("cuda:0 is sm_90 (compute capability 9.0)"));
    // PTX for a newer GPU.
    const std::string newer = ".version 9.0\n.target sm_100\n.address_size 64\n";
    const RawModule ptx = RawModule::from_image({newer.begin(), newer.end()}, ImageKind::ptx, "newer");
    CHECK_THROWS_WITH(ptx.get_function("k").attributes(kjit::Device::cuda(0)),
                      Contains("raw module 'newer'") && Contains("compute_100") && Contains("sm_90"));
    // LTO-IR is linked for the device by nvJitLink (which needs no GPU), then loaded.
    const RawModule lto = RawModule::from_file((dir / "raw_image_90.ltoir").string());
    const int before_lto = kjit::test::fake_state().modules_loaded;
    CHECK(lto.get_function("affine").attributes(kjit::Device::cuda(0)).arch == "sm_90");
    CHECK(kjit::test::fake_state().modules_loaded == before_lto + 1);
}

TEST_CASE("a fatbin the driver finds no code in says which architectures it holds", "[raw][image]") {
    const std::filesystem::path dir = binaries();
    if (dir.empty()) return;
    kjit::detail::DriverApi api = fake_gpu();
    api.cuModuleLoadData = [](CUmodule*, const void*) { return CUDA_ERROR_NO_BINARY_FOR_GPU; };
    const kjit::detail::ScopedDriverOverride fake(api, 1);
    const RawModule fat = RawModule::from_file((dir / "raw_image.fatbin").string());
    CHECK_THROWS_WITH(fat.get_function("affine").attributes(kjit::Device::cuda(0)),
                      Contains("holds no code that runs on this GPU") && Contains("sm_80, sm_90, compute_90") &&
                          Contains("cuda:0 is sm_90"));
}

TEST_CASE("a cubin, PTX and a fatbin built by nvcc run from their files", "[raw][image][gpu]") {
    KJIT_REQUIRE_GPU();
    const std::filesystem::path dir = binaries();
    if (dir.empty()) return;
    if (kjit::Device::current().properties().arch() == "sm_90") {
        INFO("the sm_90 cubin");
        check_affine_and_negate(RawModule::from_file((dir / "raw_image_sm90.cubin").string()));
    }
    {
        INFO("compute_80 PTX, compiled by the driver");
        const RawModule ptx = RawModule::from_file((dir / "raw_image_80.ptx").string());
        check_affine_and_negate(ptx);
        CHECK(ptx.get_function("affine").attributes().compiled_from_ptx);
    }
    {
        INFO("the fatbin: the driver picks its code for this GPU");
        check_affine_and_negate(RawModule::from_file((dir / "raw_image.fatbin").string()));
    }
}
