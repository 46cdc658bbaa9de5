// KJIT_API marks what libkjit.so exports. The library is built with hidden visibility, so only the
// public API (these headers) is part of its ABI; everything in kjit::jit, kjit::cache and
// kjit::detail stays inside it, and calls between kjit's own functions bind at link time.
#pragma once

#if defined(KJIT_STATIC_DEFINE) || !defined(__GNUC__)
#define KJIT_API
#else
#define KJIT_API __attribute__((visibility("default")))
#endif
