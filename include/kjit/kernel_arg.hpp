// kjit::KernelArg: one argument of a kernel call, an array or a scalar, so that a call reads
// `kernel({x, 2.5f, y})`. It refers to the array passed (no copy, no reference count touched):
// a KernelArg lives only for the call it is written in.
#pragma once

#include "kjit/export.hpp"

#include "kjit/array.hpp"
#include "kjit/scalar.hpp"

namespace kjit {

class KJIT_API KernelArg {
public:
    KernelArg(const Array& array) noexcept : array_(&array) {}  // NOLINT(google-explicit-constructor)
    KernelArg(const Scalar& scalar) noexcept : scalar_(scalar) {}  // NOLINT
    template <class T, std::enable_if_t<std::is_constructible_v<Scalar, T> && !std::is_same_v<T, Array>, int> = 0>
    KernelArg(T value) noexcept : scalar_(Scalar(value)) {}  // NOLINT

    bool is_array() const noexcept { return array_ != nullptr; }
    const Array& array() const noexcept { return *array_; }
    const Scalar& scalar() const noexcept { return scalar_; }

private:
    const Array* array_ = nullptr;
    Scalar scalar_;
};

}  // namespace kjit
