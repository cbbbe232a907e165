#include "convert/quant_mixture.h"

#include <algorithm>
#include <cctype>

#include "gguf/block_layer.h"

namespace novaserve {
namespace {

constexpr std::string_view kQ4_K_M = "q4_k_m";
// llama.h, enum llama_ftype: LLAMA_FTYPE_MOSTLY_Q4_K_M = 15.
constexpr uint32_t kFileTypeQ4_K_M = 15;

}  // namespace

Result<QuantTypeSpec> parse_quant_type_spec(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  QuantTypeSpec spec;
  spec.name = lower;
  if (lower == kQ4_K_M) {
    spec.base = GgmlType::kQ4_K;
    spec.mixture = QuantMixture::kQ4_K_M;
    return spec;
  }
  auto type = parse_quantize_type(lower);
  if (!type.ok()) {
    return Err(ErrorCode::kInvalidInput, "unknown type '" + std::string(name) + "' (choose " +
                                             quant_type_spec_choices() + ")");
  }
  spec.base = *type;
  return spec;
}

std::string quant_type_spec_choices() {
  return quantize_type_choices() + "|" + std::string(kQ4_K_M);
}

bool llama_use_more_bits(int64_t layer, int64_t n_layer) {
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

std::vector<std::string> q4_k_m_rules(int64_t n_layer) {
  std::string layers;
  for (int64_t i = 0; i < n_layer; ++i) {
    if (!llama_use_more_bits(i, n_layer)) continue;
    if (!layers.empty()) layers += '|';
    layers += std::to_string(i);
  }
  std::vector<std::string> rules;
  if (!layers.empty()) {
    rules.push_back("^blk\\.(" + layers + ")\\.(attn_v|ffn_down)\\.weight$=q6_k");
  }
  if (n_layer > 0) rules.push_back("^blk\\.[0-9]+\\.attn_qkv\\.weight$=q5_k");
  return rules;
}

void apply_quant_type_spec(const QuantTypeSpec& spec, int64_t n_layer,
                           QuantizePolicyOptions& options) {
  options.base_type = spec.base;
  if (spec.mixture == QuantMixture::kQ4_K_M) {
    options.mixture_rules = q4_k_m_rules(n_layer);
    options.file_type = kFileTypeQ4_K_M;
    options.output_default = true;
  }
}

int64_t gguf_block_count(const GgufFile& file) {
  int64_t n = 0;
  for (const auto& t : file.tensors()) n = std::max(n, block_layer(t.name) + 1);
  return n;
}

}  // namespace novaserve
