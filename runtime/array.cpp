// Array metadata and views: shapes, strides, contiguity, reshape/transpose/slice/broadcast.
// Nothing here touches memory; copies live in array_transfer.cpp.
#include "kjit/array.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "kjit/error.hpp"

namespace kjit {
namespace {

bool multiply_overflows(std::int64_t a, std::int64_t b, std::int64_t& out) {
    return __builtin_mul_overflow(a, b, &out);
}

void check_shape(const Shape& shape, const char* what) {
    std::int64_t total = 1;
    for (std::int64_t e : shape) {
        if (e < 0) throw ShapeError(std::string(what) + ": negative extent in shape " + shape_to_string(shape));
        if (multiply_overflows(total, e, total))
            throw ShapeError(std::string(what) + ": shape " + shape_to_string(shape) + " has too many elements");
    }
}

}  // namespace

std::string shape_to_string(const Shape& shape) {
    std::string s = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i > 0) s += ", ";
        s += std::to_string(shape[i]);
    }
    if (shape.size() == 1) s += ",";
    return s + ")";
}

std::int64_t shape_size(const Shape& shape) {
    std::int64_t n = 1;
    for (std::int64_t e : shape) n *= e;
    return n;
}

Strides c_strides(const Shape& shape) {
    Strides st(shape.size());
    std::int64_t acc = 1;
    for (std::size_t i = shape.size(); i-- > 0;) {
        st[i] = acc;
        acc *= std::max<std::int64_t>(shape[i], 1);
    }
    return st;
}

Strides f_strides(const Shape& shape) {
    Strides st(shape.size());
    std::int64_t acc = 1;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        st[i] = acc;
        acc *= std::max<std::int64_t>(shape[i], 1);
    }
    return st;
}

Shape broadcast_shapes(const std::vector<Shape>& shapes) {
    std::size_t nd = 0;
    for (const Shape& s : shapes) nd = std::max(nd, s.size());
    Shape out(nd, 1);
    for (std::size_t k = 0; k < nd; ++k) {
        for (const Shape& s : shapes) {
            if (k >= s.size()) continue;
            const std::int64_t e = s[s.size() - 1 - k];
            std::int64_t& o = out[nd - 1 - k];
            if (e == o || e == 1) continue;
            if (o == 1) {
                o = e;
                continue;
            }
            std::string all;
            for (const Shape& t : shapes) all += (all.empty() ? "" : ", ") + shape_to_string(t);
            throw ShapeError("shapes " + all + " cannot be broadcast together: extents " + std::to_string(o) +
                             " and " + std::to_string(e) + " differ in axis " + std::to_string(-1 - static_cast<int>(k)) +
                             " (counted from the end) and neither is 1");
        }
    }
    return out;
}

Array Array::view_of(std::shared_ptr<Buffer> buffer, DType dtype, const Shape& shape, const Strides& strides,
                     std::int64_t offset) {
    if (!buffer) throw Error("Array::view_of: null buffer");
    check_shape(shape, "Array::view_of");
    if (strides.size() != shape.size())
        throw ShapeError("Array::view_of: " + std::to_string(strides.size()) + " strides for a shape of rank " +
                         std::to_string(shape.size()));
    if (shape_size(shape) > 0) {
        // The lowest and highest element the view reaches must lie inside the buffer.
        std::int64_t lo = offset, hi = offset;
        for (std::size_t i = 0; i < shape.size(); ++i) {
            const std::int64_t reach = (shape[i] - 1) * strides[i];
            (reach < 0 ? lo : hi) += reach;
        }
        const auto capacity = static_cast<std::int64_t>(buffer->size() / dtype.itemsize());
        if (lo < 0 || hi >= capacity)
            throw ShapeError("Array::view_of: shape " + shape_to_string(shape) + " with these strides and offset " +
                             std::to_string(offset) + " reaches elements " + std::to_string(lo) + ".." +
                             std::to_string(hi) + " but the buffer holds " + std::to_string(capacity) + " " +
                             std::string(dtype.name()) + " elements");
    }
    return Array(std::move(buffer), dtype, shape, strides, offset);
}

