#include "jit/host/host_reduction.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "jit/host/backend_loader.hpp"
#include "jit/host/host_arg_reduction.hpp"
#include "jit/host/host_pool.hpp"
#include "jit/kernels/reduction/calls.hpp"
#include "kjit/error.hpp"

namespace kjit::jit::host {

using namespace frontend;

ReductionCode compile_reduction_on_host(const ReductionKernel& kernel, const BoundCall& bound, const detail::ArgsLayout& args,
                                        bool& has_identity, std::size_t& value_size) {
    if (ReductionKernelAccess::generator(kernel)) {
        // kjit's own modules (argmin, argmax) have their host pieces written in C++.
        const bool max = kernel.name() == "kjit_argmax";
        const auto t = bound.types.find("T");
        if ((!max && kernel.name() != "kjit_argmin") || t == bound.types.end() || args.slots.size() != 2 || args.slots[0].offset != 0 ||
            args.slots[1].offset != 8)
            throw Error("reduction '" + kernel.name() + "' is a GPU module kjit writes itself: it has no host version");
        has_identity = true;
        value_size = kArgValueSize;
        return arg_reduction_code(max, t->second);
    }
    if (!kernel.options().preamble.empty())
        throw Error("reduction '" + kernel.name() + "' cannot run on host arrays: its preamble is raw CUDA, which only the GPU compiles");
    HostBackend& backend = host_backend();
    const codegen::CheckedReduction checked = kernels::check_reduction(kernel, bound.types);
    ReductionRequest request;
    request.name = kernel.name();
    request.reduction = &checked;
    request.scalar = bound.scalar;
    request.storage = bound.storage;
    request.args = args;
    has_identity = checked.has_identity;
    value_size = codegen::reduce_value_layout(checked).size;
    return backend.compile_reduction(request);
}

namespace {

// The widest running value: a struct's (a dtype has at most 16 bytes, complex128).
constexpr std::size_t kMaxValue = codegen::kMaxReduceValueBytes;
// Neighbouring outputs folded together when reducing outer axes (FoldColumnsFn): their lanes,
// 8 * 256 values of at most 16 bytes (fewer outputs for wider struct values), stay in the L1
// cache while rows of the inputs stream past.
constexpr std::int64_t kColumnWidth = 256;
constexpr std::size_t kColumnLaneBytes = kReduceLanes * kColumnWidth * 16;

// One partial result: a value of the reduce type and whether it holds one.
struct Partial {
    alignas(16) unsigned char value[kMaxValue];
    unsigned char ok;
};

class Runner {
public:
    explicit Runner(const HostReduction& r) : r_(r), p_(*r.plan), v_(r.value_size) {
        inputs_ = static_cast<int>(p_.in_strides.size());
        outputs_ = static_cast<int>(p_.out_strides.size());
        if (v_ > kMaxValue) throw Error("host reduction: a reduce type of " + std::to_string(v_) + " bytes");
        // Outer axes reduced (one reduced dimension that some input does not read contiguously,
        // neighbouring outputs next to each other in every input): fold blocks of outputs together.
        if (r.code->fold_columns != nullptr && !segmented() && p_.reduced_ndim == 1 && p_.kept_ndim >= 1) {
            bool unit_kept = true, unit_reduced = true;
            for (const auto& st : p_.in_strides) {
                const std::int64_t kept = st[static_cast<std::size_t>(p_.kept_ndim - 1)], red = st[static_cast<std::size_t>(p_.kept_ndim)];
                unit_kept = unit_kept && (kept == 1 || kept == 0);
                unit_reduced = unit_reduced && (red == 1 || red == 0);
            }
            extent_ = p_.shape[static_cast<std::size_t>(p_.kept_ndim - 1)];
            columns_ = unit_kept && !unit_reduced && extent_ > 1;
        }
    }

    // The partial results of outputs o0 .. o0 + width - 1 (neighbours in the innermost kept
    // dimension) over elements [begin, end) of their rows: exactly what chunk() gives each.
    void column_block(std::int64_t o0, std::int64_t width, std::int64_t begin, std::int64_t end, Partial* out) const {
        alignas(16) unsigned char acc[kColumnLaneBytes];
        unsigned char ok[kReduceLanes * kColumnWidth] = {};
        const std::int64_t lanes = kReduceLanes * width;
        if (r_.code->identity != nullptr) {
            r_.code->identity(acc);
            for (std::int64_t l = 1; l < lanes; ++l) std::memcpy(acc + l * static_cast<std::int64_t>(v_), acc, v_);
            std::fill(ok, ok + lanes, 1);
        } else {
            std::memset(acc, 0, static_cast<std::size_t>(lanes) * v_);
        }
        std::int64_t base[detail::kMaxCallOperands], stride[detail::kMaxCallOperands], step[detail::kMaxCallOperands];
        kept_offsets(o0, p_.in_strides, inputs_, base);
        for (int s = 0; s < inputs_; ++s) {
            const auto& st = p_.in_strides[static_cast<std::size_t>(s)];
            step[s] = st[static_cast<std::size_t>(p_.kept_ndim - 1)];
            stride[s] = st[static_cast<std::size_t>(p_.kept_ndim)];
            base[s] += begin * stride[s];
        }
        r_.code->fold_columns(r_.args, base, stride, step, end - begin, width, begin, p_.reduced_size, acc, ok);
        auto value = [&](std::int64_t l, std::int64_t w) { return acc + (l * width + w) * static_cast<std::int64_t>(v_); };
        for (std::int64_t w = 0; w < width; ++w) {
            for (int d = kReduceLanes / 2; d >= 1; d /= 2)
                for (int l = 0; l < d; ++l) r_.code->combine(value(l, w), ok + l * width + w, value(l + d, w), ok + (l + d) * width + w);
            std::memcpy(out[w].value, value(0, w), v_);
            out[w].ok = ok[w];
        }
    }

