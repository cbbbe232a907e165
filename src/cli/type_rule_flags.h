// The per-tensor type flags that `quantize` and `synth` share: --tensor-type REGEX=TYPE and
// --keep-f16 REGEX (parsed by QuantizePolicy, src/quant/quantize_policy.h).
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace novaserve {

/// Adds the repeatable --tensor-type and --keep-f16 options to `cmd`, each occurrence taking one
/// value (so that positional arguments after them stay positional), bound to `tensor_types` and
/// `keep_f16` in the order given. The rules are checked by QuantizePolicy::create.
void add_type_rule_flags(CLI::App& cmd, std::vector<std::string>& tensor_types,
                         std::vector<std::string>& keep_f16);

/// The help text of --type for quantize and synth: every name parse_quant_type_spec accepts.
std::string type_flag_help();

}  // namespace novaserve
