// Segments of sorted keys on the GPU: three launches of templates/segments.cuh and one read of the
// number of runs (see the template for the algorithm).
#include "jit/kernels/ops/segments.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>

#include "jit/codegen/templates.hpp"
#include "jit/kernels/call_memo.hpp"
#include "runtime/detail/call_layout.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/capture.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit::detail {
namespace {

constexpr const char* kWhat = "segments_of_sorted_keys: ";

// The template's kernel suffixes, and which one compares keys of each dtype: integers of one width
// are equal exactly when their bits are, so signed and unsigned share a kernel.
constexpr const char* kSuffixes[] = {"u8", "b8", "u16", "u32", "u64", "f32", "f64"};
constexpr int kNoKernel = -1;

int suffix_index(DType t) {
    switch (t.id()) {
        case DType::int8:
        case DType::uint8: return 0;
        case DType::bool_: return 1;
        case DType::int16:
        case DType::uint16: return 2;
        case DType::int32:
        case DType::uint32: return 3;
        case DType::int64:
        case DType::uint64: return 4;
        case DType::float32: return 5;
        case DType::float64: return 6;
        default: return kNoKernel;
    }
}

// Everything that can be said about `keys` without a GPU comes first, so that the mistakes a
// caller makes are found (and testable) on any machine.
void check_keys(const Array& keys) {
    if (!keys.valid()) throw Error(std::string(kWhat) + "keys is an Array with no buffer (default-constructed)");
    if (keys.ndim() != 1)
        throw ShapeError(std::string(kWhat) + "keys must be 1-D, but has shape " + shape_to_string(keys.shape()) +
                         " (" + keys.to_string() + "); reshape({-1}) a contiguous array, or pick a column");
    if (suffix_index(keys.dtype()) == kNoKernel)
        throw TypeError(std::string(kWhat) + "keys of dtype " + std::string(keys.dtype().name()) +
                        " are not supported: keys are bool, int8..int64, uint8..uint64, float32 or float64" +
                        (keys.dtype().is_floating() ? " (convert float16/bfloat16 keys to float32 first)" : ""));
}

std::string module_source(const std::string& extra) {
    std::string s = "#define KJIT_SEG_THREADS " + std::to_string(kSegmentThreads) + "\n#define KJIT_SEG_ITEMS " +
                    std::to_string(kSegmentItems) + "\n#define KJIT_SEG_SCAN_THREADS " +
                    std::to_string(kSegmentScanThreads) + "\n";
    s += jit::codegen::template_text("segments.cuh");
    s += extra;
    return s;
}

}  // namespace

RawModule segments_module(const std::string& extra) {
    RawModuleOptions options;
    // No headers are included: -minimal saves NVRTC a third of its time, as for generated kernels.
    options.nvrtc_options = {"-minimal"};
    options.name = "kjit_segments";
    return RawModule(module_source(extra), std::move(options));
}

SegmentKernels::SegmentKernels(RawModule module)
    : module_(std::move(module)), scan_(module_.get_function("kjit_segments_scan")), pad_(module_.get_function("kjit_segments_pad")) {
    for (const char* suffix : kSuffixes) {
        count_.push_back(module_.get_function(std::string("kjit_segments_count_") + suffix));
        write_.push_back(module_.get_function(std::string("kjit_segments_write_") + suffix));
    }
}

const RawKernel& SegmentKernels::count(DType t) const {
    const int k = suffix_index(t);
    if (k == kNoKernel) throw TypeError(std::string(kWhat) + "no kernel for keys of dtype " + std::string(t.name()));
    return count_[static_cast<std::size_t>(k)];
}

const RawKernel& SegmentKernels::write(DType t) const {
    const int k = suffix_index(t);
    if (k == kNoKernel) throw TypeError(std::string(kWhat) + "no kernel for keys of dtype " + std::string(t.name()));
    return write_[static_cast<std::size_t>(k)];
}

const SegmentKernels& segment_kernels() {
    // Made once (a function-local static is thread-safe); compiling waits for the first launch on
    // each device, and the kernel cache compiles the module once per process and arch.
    static const SegmentKernels kernels(segments_module());
    return kernels;
}