    // Output o's range of reduced elements: its inputs' offsets of element 0 and the count.
    void row_of(std::int64_t o, std::int64_t* base, std::int64_t& count) const {
        if (r_.segment_offsets != nullptr) {
            const std::int64_t total = p_.reduced_size;
            const std::int64_t b = std::clamp<std::int64_t>(r_.segment_offsets[o], 0, total);
            const std::int64_t e = std::clamp<std::int64_t>(r_.segment_offsets[o + 1], b, total);
            for (int s = 0; s < inputs_; ++s) base[s] = b * p_.in_strides[static_cast<std::size_t>(s)][1];
            count = e - b;
            return;
        }
        kept_offsets(o, p_.in_strides, inputs_, base);
        count = p_.reduced_size;
    }

    // The partial result of elements [begin, end) of output o's row (`base`, `n` from row_of).
    void chunk(const std::int64_t* base, std::int64_t begin, std::int64_t end, std::int64_t n, Partial& out) const {
        alignas(16) unsigned char acc[kReduceLanes * kMaxValue] = {};
        unsigned char ok[kReduceLanes] = {};
        if (r_.code->identity != nullptr) {
            for (int l = 0; l < kReduceLanes; ++l) r_.code->identity(acc + l * v_);
            std::fill(ok, ok + kReduceLanes, 1);
        }
        const int kept = p_.kept_ndim, reduced = segmented() ? 1 : p_.reduced_ndim;
        const std::int64_t inner = reduced == 0 ? 1 : p_.shape[static_cast<std::size_t>(kept + reduced - 1)];
        std::int64_t off[detail::kMaxCallOperands], stride[detail::kMaxCallOperands];
        for (int s = 0; s < inputs_; ++s)
            stride[s] = reduced == 0 ? 0 : p_.in_strides[static_cast<std::size_t>(s)][static_cast<std::size_t>(kept + reduced - 1)];
        for (std::int64_t e = begin; e < end;) {
            // The offsets of element e: its coordinates over the reduced dimensions, innermost first.
            for (int s = 0; s < inputs_; ++s) off[s] = base[s];
            if (!segmented()) {
                std::int64_t rest = e;
                for (int d = kept + reduced - 1; d >= kept; --d) {
                    const std::int64_t extent = p_.shape[static_cast<std::size_t>(d)];
                    const std::int64_t c = rest % extent;
                    rest /= extent;
                    for (int s = 0; s < inputs_; ++s) off[s] += c * p_.in_strides[static_cast<std::size_t>(s)][static_cast<std::size_t>(d)];
                }
            } else {
                for (int s = 0; s < inputs_; ++s) off[s] += e * stride[s];
            }
            const std::int64_t count = segmented() ? end - e : std::min(inner - e % inner, end - e);
            r_.code->fold(r_.args, off, stride, count, e, n, acc, ok);
            e += count;
        }
        for (int d = kReduceLanes / 2; d >= 1; d /= 2)
            for (int l = 0; l < d; ++l) r_.code->combine(acc + l * v_, ok + l, acc + (l + d) * v_, ok + l + d);
        std::memcpy(out.value, acc, v_);
        out.ok = ok[0];
    }

    std::int64_t chunks_of(std::int64_t count) const { return std::max<std::int64_t>(1, (count + kChunkElements - 1) / kChunkElements); }

    // Output o whole, on this thread: its chunks in order, then post.
    void output(std::int64_t o) const {
        std::int64_t base[detail::kMaxCallOperands], n = 0;
        row_of(o, base, n);
        Partial v{}, c{};
        for (std::int64_t k = 0; k < chunks_of(n); ++k) {
            chunk(base, k * kChunkElements, std::min(n, (k + 1) * kChunkElements), n, k == 0 ? v : c);
            if (k > 0) r_.code->combine(v.value, &v.ok, c.value, &c.ok);
        }
        post(o, v, n);
    }

