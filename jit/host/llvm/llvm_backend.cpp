// The host back end: LLVM 19's ORC LLJIT, compiling each (kernel, binding) into a module of chunk
// functions optimised at O3 for this CPU. Exported to libkjit through one factory symbol
// (jit/host/host_backend.hpp).
#include <cstdlib>
#include <functional>
#include <iostream>
#include <mutex>

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "jit/host/host_backend.hpp"
#include "jit/host/llvm/host_runtime.hpp"
#include "jit/host/llvm/lower_elementwise.hpp"
#include "jit/host/llvm/lower_reduction.hpp"
#include "kjit/error.hpp"

namespace kjit::jit::host::llvm {
namespace {

template <class T>
T unwrap(::llvm::Expected<T> value, const std::string& what) {
    if (!value) throw Error("host back end: " + what + ": " + ::llvm::toString(value.takeError()));
    return std::move(*value);
}

void check(::llvm::Error e, const std::string& what) {
    if (e) throw Error("host back end: " + what + ": " + ::llvm::toString(std::move(e)));
}

class LlvmBackend final : public HostBackend {
public:
    LlvmBackend() {
        ::llvm::InitializeNativeTarget();
        ::llvm::InitializeNativeTargetAsmPrinter();
        auto jtmb = unwrap(::llvm::orc::JITTargetMachineBuilder::detectHost(), "detecting the host CPU");
        jtmb.setCodeGenOptLevel(::llvm::CodeGenOptLevel::Aggressive);
        machine_ = unwrap(jtmb.createTargetMachine(), "creating the target machine");
        jit_ = unwrap(::llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(jtmb).create(), "starting LLJIT");
        ::llvm::orc::JITDylib& lib = jit_->getMainJITDylib();
        // libm (sinf, exp...) from the process; kjit's helpers by address.
        lib.addGenerator(unwrap(::llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit_->getDataLayout().getGlobalPrefix()),
                                "searching the process for libm"));
        ::llvm::orc::SymbolMap helpers;
        for (const RuntimeSymbol& s : runtime_symbols())
            helpers[jit_->mangleAndIntern(s.name)] = {::llvm::orc::ExecutorAddr::fromPtr(s.address), ::llvm::JITSymbolFlags::Exported | ::llvm::JITSymbolFlags::Callable};
        check(lib.define(::llvm::orc::absoluteSymbols(std::move(helpers))), "defining kjit's helpers");
        const char* dump = std::getenv("KJIT_HOST_DUMP_IR");
        dump_ir_ = dump != nullptr && *dump && std::string(dump) != "0";
    }

    ElementwiseCode compile_elementwise(const ElementwiseRequest& request) override {
        ElementwiseCode code;
        build(request.name, [&](::llvm::Module& m, const std::string& prefix) {
            for (const bool contiguous : {true, false})
                lower_elementwise(m, request, contiguous, prefix + (contiguous ? "_contiguous" : "_strided"));
        }, [&](const std::string& prefix) {
            code.contiguous = lookup<ChunkFn>(prefix + "_contiguous", request.name);
            code.strided = lookup<ChunkFn>(prefix + "_strided", request.name);
        });
        return code;
    }

    ReductionCode compile_reduction(const ReductionRequest& request) override {
        ReductionCode code;
        build(request.name, [&](::llvm::Module& m, const std::string& prefix) { lower_reduction(m, request, prefix); },
              [&](const std::string& prefix) {
                  code.fold = lookup<FoldFn>(prefix + "_fold", request.name);
                  code.fold_columns = lookup<FoldColumnsFn>(prefix + "_fold_columns", request.name);
                  code.combine = lookup<CombineFn>(prefix + "_combine", request.name);
                  if (request.reduction->has_identity) code.identity = lookup<IdentityFn>(prefix + "_identity", request.name);
                  code.post = lookup<PostFn>(prefix + "_post", request.name);
              });
        return code;
    }