Segments segments_of_sorted_keys(const Array& keys, const Stream& stream) {
    if (keys.valid() && keys.is_host()) {
        check_keys(keys);
        return segments_of_sorted_keys_on_host(keys);
    }
    return segments_of_sorted_keys(keys, stream, segment_kernels());
}

namespace {

// Steps 1 and 2 of the template on n > 0 keys: block_offsets[b] is block b's first rank, and
// block_offsets[blocks] the number of runs, on the device.
struct Counted {
    Array block_offsets;
    std::int64_t blocks = 0;
};

Counted count_runs(const Array& keys, const Stream& s, const SegmentKernels& kernels) {
    const std::int64_t n = keys.size();
    const std::int64_t blocks = (n + kSegmentTile - 1) / kSegmentTile;
    if (blocks > INT_MAX)  // n > 2^42 keys: more than any GPU holds, but say so rather than wrap
        throw Error(std::string(kWhat) + std::to_string(n) + " keys need " + std::to_string(blocks) +
                    " blocks, more than a grid has (" + std::to_string(INT_MAX) + ")");
    LaunchConfig config;
    config.stream = s;
    Counted c{Array::empty({blocks + 1}, DType::int64, keys.device(), s), blocks};
    kernels.count(keys.dtype())(static_cast<unsigned>(blocks), kSegmentThreads, {keys, keys.strides()[0], n, c.block_offsets},
                                config);
    kernels.scan()(1, kSegmentScanThreads, {c.block_offsets, blocks}, config);
    return c;
}

// An output of the form that does not wait: `size` elements of `t`, C-contiguous, where the keys are.
void check_output(const Array& a, const char* name, DType t, std::int64_t size, const Array& keys) {
    const std::string prefix = std::string(kWhat) + name + " ";
    if (!a.valid()) throw Error(prefix + "is an Array with no buffer (default-constructed)");
    if (a.dtype() != t) throw TypeError(prefix + "must be " + std::string(t.name()) + ", not " + std::string(a.dtype().name()));
    if (a.size() != size || !a.is_c_contiguous())
        throw ShapeError(prefix + "must be C-contiguous with " + std::to_string(size) + " elements for " + std::to_string(keys.size()) +
                         " keys, but is " + a.to_string());
    if (a.device() != keys.device())
        throw Error(prefix + "is on " + a.device().to_string() + ", the keys on " + keys.device().to_string());
}

void check_outputs(const Array& keys, const Array& offsets, const Array& run_keys, const Array& count) {
    check_output(offsets, "offsets", DType::int64, keys.size() + 1, keys);
    check_output(run_keys, "group_keys", keys.dtype(), keys.size(), keys);
    check_output(count, "count", DType::int64, 1, keys);
    // The kernels read keys while they write the outputs: no two of them may share memory.
    const std::pair<const char*, const Array*> named[] = {{"keys", &keys}, {"offsets", &offsets}, {"group_keys", &run_keys}, {"count", &count}};
    for (std::size_t i = 0; i < 4; ++i)
        for (std::size_t j = i + 1; j < 4; ++j) {
            char *a0, *a1, *b0, *b1;
            detail::byte_range(jit::kernels::operand_view(*named[i].second), a0, a1);
            detail::byte_range(jit::kernels::operand_view(*named[j].second), b0, b1);
            if (a0 < b1 && b0 < a1)
                throw Error(std::string(kWhat) + named[i].first + " and " + named[j].first + " overlap in memory; each needs its own");
        }
}

}  // namespace