Array Array::wrap(void* data, DType dtype, const Shape& shape, Device device, const Strides& strides) {
    check_shape(shape, "Array::wrap");
    const Strides st = strides.empty() ? c_strides(shape) : strides;
    if (st.size() != shape.size()) throw ShapeError("Array::wrap: strides and shape differ in rank");
    // Borrow exactly the span the view reaches, starting at its lowest element.
    std::int64_t lo = 0, hi = 0;
    if (shape_size(shape) > 0) {
        for (std::size_t i = 0; i < shape.size(); ++i) {
            const std::int64_t reach = (shape[i] - 1) * st[i];
            (reach < 0 ? lo : hi) += reach;
        }
    }
    const std::int64_t n = shape_size(shape) == 0 ? 0 : hi - lo + 1;
    char* base = static_cast<char*>(data) + lo * static_cast<std::int64_t>(dtype.itemsize());
    auto buf = Buffer::borrow(base, static_cast<std::size_t>(n) * dtype.itemsize(), device);
    return Array(std::move(buf), dtype, shape, st, -lo);
}

Device Array::device() const { return buffer_ ? buffer_->device() : Device::cpu(); }

void* Array::data() const noexcept {
    if (!buffer_ || buffer_->data() == nullptr) return nullptr;
    return static_cast<char*>(buffer_->data()) + offset_ * static_cast<std::int64_t>(itemsize());
}

bool Array::is_c_contiguous() const noexcept {
    std::int64_t expected = 1;
    for (std::size_t i = shape_.size(); i-- > 0;) {
        if (shape_[i] == 0) return true;
        if (shape_[i] == 1) continue;  // the stride of an extent-1 axis never matters
        if (strides_[i] != expected) return false;
        expected *= shape_[i];
    }
    return true;
}

bool Array::is_f_contiguous() const noexcept {
    std::int64_t expected = 1;
    for (std::size_t i = 0; i < shape_.size(); ++i) {
        if (shape_[i] == 0) return true;
        if (shape_[i] == 1) continue;
        if (strides_[i] != expected) return false;
        expected *= shape_[i];
    }
    return true;
}

Array Array::with_layout(Shape shape, Strides strides, std::int64_t offset) const {
    return Array(buffer_, dtype_, std::move(shape), std::move(strides), offset);
}

int Array::normalise_axis(int axis, int ndim_for, const char* what) const {
    if (axis < -ndim_for || axis >= ndim_for)
        throw ShapeError(std::string(what) + ": axis " + std::to_string(axis) + " is out of range for an array of shape " +
                         shape_to_string(shape_) + " (valid: " + std::to_string(-ndim_for) + ".." +
                         std::to_string(ndim_for - 1) + ")");
    return axis < 0 ? axis + ndim_for : axis;
}

