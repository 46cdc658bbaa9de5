// kjit's source identity: a hash of the library's sources and templates made at build time
// (cmake/source_hash.cmake). It names plan notes, so that a note made by one kjit never steers
// another whose generated code may differ.
#pragma once

namespace kjit::jit::compile {

extern const char kSourceIdentity[];  // 32 hex digits

}  // namespace kjit::jit::compile
