// Where arrays live and kernels run: a CUDA device (by ordinal) or the host CPU.
#pragma once

#include "kjit/export.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace kjit {

struct KJIT_API DeviceProperties {
    std::string name;
    int ordinal = 0;
    int cc_major = 0;
    int cc_minor = 0;
    int sm_count = 0;
    std::size_t total_memory = 0;  // bytes
    int max_threads_per_block = 0;
    std::size_t shared_memory_per_block = 0;  // bytes, the opt-in maximum
    std::size_t l2_cache_bytes = 0;
    std::string pci_bus_id;
    // "sm_90" for compute capability 9.0.
    std::string arch() const;
};

class KJIT_API Device {
public:
    enum class Kind { cpu, cuda };

    // The calling thread's current CUDA device (device 0 until set_current() says otherwise).
    Device() noexcept : Device(Kind::cuda, -1) {}

    static Device cpu() noexcept { return Device(Kind::cpu, 0); }
    // Does not touch the driver; an ordinal that does not exist fails where it is used.
    static Device cuda(int ordinal) noexcept { return Device(Kind::cuda, ordinal); }

    Kind kind() const noexcept { return kind_; }
    bool is_cpu() const noexcept { return kind_ == Kind::cpu; }
    bool is_cuda() const noexcept { return kind_ == Kind::cuda; }
    // The ordinal; for Device() the calling thread's current device.
    int ordinal() const;
    std::string to_string() const;  // "cuda:0", "cpu"

    friend bool operator==(const Device& a, const Device& b) {
        return a.kind_ == b.kind_ && (a.is_cpu() || a.ordinal() == b.ordinal());
    }

    // --- CUDA devices; each throws NoDeviceError when there is no driver or no GPU ---
    static int count();                       // 0 when there is no driver or no GPU: never throws
    static Device current();                  // this thread's current device
    static void set_current(int ordinal);     // makes its primary context current on this thread
    DeviceProperties properties() const;
    // Free and total memory right now, in bytes (cuMemGetInfo).
    std::pair<std::size_t, std::size_t> memory_info() const;
    // Waits for all work on the device (its primary context) to finish.
    void synchronize() const;

private:
    Device(Kind kind, int ordinal) noexcept : kind_(kind), ordinal_(ordinal) {}
    Kind kind_;
    int ordinal_;
};

// Why Device::count() is 0, in words ("libcuda.so.1 not found: ..."), or empty if there are GPUs.
KJIT_API std::string no_device_reason();

// Driver version as CUDA numbers it (13000 for 13.0); throws NoDeviceError without a driver.
KJIT_API int driver_version();

}  // namespace kjit
