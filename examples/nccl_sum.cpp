// A data-parallel sum over every local GPU: each device sums its slice of the data with a kjit
// reduction, and NCCL all-reduces the partial sums, so that every device holds the total. Checked
// against a sum on the host in double.
//
// kjit does not ship NCCL: it loads libnccl.so.2 at run time (KJIT_NCCL_LIBRARY=/path/to/libnccl.so.2
// if the loader does not find it, for example PyTorch's copy in
// site-packages/nvidia/nccl/lib/). With fewer than two GPUs or without NCCL this program says so
// and exits 0.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <kjit/kjit.hpp>

int main() {
    const int gpus = kjit::Device::count();
    if (gpus < 2) {
        std::printf("nccl_sum: needs two or more GPUs, this machine has %d%s%s; nothing to do\n", gpus,
                    gpus == 0 ? ": " : "", gpus == 0 ? kjit::no_device_reason().c_str() : "");
        return 0;
    }
    if (!kjit::nccl::available()) {
        std::printf("nccl_sum: NCCL is not available (%s); nothing to do\n", kjit::nccl::no_nccl_reason().c_str());
        return 0;
    }

    // The data: 2^26 floats in [0, 1), and their sum on the host.
    const std::int64_t n = std::int64_t{1} << 26;
    std::vector<float> host(static_cast<std::size_t>(n));
    std::mt19937 rng(38);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    double reference = 0;
    for (float& x : host) {
        x = uniform(rng);
        reference += x;
    }

    // One communicator per GPU, and each GPU's slice summed there.
    std::vector<kjit::Device> devices;
    for (int d = 0; d < gpus; ++d) devices.push_back(kjit::Device::cuda(d));
    std::vector<kjit::nccl::Communicator> comms = kjit::nccl::Communicator::local(devices);
    std::vector<kjit::Array> partial;
    for (int d = 0; d < gpus; ++d) {
        const std::int64_t begin = n * d / gpus, end = n * (d + 1) / gpus;
        const kjit::Array slice =
            kjit::Array::from_host(host.data() + begin, kjit::DType::float32, {end - begin}, devices[d]);
        partial.push_back(kjit::sum(slice));  // a 0-d float32 array on devices[d], on its default stream
    }

    // Every partial sum replaced by the total, in place, in one NCCL group (on each device's default
    // stream, after the reductions).
    kjit::nccl::all_reduce(comms, partial, partial, kjit::nccl::Op::sum);

    bool ok = true;
    for (int d = 0; d < gpus; ++d) {
        float total = 0;
        partial[d].copy_to_host(&total);  // waits for the all-reduce on that device
        const double error = std::fabs(total - reference) / reference;
        std::printf("cuda:%d: %.6e (relative difference %.1e)\n", d, static_cast<double>(total), error);
        ok = ok && error < 1e-5;
    }
    std::printf("host reference: %.6e; NCCL %d over %d GPUs: %s\n", reference, kjit::nccl::version(), gpus,
                ok ? "correct" : "WRONG");
    return ok ? 0 : 1;
}
