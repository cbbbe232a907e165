#include "cli/type_rule_flags.h"

#include <CLI/CLI.hpp>

#include "convert/quant_mixture.h"

namespace novaserve {

void add_type_rule_flags(CLI::App& cmd, std::vector<std::string>& tensor_types,
                         std::vector<std::string>& keep_f16) {
  cmd.add_option("--tensor-type", tensor_types, "REGEX=TYPE rule (repeatable; first match wins)")
      ->allow_extra_args(false);
  cmd.add_option("--keep-f16", keep_f16,
                 "REGEX: shorthand for REGEX=f16, placed before every --tensor-type rule")
      ->allow_extra_args(false);
}

std::string type_flag_help() {
  return "base type: " + quant_type_spec_choices() +
         " (q4_k_m: llama.cpp's Q4_K_M mixture, q4_k with q6_k for output.weight and for "
         "attn_v/ffn_down in the layers its use_more_bits rule picks)";
}

}  // namespace novaserve
