// A binary a raw module is made from (RawModule::from_file / from_image): what kind it is, the
// architectures it holds, and loading it on a device. A binary is its own build: it gets no cache
// entry, and loading it compiles nothing but PTX, which the driver compiles for the GPU.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kjit/raw_kernel.hpp"
#include "runtime/detail/module.hpp"

namespace kjit::jit::kernels {

struct BinaryImage {
    ImageKind kind = ImageKind::cubin;
    std::vector<unsigned char> bytes;  // PTX: its text, without a terminating NUL
    std::string origin;                // for errors: "file /path/k.cubin" or "a cubin image"
    // What it was built for: "sm_90" (a cubin), "compute_90" or "compute_90a" (PTX), and one per
    // entry of a fatbin ("sm_80", "compute_90"). Empty when the bytes do not say.
    std::vector<std::string> archs;
    std::string key;  // "image:" + a hash of the bytes: names the module in the process's registry
};

// The kind of `bytes` from their first bytes: an ELF (cubin), a fatbin's or LTO-IR's magic
// number, or text (PTX). Throws Error naming `origin` when it is none of them.
ImageKind detect_image_kind(const std::vector<unsigned char>& bytes, const std::string& origin);

// Checks `bytes` as a `kind` and reads what it was built for. Throws Error naming `origin` when the
// bytes are not what `kind` says (a truncated ELF, PTX without a .target).
BinaryImage read_image(std::vector<unsigned char> bytes, ImageKind kind, std::string origin);

// The image loaded on device `ordinal`, once per process and device; LTO-IR linked first for the
// device's architecture (link_ltoir). Throws Error naming the module (`label`), the image's
// architectures and the device's when none of its code runs there.
std::shared_ptr<detail::LoadedModule> load_image(const BinaryImage& image, const std::string& label, int ordinal);

// LTO-IR `image` linked by nvJitLink (-lto) into a cubin for `arch` ("sm_90"), not cached (a binary
// gets no cache entry of its own). Throws LinkError naming the module with nvJitLink's log (code
// for another architecture), NoDeviceError without nvJitLink.
std::vector<unsigned char> link_ltoir(const BinaryImage& image, const std::string& label, const std::string& arch);

}  // namespace kjit::jit::kernels
