// `kjit bench --crossover`: where the GPU starts to pay (issue 8).
#pragma once

#include <string>

namespace kjit::cli {

// Times y = a * x + b (float32) for n = 10^3 ... 10^max_exponent on the CPU (one thread, then all
// cores) and on the GPU (the kernel alone on resident data; and with x copied to the GPU and y
// back, from and to pageable host memory), writes CSV to `csv_path` (and stdout). Without a GPU the
// GPU columns are empty. Returns the exit status.
int run_crossover(const std::string& csv_path, int max_exponent);

}  // namespace kjit::cli
