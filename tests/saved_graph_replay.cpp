// A fresh process that replays a saved graph (the [gpu] test of saved graphs runs it):
//   kjit_saved_graph_replay GRAPH NAME=FILE.npy ... NAME:=VALUE ...
// Each NAME=FILE.npy array is read, put on cuda:0 and bound by name; NAME:=VALUE binds a scalar
// (a float64, cast to its parameter's type). The graph is loaded and replayed once, and every
// array is written back to its file. Exit status 0 only when no kernel was compiled and NVRTC was
// never loaded in this process: the kernels came from the cache alone.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kjit/cache.hpp"
#include "kjit/error.hpp"
#include "kjit/graph.hpp"
#include "kjit/npy.hpp"
#include "runtime/detail/nvrtc.hpp"

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s GRAPH NAME=FILE.npy ... NAME:=VALUE ...\n", argv[0]);
        return 2;
    }
    try {
        const kjit::Stream s = kjit::Stream::create();
        std::vector<kjit::Graph::NamedArray> arrays;
        std::vector<std::string> files;
        std::vector<kjit::Graph::ScalarValue> scalars;
        for (int k = 2; k < argc; ++k) {
            const std::string arg = argv[k];
            if (const std::size_t at = arg.find(":="); at != std::string::npos) {
                scalars.push_back({arg.substr(0, at), kjit::Scalar(std::strtod(arg.c_str() + at + 2, nullptr))});
                continue;
            }
            const std::size_t eq = arg.find('=');
            if (eq == std::string::npos) throw kjit::Error("not NAME=FILE.npy or NAME:=VALUE: " + arg);
            files.push_back(arg.substr(eq + 1));
            arrays.push_back({arg.substr(0, eq), kjit::load_npy(files.back(), kjit::Device::cuda(0), s)});
        }
        const kjit::Graph g = kjit::Graph::load(argv[1], s, arrays, scalars);
        g.launch(s);
        s.synchronize();
        for (std::size_t k = 0; k < arrays.size(); ++k) kjit::save_npy(files[k], arrays[k].array, s);
        const kjit::CacheStats stats = kjit::cache_stats();
        const bool nvrtc = kjit::detail::nvrtc_loaded();
        std::printf("replayed %zu nodes; compiles %llu; NVRTC %s\n", g.node_count(), static_cast<unsigned long long>(stats.compiles),
                    nvrtc ? "loaded" : "never loaded");
        return stats.compiles == 0 && !nvrtc ? 0 : 3;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kjit_saved_graph_replay: %s\n", e.what());
        return 1;
    }
}