    void post(std::int64_t o, const Partial& v, std::int64_t n) const {
        std::int64_t out_off[detail::kMaxCallOperands];
        kept_offsets(o, p_.out_strides, outputs_, out_off);
        r_.code->post(r_.args, out_off, v.value, o, n);
    }

    bool segmented() const { return r_.segment_offsets != nullptr; }

    // Offsets of kept element o (C order over the kept dimensions) for each stride vector.
    void kept_offsets(std::int64_t o, const std::vector<std::vector<std::int64_t>>& strides, int count, std::int64_t* off) const {
        for (int s = 0; s < count; ++s) off[s] = 0;
        if (segmented()) {
            if (&strides == &p_.out_strides)
                for (int s = 0; s < count; ++s) off[s] = o * strides[static_cast<std::size_t>(s)][0];
            return;
        }
        for (int d = p_.kept_ndim - 1; d >= 0; --d) {
            const std::int64_t extent = p_.shape[static_cast<std::size_t>(d)];
            const std::int64_t c = o % extent;
            o /= extent;
            for (int s = 0; s < count; ++s) off[s] += c * strides[static_cast<std::size_t>(s)][static_cast<std::size_t>(d)];
        }
    }

    void run() const {
        const std::int64_t outputs = p_.kept_size;
        if (outputs == 0) return;
        if (segmented()) {
            // Groups of segments of about a chunk's elements on average each.
            const std::int64_t per = std::max<std::int64_t>(1, kChunkElements * outputs / std::max<std::int64_t>(1, p_.reduced_size));
            parallel_chunks((outputs + per - 1) / per, [&](std::int64_t g) {
                for (std::int64_t o = g * per; o < std::min(outputs, (g + 1) * per); ++o) output(o);
            });
            return;
        }
        const std::int64_t n = p_.reduced_size, chunks = chunks_of(n);
        std::vector<Partial> partials;
        if (columns_) {
            // Blocks of neighbouring outputs, each chunk of their rows in parallel; then below each
            // output's chunks in order.
            partials.resize(static_cast<std::size_t>(outputs * chunks));
            const std::int64_t column_width =
                std::min<std::int64_t>(kColumnWidth, static_cast<std::int64_t>(kColumnLaneBytes / (kReduceLanes * v_)));
            const std::int64_t per_row = (extent_ + column_width - 1) / column_width;
            parallel_chunks(outputs / extent_ * per_row * chunks, [&](std::int64_t item) {
                const std::int64_t block = item / chunks, k = item % chunks;
                const std::int64_t start = block % per_row * column_width;
                const std::int64_t o0 = block / per_row * extent_ + start, width = std::min(column_width, extent_ - start);
                Partial found[kColumnWidth];
                column_block(o0, width, k * kChunkElements, std::min(n, (k + 1) * kChunkElements), found);
                for (std::int64_t w = 0; w < width; ++w) partials[static_cast<std::size_t>((o0 + w) * chunks + k)] = found[w];
            });
        } else if (chunks == 1) {
            // Short rows: groups of whole outputs of about a chunk's elements each.
            const std::int64_t per = std::max<std::int64_t>(1, kChunkElements / std::max<std::int64_t>(1, n));
            parallel_chunks((outputs + per - 1) / per, [&](std::int64_t g) {
                for (std::int64_t o = g * per; o < std::min(outputs, (g + 1) * per); ++o) output(o);
            });
            return;
        }
        if (!columns_) {
            // Long rows: every (output, chunk) in parallel, then each output's chunks in order.
            partials.resize(static_cast<std::size_t>(outputs * chunks));
            parallel_chunks(outputs * chunks, [&](std::int64_t w) {
                const std::int64_t o = w / chunks, k = w % chunks;
                std::int64_t base[detail::kMaxCallOperands], count = 0;
                row_of(o, base, count);
                chunk(base, k * kChunkElements, std::min(count, (k + 1) * kChunkElements), count, partials[static_cast<std::size_t>(w)]);
            });
        }
        const std::int64_t per = std::max<std::int64_t>(1, 4096 / chunks);
        parallel_chunks((outputs + per - 1) / per, [&](std::int64_t g) {
            for (std::int64_t o = g * per; o < std::min(outputs, (g + 1) * per); ++o) {
                Partial& v = partials[static_cast<std::size_t>(o * chunks)];
                for (std::int64_t k = 1; k < chunks; ++k) {
                    const Partial& c = partials[static_cast<std::size_t>(o * chunks + k)];
                    r_.code->combine(v.value, &v.ok, c.value, &c.ok);
                }
                post(o, v, n);
            }
        });
    }

private:
    const HostReduction& r_;
    const detail::ReducePlan& p_;
    std::size_t v_;
    int inputs_ = 0, outputs_ = 0;
    bool columns_ = false;
    std::int64_t extent_ = 0;  // of the innermost kept dimension
};

}  // namespace

void run_reduction_on_host(const HostReduction& r) { Runner(r).run(); }

}  // namespace kjit::jit::host
