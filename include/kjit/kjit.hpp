// The umbrella header: everything public in kjit.
#pragma once

#include "kjit/array.hpp"
#include "kjit/buffer.hpp"
#include "kjit/cache.hpp"
#include "kjit/device.hpp"
#include "kjit/dtype.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/error.hpp"
#include "kjit/event.hpp"
#include "kjit/half.hpp"
#include "kjit/info.hpp"
#include "kjit/kernel_arg.hpp"
#include "kjit/npy.hpp"
#include "kjit/raw_kernel.hpp"
#include "kjit/scalar.hpp"
#include "kjit/stream.hpp"
#include "kjit/version.hpp"
