#include "jit/kernels/call_memo.hpp"

#include "kjit/error.hpp"

namespace kjit::jit::kernels {

using namespace frontend;

CallKey call_key(std::span<const KernelArg> args, std::size_t params, int device) {
    CallKey key;
    key.count = static_cast<std::uint8_t>(params);
    key.device = static_cast<std::int16_t>(device);
    for (std::size_t k = 0; k < args.size(); ++k) {
        key.kind[k] = args[k].is_array() ? ArgumentKind::array : ArgumentKind::scalar;
        key.dtype[k] = args[k].is_array() ? args[k].array().dtype().id() : args[k].scalar().dtype().id();
    }
    for (std::size_t k = args.size(); k < params; ++k) key.kind[k] = ArgumentKind::absent;
    return key;
}

std::vector<ArgumentKind> argument_kinds(std::span<const KernelArg> args) {
    std::vector<ArgumentKind> kinds(args.size());
    for (std::size_t k = 0; k < args.size(); ++k)
        kinds[k] = args[k].is_array() ? ArgumentKind{ArgumentKind::array, args[k].array().dtype()}
                                      : ArgumentKind{ArgumentKind::scalar, args[k].scalar().dtype()};
    return kinds;
}

int call_device(std::span<const KernelArg> args, const std::optional<Stream>& stream,
                const std::function<std::string(std::size_t)>& where) {
    int ordinal = -1;
    for (std::size_t k = 0; k < args.size(); ++k) {
        if (!args[k].is_array()) continue;
        const Array& a = args[k].array();
        if (!a.valid()) throw TypeError(where(k) + " is an empty kjit::Array");
        const Device d = a.device();
        if (d.is_cpu())
            throw Error(where(k) + " is in host memory: copy it to the GPU first (array.to(kjit::Device::cuda(0)))");
        if (ordinal >= 0 && d.ordinal() != ordinal)
            throw Error(where(k) + " is on " + d.to_string() + " but earlier arguments are on cuda:" + std::to_string(ordinal));
        ordinal = d.ordinal();
    }
    if (ordinal < 0) ordinal = stream ? stream->device().ordinal() : Device::current().ordinal();
    return ordinal;
}

std::vector<detail::ArgField> arg_fields(const CallSignature& sig, const BoundCall& bound) {
    std::vector<detail::ArgField> fields;
    for (std::size_t k = 0; k < sig.params.size(); ++k)
        fields.push_back(sig.params[k].raw ? detail::ArgField::raw : bound.scalar[k] ? detail::ArgField::value : detail::ArgField::pointer);
    return fields;
}

detail::OperandView operand_view(const Array& a) {
    return {static_cast<char*>(a.data()), static_cast<int>(a.itemsize()), a.ndim(), a.shape().data(), a.strides().data()};
}

}  // namespace kjit::jit::kernels