Array Array::reshape(const Shape& requested) const {
    // Resolve one -1 extent from the others.
    Shape shape = requested;
    int infer = -1;
    std::int64_t known = 1;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] == -1) {
            if (infer >= 0) throw ShapeError("reshape: more than one -1 in " + shape_to_string(requested));
            infer = static_cast<int>(i);
        } else if (shape[i] < 0) {
            throw ShapeError("reshape: negative extent in " + shape_to_string(requested));
        } else if (multiply_overflows(known, shape[i], known)) {
            throw ShapeError("reshape: " + shape_to_string(requested) + " has too many elements");
        }
    }
    const std::int64_t n = size();
    if (infer >= 0) {
        if (known == 0 || n % known != 0)
            throw ShapeError("reshape: cannot reshape an array of size " + std::to_string(n) + " into shape " +
                             shape_to_string(requested));
        shape[infer] = n / known;
        known *= shape[infer];
    }
    if (known != n)
        throw ShapeError("reshape: cannot reshape an array of shape " + shape_to_string(shape_) + " (size " +
                         std::to_string(n) + ") into shape " + shape_to_string(requested));
    if (n == 0) return with_layout(shape, c_strides(shape), offset_);

    // NumPy's no-copy reshape in C order: walk old and new axes (ignoring extent-1 axes of the
    // old shape), grouping runs whose products match; each old run must be contiguous within
    // itself, and its new axes get strides derived from the run's innermost stride.
    Shape old_dims;
    Strides old_strides;
    for (std::size_t i = 0; i < shape_.size(); ++i) {
        if (shape_[i] != 1) {
            old_dims.push_back(shape_[i]);
            old_strides.push_back(strides_[i]);
        }
    }
    Strides new_strides(shape.size(), 0);
    std::size_t oi = 0, oj = 1, ni = 0, nj = 1;
    const std::size_t old_nd = old_dims.size(), new_nd = shape.size();
    while (ni < new_nd && oi < old_nd) {
        std::int64_t np = shape[ni], op = old_dims[oi];
        while (np != op) {
            if (np < op) {
                np *= shape[nj++];
            } else {
                op *= old_dims[oj++];
            }
        }
        for (std::size_t ok = oi; ok + 1 < oj; ++ok) {
            if (old_strides[ok] != old_dims[ok + 1] * old_strides[ok + 1])
                throw ShapeError("reshape: an array of shape " + shape_to_string(shape_) +
                                 " with these strides cannot be viewed as shape " + shape_to_string(requested) +
                                 " without a copy; make a contiguous copy first");
        }
        new_strides[nj - 1] = old_strides[oj - 1];
        for (std::size_t nk = nj - 1; nk > ni; --nk) new_strides[nk - 1] = new_strides[nk] * shape[nk];
        ni = nj++;
        oi = oj++;
    }
    const std::int64_t last = ni >= 1 ? new_strides[ni - 1] : 1;
    for (std::size_t nk = ni; nk < new_nd; ++nk) new_strides[nk] = last;
    return with_layout(shape, new_strides, offset_);
}

Array Array::transpose() const {
    return with_layout(Shape(shape_.rbegin(), shape_.rend()), Strides(strides_.rbegin(), strides_.rend()), offset_);
}

Array Array::permute(const std::vector<int>& axes) const {
    if (static_cast<int>(axes.size()) != ndim())
        throw ShapeError("permute: " + std::to_string(axes.size()) + " axes given for an array of rank " +
                         std::to_string(ndim()));
    std::vector<bool> seen(axes.size(), false);
    Shape shape(axes.size());
    Strides strides(axes.size());
    for (std::size_t i = 0; i < axes.size(); ++i) {
        const int a = normalise_axis(axes[i], ndim(), "permute");
        if (seen[a]) throw ShapeError("permute: axis " + std::to_string(axes[i]) + " repeated");
        seen[a] = true;
        shape[i] = shape_[a];
        strides[i] = strides_[a];
    }
    return with_layout(shape, strides, offset_);
}

Array Array::swapaxes(int a, int b) const {
    std::vector<int> axes(ndim());
    std::iota(axes.begin(), axes.end(), 0);
    std::swap(axes[normalise_axis(a, ndim(), "swapaxes")], axes[normalise_axis(b, ndim(), "swapaxes")]);
    return permute(axes);
}

Array Array::slice(int axis, Slice s) const {
    const int ax = normalise_axis(axis, ndim(), "slice");
    const std::int64_t n = shape_[ax];
    if (s.step == 0) throw ShapeError("slice: step cannot be zero");
    std::int64_t start, stop;
    if (s.step > 0) {
        start = s.start.value_or(0);
        stop = s.stop.value_or(n);
        if (start < 0) start += n;
        if (stop < 0) stop += n;
        start = std::clamp<std::int64_t>(start, 0, n);
        stop = std::clamp<std::int64_t>(stop, 0, n);
    } else {
        start = s.start ? *s.start : n - 1;
        if (s.start && start < 0) start += n;
        stop = s.stop ? *s.stop : -1;
        if (s.stop && stop < 0) stop += n;
        start = std::clamp<std::int64_t>(start, -1, n - 1);
        stop = std::clamp<std::int64_t>(stop, -1, n - 1);
    }
    std::int64_t length = 0;
    if (s.step > 0 && stop > start) length = (stop - start + s.step - 1) / s.step;
    if (s.step < 0 && start > stop) length = (start - stop + (-s.step) - 1) / (-s.step);
    Shape shape = shape_;
    Strides strides = strides_;
    shape[ax] = length;
    strides[ax] = strides_[ax] * s.step;
    const std::int64_t offset = length > 0 ? offset_ + start * strides_[ax] : offset_;
    return with_layout(shape, strides, offset);
}

