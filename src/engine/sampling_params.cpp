#include "engine/sampling_params.h"

#include <cmath>
#include <sstream>
#include <string>

namespace novaserve {

namespace {

Error bad(const char* name, double value, const char* range) {
  std::ostringstream os;
  os << name << " = " << value << " is out of range " << range;
  return Err(ErrorCode::kInvalidInput, os.str());
}

}  // namespace

Status SamplingParams::validate(int32_t n_vocab) const {
  if (!std::isfinite(temperature) || temperature < 0.0f) {
    return bad("temperature", temperature, "[0, inf)");
  }
  if (top_k < 0) return bad("top_k", top_k, "[0, inf)");
  if (!(top_p > 0.0f && top_p <= 1.0f)) return bad("top_p", top_p, "(0, 1]");
  if (!(min_p >= 0.0f && min_p <= 1.0f)) return bad("min_p", min_p, "[0, 1]");
  if (!(std::isfinite(repetition_penalty) && repetition_penalty > 0.0f)) {
    return bad("repetition_penalty", repetition_penalty, "(0, inf)");
  }
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) {
    return bad("presence_penalty", presence_penalty, "[-2, 2]");
  }
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) {
    return bad("frequency_penalty", frequency_penalty, "[-2, 2]");
  }
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0 || id >= n_vocab) {
      return Err(ErrorCode::kInvalidInput, "logit_bias token id " + std::to_string(id) +
                                               " is outside the vocabulary [0, " +
                                               std::to_string(n_vocab) + ")");
    }
    if (!(bias >= -100.0f && bias <= 100.0f)) return bad("logit_bias value", bias, "[-100, 100]");
  }
  return {};
}

}  // namespace novaserve
