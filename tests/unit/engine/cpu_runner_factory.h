// The engine tests' ModelRunner factory: LlamaModel on a CpuBackend, as the CLI's --device cpu
// builds it (src/cli/device_flags.cpp); the engine itself constructs no backend.
#pragma once

#include <memory>

#include "backend/cpu/cpu_backend.h"
#include "engine/engine.h"
#include "model/llama_model.h"

namespace novaserve {

/// A RunnerFactory of LlamaModel on a CpuBackend of `threads` threads (0 = all cores).
inline RunnerFactory cpu_runner_factory(int threads) {
  return [threads](std::shared_ptr<const GgufFile> file) -> Result<std::unique_ptr<ModelRunner>> {
    auto model = LlamaModel::create(std::move(file), std::make_unique<CpuBackend>(threads));
    if (!model.ok()) return model.error();
    return std::unique_ptr<ModelRunner>(std::move(model.value()));
  };
}

}  // namespace novaserve
