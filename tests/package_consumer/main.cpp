// Uses the installed kjit package: host arrays and dtypes work anywhere; the GPU part reports a
// missing device instead of failing.
#include <kjit/kjit.hpp>

#include <cstdio>

int main() {
    const kjit::DType t = kjit::result_type(kjit::DType::parse("int16"), kjit::DType::float16);
    const float values[6] = {1, 2, 3, 4, 5, 6};
    const kjit::Array a = kjit::Array::from_host(values, kjit::DType::float32, {2, 3}, kjit::Device::cpu());
    const kjit::Array col = a.transpose().index(0, 1);  // the second column: 2, 5
    float out[2] = {};
    col.copy_to_host(out);
    std::printf("kjit %s: result_type(int16, float16) = %s, column = %g %g, GPUs: %d\n", kjit::version_string,
                std::string(t.name()).c_str(), out[0], out[1], kjit::Device::count());
    return (t == kjit::DType::float32 && out[0] == 2 && out[1] == 5) ? 0 : 1;
}
