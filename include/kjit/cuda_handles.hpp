// The driver's handle types, declared exactly as <cuda.h> declares them, so that kjit's headers
// need not include it: an application that includes <cuda.h> as well gets the same types.
#pragma once

typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
