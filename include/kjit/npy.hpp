// NumPy's .npy files (format versions 1.0, 2.0 and 3.0), for every kjit dtype.
//
// bfloat16 is written with the descr 'bfloat16', which NumPy reads once ml_dtypes is imported.
// Files are always written little-endian; big-endian files are byte-swapped when read.
#pragma once

#include "kjit/export.hpp"

#include <string>

#include "kjit/array.hpp"

namespace kjit {

// Reads `path` into a new array on `device` (the host by default), keeping Fortran order as
// Fortran strides. A missing, truncated or malformed file throws IoError naming the file and the
// problem.
KJIT_API Array load_npy(const std::string& path, Device device = Device::cpu(), const Stream& stream = Stream::current());

// Writes `array` (any layout, on any device) to `path`: C order unless the array is Fortran
// contiguous, which is then written with fortran_order True. The file is written to a temporary
// name and renamed into place, so a failure never leaves a half-written file at `path`.
KJIT_API void save_npy(const std::string& path, const Array& array, const Stream& stream = Stream::current());

}  // namespace kjit
