// float16 and bfloat16 for generated code: CUDA's own __half and __nv_bfloat16, whose operators,
// conversions and math overloads are the semantics kjit's language promises. Their headers cost
// about 5 ms (cuda_fp16.h) and 9 ms (cuda_bf16.h) per compile (docs/perf-log.md), so each is
// included only when the generated code defines KJIT_USE_FLOAT16 / KJIT_USE_BFLOAT16 before this
// text. NVRTC 13 does not find them by itself: compile with CompileRequest::toolkit_headers.
#ifndef KJIT_SCALAR_TYPES_CUH
#define KJIT_SCALAR_TYPES_CUH

#ifdef KJIT_USE_FLOAT16
#include <cuda_fp16.h>
namespace kjit { typedef __half float16; }
#endif

#ifdef KJIT_USE_BFLOAT16
#include <cuda_bf16.h>
namespace kjit { typedef __nv_bfloat16 bfloat16; }
#endif

#endif  // KJIT_SCALAR_TYPES_CUH