    std::string description() const override {
        return "LLVM " LLVM_VERSION_STRING ", " + machine_->getTargetTriple().str() + " " + machine_->getTargetCPU().str();
    }

private:
    // One module: `lower` fills it (functions named from the prefix), it is checked, optimised and
    // added to the JIT, then `resolve` looks its functions up (which compiles it).
    void build(const std::string& name, const std::function<void(::llvm::Module&, const std::string&)>& lower,
               const std::function<void(const std::string&)>& resolve) {
        std::lock_guard lock(mutex_);  // one compile at a time: LLVM contexts are not shared, LLJIT is
        const std::string prefix = "kjit_" + std::to_string(++modules_) + "_" + name;
        auto context = std::make_unique<::llvm::LLVMContext>();
        auto module = std::make_unique<::llvm::Module>(prefix, *context);
        module->setDataLayout(jit_->getDataLayout());
        module->setTargetTriple(machine_->getTargetTriple().str());
        lower(*module, prefix);
        for (::llvm::Function& f : *module) {
            if (f.isDeclaration()) continue;
            f.addFnAttr("target-cpu", machine_->getTargetCPU());
            f.addFnAttr("target-features", machine_->getTargetFeatureString());
        }
        std::string broken;
        ::llvm::raw_string_ostream why(broken);
        if (::llvm::verifyModule(*module, &why))
            throw Error("host back end: kernel '" + name + "' lowered to invalid IR (a kjit bug): " + broken);
        optimise(*module);
        if (dump_ir_) module->print(::llvm::errs(), nullptr);
        check(jit_->addIRModule(::llvm::orc::ThreadSafeModule(std::move(module), std::move(context))), "adding the module");
        resolve(prefix);
    }

    template <class Fn>
    Fn lookup(const std::string& symbol, const std::string& name) {
        return unwrap(jit_->lookup(symbol), "compiling kernel '" + name + "'").template toPtr<Fn>();
    }

    // The new pass manager's O3 pipeline with this CPU's cost model, so that loops vectorise to
    // its vector width.
    void optimise(::llvm::Module& m) {
        ::llvm::LoopAnalysisManager lam;
        ::llvm::FunctionAnalysisManager fam;
        ::llvm::CGSCCAnalysisManager cgam;
        ::llvm::ModuleAnalysisManager mam;
        ::llvm::PipelineTuningOptions options;
        options.LoopVectorization = true;
        options.SLPVectorization = true;
        options.LoopUnrolling = true;
        ::llvm::PassBuilder pb(machine_.get(), options);
        pb.registerModuleAnalyses(mam);
        pb.registerCGSCCAnalyses(cgam);
        pb.registerFunctionAnalyses(fam);
        pb.registerLoopAnalyses(lam);
        pb.crossRegisterProxies(lam, fam, cgam, mam);
        ::llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(::llvm::OptimizationLevel::O3);
        mpm.run(m, mam);
    }

    std::mutex mutex_;
    std::unique_ptr<::llvm::TargetMachine> machine_;
    std::unique_ptr<::llvm::orc::LLJIT> jit_;
    unsigned long modules_ = 0;
    bool dump_ir_ = false;
};

}  // namespace
}  // namespace kjit::jit::host::llvm

extern "C" __attribute__((visibility("default"))) kjit::jit::host::HostBackend* kjit_host_backend_create_v1(int version, std::string* error) {
    if (version != kjit::jit::host::kHostBackendVersion) {
        if (error != nullptr)
            *error = "it implements interface version " + std::to_string(kjit::jit::host::kHostBackendVersion) + ", libkjit asks for " +
                     std::to_string(version) + ": use the libkjit_host.so built with this libkjit";
        return nullptr;
    }
    try {
        return new kjit::jit::host::llvm::LlvmBackend();
    } catch (const std::exception& e) {
        if (error != nullptr) *error = e.what();
        return nullptr;
    }
}
