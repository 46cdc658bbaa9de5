// Small matrix products, C = A·B, for the sizes where cuBLAS's own host cost per call is most of
// the time a product takes (docs/PERFORMANCE.md). kjit's
// matmul sends a product here when m·n·k·batch is at most a limit (jit/kernels/ops/small_matmul_plan.hpp).
//
// One block of 16×16 threads computes one 16×16 tile of C: it walks k in steps of 64, staging a
// 16×64 panel of A and a 64×16 panel of B in shared memory (each thread has its eight loads in
// flight at once: for k ≤ 64, one round trip to memory per product), and each thread accumulates
// its element in KJIT_SMM_ACC (float for float16 and bfloat16, the type itself otherwise), k in
// increasing order, one multiply-add at a time. Operands and result have any element strides
// (batch, row, column), zero included, so transposed and broadcast operands need no copy.
//
// The including source defines KJIT_SMM_T, KJIT_SMM_ACC and KJIT_SMM_NAME before this text.
#define KJIT_SMM_TILE 16
#define KJIT_SMM_KSTEP 64

extern "C" __global__ void __launch_bounds__(KJIT_SMM_TILE * KJIT_SMM_TILE)
KJIT_SMM_NAME(const KJIT_SMM_T* __restrict__ a, const KJIT_SMM_T* __restrict__ b, KJIT_SMM_T* __restrict__ c,
              long long m, long long n, long long k,
              long long a_batch, long long a_row, long long a_col,
              long long b_batch, long long b_row, long long b_col,
              long long c_batch, long long c_row, long long c_col) {
    typedef KJIT_SMM_T T;
    typedef KJIT_SMM_ACC Acc;
    constexpr int Q = KJIT_SMM_KSTEP / KJIT_SMM_TILE;  // loads per thread per operand and step
    __shared__ Acc panel_a[KJIT_SMM_TILE][KJIT_SMM_KSTEP + 1];
    __shared__ Acc panel_b[KJIT_SMM_KSTEP][KJIT_SMM_TILE + 1];
    const int tx = threadIdx.x % KJIT_SMM_TILE, ty = threadIdx.x / KJIT_SMM_TILE;
    const long long i = static_cast<long long>(blockIdx.y) * KJIT_SMM_TILE + ty;  // row of C
    const long long j = static_cast<long long>(blockIdx.x) * KJIT_SMM_TILE + tx;  // column of C
    a += blockIdx.z * a_batch;
    b += blockIdx.z * b_batch;
    c += blockIdx.z * c_batch;
    Acc sum = Acc(0);
    for (long long k0 = 0; k0 < k; k0 += KJIT_SMM_KSTEP) {
        // Thread (ty, tx) loads A[i, k0 + tx + 16q] and B[k0 + ty + 16q, j]; outside, zeros (the
        // padded terms are 0 * 0 and never reach an element of C).
#pragma unroll
        for (int q = 0; q < Q; ++q) {
            const long long ka = k0 + tx + q * KJIT_SMM_TILE, kb = k0 + ty + q * KJIT_SMM_TILE;
            panel_a[ty][tx + q * KJIT_SMM_TILE] = (i < m && ka < k) ? Acc(a[i * a_row + ka * a_col]) : Acc(0);
            panel_b[ty + q * KJIT_SMM_TILE][tx] = (kb < k && j < n) ? Acc(b[kb * b_row + j * b_col]) : Acc(0);
        }
        __syncthreads();
#pragma unroll 16
        for (int l = 0; l < KJIT_SMM_KSTEP; ++l) sum += panel_a[ty][l] * panel_b[l][tx];
        __syncthreads();
    }
    if (i < m && j < n) c[i * c_row + j * c_col] = T(sum);
}
