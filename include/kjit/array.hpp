// kjit::Array: an n-dimensional view of typed elements in a Buffer, on a device or on the host.
//
// Strides and the offset are counted in ELEMENTS, not bytes (as DLPack does; NumPy counts bytes).
// Strides may be negative (reversed views) or zero (broadcast views). Views share the buffer and
// never copy; copies are explicit (to(), to_host(), copy_to_host()).
#pragma once

#include "kjit/export.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kjit/buffer.hpp"
#include "kjit/device.hpp"
#include "kjit/dtype.hpp"
#include "kjit/stream.hpp"

struct DLManagedTensor;

namespace kjit {

using Shape = std::vector<std::int64_t>;
using Strides = std::vector<std::int64_t>;

// Python's slice: start:stop:step, missing ends default by the sign of step, negative indices
// count from the end, out-of-range ends are clamped.
struct KJIT_API Slice {
    std::optional<std::int64_t> start;
    std::optional<std::int64_t> stop;
    std::int64_t step = 1;
};

// "(2, 3)" as NumPy prints shapes; "()" for a scalar.
KJIT_API std::string shape_to_string(const Shape& shape);
// Number of elements: the product of the extents (1 for a scalar shape).
KJIT_API std::int64_t shape_size(const Shape& shape);
// C-order (row-major) strides, in elements.
KJIT_API Strides c_strides(const Shape& shape);
// Fortran-order (column-major) strides, in elements.
KJIT_API Strides f_strides(const Shape& shape);
// NumPy's broadcast of several shapes; throws ShapeError naming every shape when they disagree.
KJIT_API Shape broadcast_shapes(const std::vector<Shape>& shapes);

class KJIT_API Array {
public:
    // An array with no buffer; valid() is false.
    Array() = default;

    // Uninitialised C-order array. Device::cpu() gives host memory (pinned if asked).
    static Array empty(const Shape& shape, DType dtype, Device device = Device(),
                       const Stream& stream = Stream::current(), bool pinned = false);
    // A view of an existing buffer; checks that every element it can reach lies inside it.
    static Array view_of(std::shared_ptr<Buffer> buffer, DType dtype, const Shape& shape,
                         const Strides& strides, std::int64_t offset = 0);
    // Borrows memory kjit does not own (an external device pointer, say). C-order when `strides`
    // is empty. The caller keeps the memory alive as long as the array or its views are used.
    static Array wrap(void* data, DType dtype, const Shape& shape, Device device,
                      const Strides& strides = {});
    // Copies C-ordered elements from host memory into a new array on `device` (pageable or
    // pinned source; the copy is complete when this returns only for pageable memory).
    static Array from_host(const void* data, DType dtype, const Shape& shape, Device device = Device(),
                           const Stream& stream = Stream::current());

    bool valid() const noexcept { return buffer_ != nullptr; }
    DType dtype() const noexcept { return dtype_; }
    const Shape& shape() const noexcept { return shape_; }
    const Strides& strides() const noexcept { return strides_; }
    std::int64_t offset() const noexcept { return offset_; }
    int ndim() const noexcept { return static_cast<int>(shape_.size()); }
    std::int64_t size() const noexcept { return shape_size(shape_); }
    std::size_t itemsize() const noexcept { return dtype_.itemsize(); }
    std::size_t nbytes() const noexcept { return static_cast<std::size_t>(size()) * itemsize(); }
    Device device() const;
    bool is_host() const { return device().is_cpu(); }
    const std::shared_ptr<Buffer>& buffer() const noexcept { return buffer_; }
    // Address of the element at index (0, ..., 0).
    void* data() const noexcept;
    template <class T>
    T* data_as() const noexcept { return static_cast<T*>(data()); }

    bool is_c_contiguous() const noexcept;
    bool is_f_contiguous() const noexcept;
    bool is_contiguous() const noexcept { return is_c_contiguous() || is_f_contiguous(); }

    // --- views (no copies) ---
    // A view with a new shape (one extent may be -1); throws ShapeError when the elements are
    // not laid out so that a view can have that shape.
    Array reshape(const Shape& shape) const;
    Array transpose() const;                               // reverses the axes
    Array permute(const std::vector<int>& axes) const;     // NumPy's transpose(axes)
    Array swapaxes(int a, int b) const;
    Array slice(int axis, Slice s) const;                  // keeps the axis
    Array index(int axis, std::int64_t i) const;           // removes the axis; negative i counts from the end
    Array broadcast_to(const Shape& shape) const;          // zero strides; read-only in spirit
    Array squeeze() const;                                 // drops every extent-1 axis
    Array squeeze(int axis) const;
    Array expand_dims(int axis) const;
    // Same bytes seen as another dtype of the same size (float32 <-> int32...).
    Array view_as(DType dtype) const;

    // --- copies ---
    // A copy on `device` (host or GPU), C-ordered, for any layout (a non-contiguous device array
    // is packed by kjit's copy kernel on its device). Between two GPUs the bytes go peer to peer
    // where the pair allows it (enabled on first use), else through pinned host memory (then
    // to() returns when the copy is done); `stream` may belong to either GPU, and the other side
    // uses its default stream (see the three-stream form).
    Array to(Device device, const Stream& stream = Stream::current()) const;
    // Between two GPUs, ordered on a stream of each: the copy waits for the work queued on
    // `stream` (the source's device) and on `destination_stream` (`device`'s), and work queued on
    // either afterwards sees it.
    Array to(Device device, const Stream& stream, const Stream& destination_stream) const;
    Array to_host(const Stream& stream = Stream::current()) const { return to(Device::cpu(), stream); }
    // Writes the elements in C order to `dst` (size() * itemsize() bytes) and waits for the copy.
    void copy_to_host(void* dst, const Stream& stream = Stream::current()) const;
    // Overwrites the elements with size() * itemsize() bytes read from `src` in C order, in place
    // (a module's __constant__ table, say, which cannot be replaced); the array must be
    // C-contiguous. As from_host: the copy is complete when this returns only for pageable memory.
    void copy_from_host(const void* src, const Stream& stream = Stream::current()) const;

    // Records that `stream` uses this array, so that its memory is freed in order on it.
    void record_stream(const Stream& stream) const;

    // --- DLPack ---
    // A new DLManagedTensor sharing this array's memory; the consumer calls its deleter. Its
    // strides are always filled in (even for C order: DLPack 1.0 makes NULL strides invalid), and
    // data points at element (0,...,0) with byte_offset 0, so views with negative strides export.
    DLManagedTensor* to_dlpack() const;
    // Takes ownership of `tensor` (its deleter runs when the last view of it dies). Accepts CPU,
    // pinned-host and CUDA tensors of kjit's dtypes with any strides (NULL strides: C order).
    // If it throws, it has taken nothing: the caller still owns `tensor` and must call its
    // deleter (as DLPack's protocol expects, a tensor counts as consumed only once imported).
    static Array from_dlpack(DLManagedTensor* tensor);

    std::string to_string() const;  // "Array(float32, (2, 3), cuda:0)"

private:
    Array(std::shared_ptr<Buffer> buffer, DType dtype, Shape shape, Strides strides, std::int64_t offset)
        : buffer_(std::move(buffer)), dtype_(dtype), shape_(std::move(shape)), strides_(std::move(strides)),
          offset_(offset) {}
    Array with_layout(Shape shape, Strides strides, std::int64_t offset) const;
    int normalise_axis(int axis, int ndim_for, const char* what) const;

    std::shared_ptr<Buffer> buffer_;
    DType dtype_;
    Shape shape_;
    Strides strides_;
    std::int64_t offset_ = 0;
};

}  // namespace kjit