void segments_of_sorted_keys_into(const Array& keys, const Array& offsets, const Array& run_keys, const Array& count,
                                  const Stream& stream) {
    if (keys.valid() && keys.is_host()) {
        check_keys(keys);
        check_outputs(keys, offsets, run_keys, count);
        const Segments seg = segments_of_sorted_keys_on_host(keys);
        auto* o = offsets.data_as<std::int64_t>();
        std::memcpy(o, seg.offsets.data(), static_cast<std::size_t>(seg.count + 1) * sizeof(std::int64_t));
        std::fill(o + seg.count + 1, o + keys.size() + 1, keys.size());
        std::memcpy(run_keys.data(), seg.keys.data(), seg.keys.nbytes());
        *count.data_as<std::int64_t>() = seg.count;
        return;
    }
    segments_of_sorted_keys_into(keys, offsets, run_keys, count, stream, segment_kernels());
}

void segments_of_sorted_keys_into(const Array& keys, const Array& offsets, const Array& run_keys, const Array& count,
                                  const Stream& stream, const SegmentKernels& kernels) {
    check_keys(keys);
    check_outputs(keys, offsets, run_keys, count);
    const Stream s = stream.for_device(keys.device());
    const std::int64_t n = keys.size();
    if (n == 0) {  // offsets = [0], count = 0
        Driver& d = driver_on(keys.device().ordinal());
        for (const Array* a : {&offsets, &count}) {
            KJIT_CU_CHECK(d.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(a->data()), 0, sizeof(std::int64_t), s.handle()));
            a->record_stream(s);  // freed after the memset; kept by a graph being captured
        }
        return;
    }
    const Counted counted = count_runs(keys, s, kernels);
    LaunchConfig config;
    config.stream = s;
    // The write kernel's own offsets[count] = n becomes offsets[n] = n, which the pad writes too.
    kernels.write(keys.dtype())(static_cast<unsigned>(counted.blocks), kSegmentThreads,
                                {keys, keys.strides()[0], n, counted.block_offsets, n, offsets, run_keys}, config);
    const std::int64_t pad_blocks = std::min<std::int64_t>((n + 1 + kSegmentThreads - 1) / kSegmentThreads, 1024);
    kernels.pad()(static_cast<unsigned>(pad_blocks), kSegmentThreads, {counted.block_offsets, counted.blocks, n, offsets, count},
                  config);
}

Segments segments_of_sorted_keys(const Array& keys, const Stream& stream, const SegmentKernels& kernels) {
    check_keys(keys);
    if (keys.is_host()) return segments_of_sorted_keys_on_host(keys);
    const Device device = keys.device();
    const Stream s = stream.for_device(device);
    const std::int64_t n = keys.size();
    Segments out;

    if (n == 0) {  // no runs: offsets = [0], written without a kernel and without waiting
        out.offsets = Array::empty({1}, DType::int64, device, s);
        out.keys = Array::empty({0}, keys.dtype(), device, s);
        KJIT_CU_CHECK(driver_on(device.ordinal())
                          .cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(out.offsets.data()), 0, sizeof(std::int64_t),
                                           s.handle()));
        return out;
    }

    const Counted counted = count_runs(keys, s, kernels);
    const std::int64_t blocks = counted.blocks, stride = keys.strides()[0];
    const Array& block_offsets = counted.block_offsets;
    const auto grid = static_cast<unsigned>(blocks);
    LaunchConfig config;
    config.stream = s;

    std::int64_t count = 0;
    detail::refuse_under_capture(detail::driver_on(device.ordinal()), s.handle(),
                                 std::string(kWhat) + "counting the groups",
                                 "give the outputs at their largest (group_sorted_keys(keys, offsets, group_keys, "
                                 "count), which does not wait), or find the groups before the capture");
    block_offsets.slice(0, {blocks, blocks + 1}).copy_to_host(&count, s);  // the one synchronisation
    if (count < 1 || count > n)
        throw Error(std::string(kWhat) + "the GPU counted " + std::to_string(count) + " runs in " + std::to_string(n) +
                    " keys, which cannot be (a kernel failed without an error?)");
    out.count = count;
    out.offsets = Array::empty({count + 1}, DType::int64, device, s);
    out.keys = Array::empty({count}, keys.dtype(), device, s);
    kernels.write(keys.dtype())(grid, kSegmentThreads,
                                {keys, stride, n, block_offsets, count, out.offsets, out.keys}, config);
    return out;
}

}  // namespace kjit::detail
