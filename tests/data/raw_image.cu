// Kernels built by nvcc at build time (tests/CMakeLists.txt) into a cubin, PTX, a fatbin and
// LTO-IR, which raw_image_test.cpp loads with RawModule::from_file.

// y = 3 x + 1
extern "C" __global__ void affine(const float* x, float* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 3.0f * x[i] + 1.0f;
}

// C++ linkage: found by its mangled name, _Z6negatePKfPfi.
__global__ void negate(const float* x, float* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = -x[i];
}