Array Array::index(int axis, std::int64_t i) const {
    const int ax = normalise_axis(axis, ndim(), "index");
    const std::int64_t n = shape_[ax];
    if (i < -n || i >= n)
        throw ShapeError("index: " + std::to_string(i) + " is out of range for axis " + std::to_string(axis) +
                         " of extent " + std::to_string(n));
    if (i < 0) i += n;
    Shape shape = shape_;
    Strides strides = strides_;
    shape.erase(shape.begin() + ax);
    strides.erase(strides.begin() + ax);
    return with_layout(shape, strides, offset_ + i * strides_[ax]);
}

Array Array::broadcast_to(const Shape& target) const {
    check_shape(target, "broadcast_to");
    if (target.size() < shape_.size())
        throw ShapeError("broadcast_to: cannot broadcast shape " + shape_to_string(shape_) + " to the lower-rank " +
                         shape_to_string(target));
    const std::size_t lead = target.size() - shape_.size();
    Strides strides(target.size(), 0);
    for (std::size_t i = 0; i < shape_.size(); ++i) {
        const std::int64_t have = shape_[i], want = target[lead + i];
        if (have == want) {
            strides[lead + i] = strides_[i];
        } else if (have != 1) {
            throw ShapeError("broadcast_to: cannot broadcast shape " + shape_to_string(shape_) + " to " +
                             shape_to_string(target) + ": axis " + std::to_string(i) + " has extent " +
                             std::to_string(have) + ", not 1 or " + std::to_string(want));
        }
    }
    return with_layout(target, strides, offset_);
}

Array Array::squeeze() const {
    Shape shape;
    Strides strides;
    for (std::size_t i = 0; i < shape_.size(); ++i) {
        if (shape_[i] == 1) continue;
        shape.push_back(shape_[i]);
        strides.push_back(strides_[i]);
    }
    return with_layout(shape, strides, offset_);
}

Array Array::squeeze(int axis) const {
    const int ax = normalise_axis(axis, ndim(), "squeeze");
    if (shape_[ax] != 1)
        throw ShapeError("squeeze: axis " + std::to_string(axis) + " of shape " + shape_to_string(shape_) +
                         " has extent " + std::to_string(shape_[ax]) + ", not 1");
    return index(ax, 0);
}

Array Array::expand_dims(int axis) const {
    const int ax = normalise_axis(axis, ndim() + 1, "expand_dims");
    Shape shape = shape_;
    Strides strides = strides_;
    const std::int64_t stride = ax < ndim() ? strides_[ax] * std::max<std::int64_t>(shape_[ax], 1) : 1;
    shape.insert(shape.begin() + ax, 1);
    strides.insert(strides.begin() + ax, stride);
    return with_layout(shape, strides, offset_);
}

Array Array::view_as(DType dtype) const {
    if (dtype.itemsize() != itemsize())
        throw TypeError("view_as: cannot view " + std::string(dtype_.name()) + " elements (" +
                        std::to_string(itemsize()) + " bytes) as " + std::string(dtype.name()) + " (" +
                        std::to_string(dtype.itemsize()) + " bytes)");
    return Array(buffer_, dtype, shape_, strides_, offset_);
}

void Array::record_stream(const Stream& stream) const {
    if (buffer_) buffer_->record_stream(stream);
}

std::string Array::to_string() const {
    if (!valid()) return "Array(invalid)";
    return "Array(" + std::string(dtype_.name()) + ", " + shape_to_string(shape_) + ", " + device().to_string() + ")";
}

}  // namespace kjit
