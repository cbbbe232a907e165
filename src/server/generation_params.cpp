#include "server/generation_params.h"

#include <limits>

#include "server/json_fields.h"

namespace novaserve {
namespace {

using OptErr = std::optional<ApiError>;

OptErr parse_lengths(const FieldReader& f, ApiKind kind, GenerationParams& out) {
  std::optional<int64_t> max_tokens;
  if (auto e = f.get_int("max_tokens", max_tokens)) return e;
  if (max_tokens && *max_tokens < 1) return out_of_range("max_tokens", "at least 1", *max_tokens);
  if (kind == ApiKind::kChat) {
    std::optional<int64_t> mct;
    if (auto e = f.get_int("max_completion_tokens", mct)) return e;
    if (mct && *mct < 1) return out_of_range("max_completion_tokens", "at least 1", *mct);
    if (mct) max_tokens = mct;
  }
  out.max_tokens = max_tokens;

  std::optional<int64_t> min_tokens;
  if (auto e = f.get_int("min_tokens", min_tokens)) return e;
  if (min_tokens) {
    if (*min_tokens < 0) return out_of_range("min_tokens", "at least 0", *min_tokens);
    if (max_tokens && *min_tokens > *max_tokens) {
      return invalid_request("min_tokens (" + std::to_string(*min_tokens) +
                                 ") must be less than or equal to max_tokens (" +
                                 std::to_string(*max_tokens) + ")",
                             "min_tokens");
    }
    // Beyond any context length; the context check reports it if max_tokens is absent.
    if (*min_tokens > std::numeric_limits<int32_t>::max()) {
      return out_of_range("min_tokens", "at most 2147483647", *min_tokens);
    }
    out.min_tokens = static_cast<int32_t>(*min_tokens);
  }
  std::optional<bool> ignore_eos;
  if (auto e = f.get_bool("ignore_eos", ignore_eos)) return e;
  out.ignore_eos = ignore_eos.value_or(false);
  return std::nullopt;
}

OptErr parse_sampling(const FieldReader& f, int32_t n_vocab, SamplingParams& s) {
  // Range checks run on the float the engine gets, so that no value passes here and then fails
  // SamplingParams::validate (whose error names no param).
  std::optional<float> d;
  if (auto e = f.get_float("temperature", d)) return e;
  if (d) {
    if (*d < 0) return out_of_range("temperature", ">= 0", *d);
    s.temperature = *d;
  }
  if (auto e = f.get_float("top_p", d)) return e;
  if (d) {
    if (!(*d > 0 && *d <= 1)) return out_of_range("top_p", "in (0, 1]", *d);
    s.top_p = *d;
  }
  std::optional<int64_t> k;
  if (auto e = f.get_int("top_k", k)) return e;
  if (k) {
    if (*k < -1) return out_of_range("top_k", "-1 or 0 (disabled) or at least 1", *k);
    // vLLM: -1 and 0 disable; values above the vocabulary keep every token.
    s.top_k = *k <= 0 ? 0 : static_cast<int32_t>(std::min<int64_t>(*k, n_vocab));
  }
  if (auto e = f.get_float("min_p", d)) return e;
  if (d) {
    if (!(*d >= 0 && *d <= 1)) return out_of_range("min_p", "in [0, 1]", *d);
    s.min_p = *d;
  }
  if (auto e = f.get_float("presence_penalty", d)) return e;
  if (d) {
    if (!(*d >= -2 && *d <= 2)) return out_of_range("presence_penalty", "in [-2, 2]", *d);
    s.presence_penalty = *d;
  }
  if (auto e = f.get_float("frequency_penalty", d)) return e;
  if (d) {
    if (!(*d >= -2 && *d <= 2)) return out_of_range("frequency_penalty", "in [-2, 2]", *d);
    s.frequency_penalty = *d;
  }
  if (auto e = f.get_float("repetition_penalty", d)) return e;
  if (d) {
    if (!(*d > 0)) return out_of_range("repetition_penalty", "> 0", *d);
    s.repetition_penalty = *d;
  }
  std::optional<int64_t> seed;
  if (auto e = f.get_int("seed", seed)) return e;
  // Negative seeds are valid in OpenAI's API; the bit pattern is the engine's seed.
  if (seed) s.seed = static_cast<uint64_t>(*seed);
  return std::nullopt;
}

OptErr parse_logit_bias(const FieldReader& f, int32_t n_vocab, SamplingParams& s) {
  const Json* lb = f.find("logit_bias");
  if (lb == nullptr) return std::nullopt;
  if (!lb->is_object()) return f.type_error("logit_bias", "an object", *lb);
  for (const auto& [key, value] : lb->items()) {
    const std::string param = "logit_bias." + key;
    int64_t id = -1;
    bool digits = !key.empty() && key.size() <= 10;
    for (char c : key) digits = digits && c >= '0' && c <= '9';
    if (digits) id = std::stoll(key);
    if (!digits || id >= n_vocab) {
      return invalid_request("logit_bias key '" + key +
                                 "' is not a token id in the vocabulary [0, " +
                                 std::to_string(n_vocab) + ")",
                             "logit_bias");
    }
    if (!value.is_number()) {
      return invalid_request("logit_bias values must be numbers, got " +
                                 std::string(value.type_name()) + " for key '" + key + "'",
                             "logit_bias");
    }
    const double bias = value.get<double>();
    if (!(bias >= -100 && bias <= 100)) return out_of_range(param, "in [-100, 100]", bias);
    s.logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(bias));
  }
  return std::nullopt;
}

OptErr parse_stop(const FieldReader& f, int32_t n_vocab, GenerationParams& out) {
  if (const Json* stop = f.find("stop")) {
    std::vector<std::string> all;
    if (stop->is_string()) {
      all.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      if (stop->size() > static_cast<size_t>(kMaxStopStrings)) {
        return invalid_request("stop may hold at most " + std::to_string(kMaxStopStrings) +
                                   " strings, got " + std::to_string(stop->size()),
                               "stop");
      }
      for (const Json& s : *stop) {
        if (!s.is_string()) {
          return invalid_request(
              std::string("stop must be a string or an array of strings; found ") + s.type_name() +
                  " in the array",
              "stop");
        }
        all.push_back(s.get<std::string>());
      }
    } else {
      return f.type_error("stop", "a string or an array of strings", *stop);
    }
    // An empty stop string would end every request before its first token; no client means it.
    for (auto& s : all) {
      if (!s.empty()) out.stop.push_back(std::move(s));
    }
  }
  if (const Json* ids = f.find("stop_token_ids")) {
    if (!ids->is_array()) return f.type_error("stop_token_ids", "an array of integers", *ids);
    for (const Json& v : *ids) {
      const auto id = json_integer(v);
      if (!id || *id < 0 || *id >= n_vocab) {
        return invalid_request("stop_token_ids must hold token ids in [0, " +
                                   std::to_string(n_vocab) + "), found " + v.dump(),
                               "stop_token_ids");
      }
      out.stop_token_ids.push_back(static_cast<int32_t>(*id));
    }
  }
  return std::nullopt;
}

OptErr parse_shape(const FieldReader& f, GenerationParams& out) {
  std::optional<int64_t> i;
  if (auto e = f.get_int("n", i)) return e;
  if (i) {
    if (*i < 1 || *i > kMaxN) return out_of_range("n", "in [1, " + std::to_string(kMaxN) + "]", *i);
    out.n = static_cast<int32_t>(*i);
  }
  if (auto e = f.get_int("best_of", i)) return e;
  if (i && *i != out.n) {
    return invalid_request("best_of is not supported unless it equals n", "best_of");
  }
  std::optional<bool> b;
  if (auto e = f.get_bool("stream", b)) return e;
  out.stream = b.value_or(false);
  if (const Json* so = f.find("stream_options")) {
    if (!so->is_object()) return f.type_error("stream_options", "an object", *so);
    if (!out.stream) {
      return invalid_request("stream_options can only be set when stream is true",
                             "stream_options");
    }
    FieldReader sf(*so, "stream_options.");
    if (auto e = sf.get_bool("include_usage", b)) return e;
    out.include_usage = b.value_or(false);
    if (auto e = sf.get_bool("continuous_usage_stats", b)) return e;
  }
  if (auto e = f.get_int("priority", i)) return e;
  if (i) {
    if (*i < std::numeric_limits<int32_t>::min() || *i > std::numeric_limits<int32_t>::max()) {
      return out_of_range("priority", "a 32-bit integer", *i);
    }
    out.priority = static_cast<int32_t>(*i);
  }
  if (auto e = f.get_int("truncate_prompt_tokens", i)) return e;
  if (i && *i < 1) return out_of_range("truncate_prompt_tokens", "at least 1", *i);
  out.truncate_prompt_tokens = i;
  if (auto e = f.get_string("user", out.user)) return e;
  if (auto e = f.get_string("model", out.model)) return e;
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_generation_params(const Json& body, ApiKind kind, int32_t n_vocab,
                                                GenerationParams& out) {
  const FieldReader f(body);
  if (auto e = parse_shape(f, out)) return e;
  if (auto e = parse_lengths(f, kind, out)) return e;
  if (auto e = parse_sampling(f, n_vocab, out.sampling)) return e;
  if (auto e = parse_logit_bias(f, n_vocab, out.sampling)) return e;
  if (auto e = parse_stop(f, n_vocab, out)) return e;
  auto constraint = parse_output_constraint(body);
  if (!constraint.ok()) return constraint.error();
  out.constraint = std::move(constraint.value());
  // The engine's own check, as a last line (its messages name the parameter too).
  if (auto st = out.sampling.validate(n_vocab); !st.ok())
    return invalid_request(st.error().message);
  return std::nullopt;
}

}  // namespace novaserve
