// Finding a CUDA program in the kernel cache, or compiling it, and loading it on a device: what
// every kind of kernel (elementwise kernels, raw modules) needs between "here is the source" and
// "here is a CUmodule".
//
// The order of places tried is the one docs/CACHE.md describes: a key computed without loading
// NVRTC (from the NVRTC identity recorded beside the writable folder), memory, the writable and
// the read-only folders, NVRTC; without NVRTC, an alias key; on a device the cache has no cubin
// for, PTX of an older architecture compiled by the driver, whose result is then cached.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cache/entry.hpp"
#include "jit/compile/linker.hpp"
#include "jit/compile/nvrtc_compiler.hpp"
#include "runtime/detail/module.hpp"

namespace kjit::jit::compile {

// A program and what the cache needs to know about it.
struct CachedProgram {
    // What NVRTC compiles. request.target is set by the functions below.
    CompileRequest request;
    // Hashed into cache keys in place of request.source: the source plus whatever else changes the
    // compiled bytes and is not an NVRTC option (a raw module's name expressions, say). Empty: the
    // source alone.
    std::string key_source;
    // Makes the manifest entry KJIT_CACHE_RECORD writes (and entries keep). Only recording and
    // compiling need it, so a cache hit does not pay for building the JSON.
    std::function<std::string()> spec_json;
    std::string kernel_name;  // entry metadata
    std::string types;        // entry metadata ("T=float32"), empty when none
    std::string description;  // for errors: "raw module 'scan'"
    // The program's own target ("sm_90a"), or empty: the device's (or KJIT_ARCH, or the default).
    // A program with a target of its own is built for it alone, and loads only where it runs.
    std::string arch;
    // Set for relocatable device code (-rdc, -dc): NVRTC's cubin is linked by nvJitLink with these
    // inputs (and the device runtime) into the entry's cubin, and the entry holds no PTX (PTX of
    // relocatable code cannot be loaded alone). The inputs' contents must be in key_source; the
    // full key adds nvJitLink's version and the device runtime's hash (the alias key does not, so
    // that a process without the toolkit finds the entry).
    std::optional<LinkPlan> link;
};

// The alias key of `program` as targeted now (program.request.target, which the functions below
// set): the name a process without NVRTC finds its entry by (cache/cache_key.hpp).
std::string alias_key(const CachedProgram& program);

struct FoundProgram {
    std::shared_ptr<const cache::Entry> entry;
    double compile_ms = 0;  // NVRTC's time when this call compiled, else 0
    std::string log;        // NVRTC's warnings when this call compiled
};

// The program built for `arch` ("sm_90"; empty: KJIT_ARCH, else the current device, else the
// default), from a cache or compiled now. Throws CompileError from NVRTC, NoDeviceError when it is
// in no cache and there is no NVRTC.
FoundProgram find_or_compile_program(CachedProgram& program, const std::string& arch);

struct LoadedProgram {
    std::shared_ptr<const cache::Entry> entry;
    std::shared_ptr<kjit::detail::LoadedModule> module;  // loaded once per entry and device in the process
    std::string arch;                              // what the loaded cubin was built for
    bool compiled_from_ptx = false;                // the driver compiled cached PTX for this GPU
};

// The program loaded on device `ordinal`: the cubin for its architecture, from a cache or compiled
// now, else cached PTX of an older architecture compiled by the driver (and that cubin cached).
LoadedProgram load_program(CachedProgram& program, int ordinal);

// What keys a call's programs on a GPU of compute capability `device_cc` now: the target it
// compiles for ("sm_90") and NVRTC's version key, and with `with_identity` the identity lines of
// that NVRTC's file (jit/compile/nvrtc_identity.hpp). Known without loading NVRTC from the identity
// recorded beside the writable folder; nothing when NVRTC is not loaded and no record holds.
struct ProgramKeying {
    std::string target;
    std::string nvrtc_version;
    std::string nvrtc_lines;  // empty unless asked for
};
std::optional<ProgramKeying> program_keying(int device_cc, bool with_identity = false);

// The module of the cache entry `key`, loaded on device `ordinal` (of compute capability
// `device_cc`) when a cache layer has it with a cubin that runs there; null otherwise (it never
// compiles). `spec_json` makes the manifest entry when the cache records one (`arch` with it).
std::shared_ptr<kjit::detail::LoadedModule> load_cached_program(const std::string& key, int ordinal, int device_cc,
                                                          const std::string& arch,
                                                          const std::function<std::string()>& spec_json);
// The module of `entry` (null: none) loaded on device `ordinal` when it holds a cubin that runs
// there (compute capability `device_cc`); null otherwise.
std::shared_ptr<kjit::detail::LoadedModule> load_entry_module(const std::shared_ptr<const cache::Entry>& entry, int ordinal,
                                                        int device_cc);

}  // namespace kjit::jit::compile
