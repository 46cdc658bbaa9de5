// The kernel first_call_floor.cpp loads: kjit's small variant of y = a*x + b, written by hand.
struct Args {
    const float* x;
    float a, b;
    float* y;
    long long n, pad;
};
extern "C" __global__ void __launch_bounds__(256) axpb_small(const Args args) {
    const int e = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (e < static_cast<int>(args.n)) args.y[e] = args.a * args.x[e] + args.b;
}
