// `novaserve generate`: one prompt through the model on the CPU or a GPU, streaming the
// completion.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cli/cli_error.h"
#include "cli/commands.h"
#include "cli/device_flags.h"
#include "cli/generate_setup.h"
#include "common/utf8.h"
#include "engine/sampler.h"
#include "engine/sequence_kv_cache.h"
#include "gguf/gguf_file.h"
#include "model/kv_view.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

struct GenerateOptions {
  std::string model;
  std::string prompt;
  bool prompt_given = false;  ///< --prompt appeared (required but on ranks >= 1)
  int64_t max_tokens = 128;
  float temperature = 0.8f;
  float top_p = 0.95f;
  int32_t top_k = 40;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int64_t seed = -1;
  bool chat = false;
  std::string system;            ///< --system: a system message before the prompt (--chat)
  std::string json_schema_file;  ///< --json-schema FILE
  std::string grammar_file;      ///< --grammar FILE (GBNF)
  int threads = 0;
  bool exact = false;
  std::string kv_cache_dtype = "auto";
  bool ignore_eos = false;
  DeviceFlags device;
};

// Prompt tokens per forward step during prefill: bounds the activation buffers for long prompts.
constexpr int64_t kPrefillChunk = 512;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int fail(std::string message) {
  return cli_error("generate", std::move(message));
}

// Sets the logits of tokens `mask` does not allow to -inf, in place. False when it allows none.
bool apply_mask(std::span<const uint32_t> mask, float* logits, int32_t n_vocab) {
  bool any = false;
  for (int32_t t = 0; t < n_vocab; ++t) {
    const auto w = static_cast<size_t>(t) >> 5;
    const bool ok = w < mask.size() && ((mask[w] >> (t & 31)) & 1u) != 0;
    if (!ok) logits[t] = -INFINITY;
    any = any || ok;
  }
  return any;
}

int run_generate(const GenerateOptions& o, const CLI::App& cmd) {
  if (o.max_tokens < 1) return fail("--max-tokens must be >= 1");
  if (o.threads < 0) return fail("--threads must be >= 0 (0 = all cores)");
  // Ranks other than 0 of a multi-process pipeline serve their stage only.
  if (auto code = run_if_worker_rank(o.device, o.model, o.threads, "generate", cmd)) return *code;
  if (!o.prompt_given) return fail("--prompt is required");
  SamplingParams sp;
  sp.temperature = o.temperature;
  sp.top_k = o.top_k;
  sp.top_p = o.top_p;
  sp.min_p = o.min_p;
  sp.repetition_penalty = o.repeat_penalty;
  sp.presence_penalty = o.presence_penalty;
  sp.frequency_penalty = o.frequency_penalty;
  if (o.seed >= 0) sp.seed = static_cast<uint64_t>(o.seed);

  auto file = GgufFile::open(o.model);
  if (!file.ok()) return fail(file.error().message);
  std::shared_ptr<const GgufFile> gguf(std::move(file.value()));
  auto tokenizer = Tokenizer::from_gguf(*gguf);
  if (!tokenizer.ok()) return fail(o.model + ": " + tokenizer.error().message);
  const Tokenizer& tok = **tokenizer;
  const auto kv_type = resolve_kv_cache_dtype(o.device, o.kv_cache_dtype);
  if (!kv_type.ok()) return fail(kv_type.error().message);
  auto make_runner = device_runner_factory(o.device, o.threads);
  if (!make_runner.ok()) return fail(make_runner.error().message);
  auto model_r = (*make_runner)(gguf);
  // A pipeline rank that never joined, or a device error, is no bad input: exit 1.
  if (!model_r.ok()) return cli_run_error("generate", o.model, model_r.error());
  ModelRunner& model = **model_r;
  const ModelConfig& cfg = model.config();
  if (tok.n_vocab() > cfg.n_vocab) {
    return fail(o.model + ": tokenizer has " + std::to_string(tok.n_vocab()) +
                " tokens but the embedding only " + std::to_string(cfg.n_vocab));
  }
  if (auto st = sp.validate(static_cast<int32_t>(cfg.n_vocab)); !st.ok()) {
    return fail(st.error().message);
  }

  if (!o.system.empty() && !o.chat) return fail("--system needs --chat");
  auto grammar = load_generate_grammar(tok, o.json_schema_file, o.grammar_file);
  if (!grammar.ok()) return fail(grammar.error().message);
  std::optional<grammar::GrammarMatcher> matcher;
  if (grammar.value()) matcher.emplace(grammar.value()->compiled);

  // Invalid UTF-8 in the prompt becomes U+FFFD (as llama.cpp does), so no byte silently maps to
  // the unknown token of a vocab that lacks byte tokens.
  const std::string user = utf8::sanitize(o.prompt);
  std::string text = user;
  if (o.chat) {
    auto rendered = render_chat_prompt(*gguf, tok, utf8::sanitize(o.system), user);
    if (!rendered.ok()) return fail(rendered.error().message);
    text = std::move(rendered.value());
  }
  // A rendered template writes BOS itself where the model wants it, as serve's chat endpoint
  // tokenizes (add_special false, special tokens parsed).
  const std::vector<int32_t> prompt =
      tok.encode(text, /*add_special=*/!o.chat, /*parse_special=*/o.chat);
  if (prompt.empty()) return fail("the prompt is empty");
  const auto n_prompt = static_cast<int64_t>(prompt.size());
  if (n_prompt >= cfg.n_ctx_train) {
    return fail("the prompt has " + std::to_string(n_prompt) + " tokens; the model's context is " +
                std::to_string(cfg.n_ctx_train));
  }
  const int64_t max_new = std::min(o.max_tokens, cfg.n_ctx_train - n_prompt);
  auto kv =
      SequenceKvCache::create(cfg, n_prompt + max_new, uint64_t{1} << 36, kv_type.value(), &model);
  if (!kv.ok()) return fail(kv.error().message);
  const ActQuant mode = o.exact ? ActQuant::kNone : ActQuant::kQ8;

  // Prefill.
  const auto t_prefill = Clock::now();
  for (int64_t begin = 0; begin < n_prompt; begin += kPrefillChunk) {
    const int64_t n = std::min(kPrefillChunk, n_prompt - begin);
    ForwardSeq seq{{prompt.data() + begin, static_cast<size_t>(n)},
                   static_cast<int32_t>(kv->size()),
                   kv->view(),
                   false};
    if (auto st = model.forward({&seq, 1}, mode); !st.ok()) {
      return cli_run_error("generate", o.model, st.error());
    }
    if (auto st = kv->advance(n); !st.ok()) return fail(st.error().message);
  }
  const double prefill_s = seconds_since(t_prefill);

  // Decode: sample, stream, feed back. The first token comes from the prefill's logits.
  Sampler sampler(sp, static_cast<int32_t>(cfg.n_vocab), prompt);
  IncrementalDetokenizer detok(tok, DetokenizeFrom::kContinuation);
  const auto n_vocab = static_cast<int32_t>(cfg.n_vocab);
  std::vector<uint32_t> mask(matcher ? (static_cast<size_t>(n_vocab) + 31) / 32 : 0);
  std::vector<float> masked(matcher ? n_vocab : 0);
  const auto t_decode = Clock::now();
  int64_t n_generated = 0;
  int64_t n_decode_steps = 0;
  for (;;) {
    int32_t id;
    if (matcher) {
      // Masks apply before sampling, greedy included (docs/structured-outputs.md).
      matcher->fill_next_token_mask(mask);
      std::copy(model.logits(0), model.logits(0) + n_vocab, masked.begin());
      if (!apply_mask(mask, masked.data(), n_vocab)) break;
      id = sampler.sample(masked.data());
      if (!matcher->accept_token(id)) return fail("the grammar refused a token its mask allowed");
    } else {
      id = sampler.sample(model.logits(0));
    }
    if (tok.is_eog(id) && (!o.ignore_eos || matcher)) break;
    ++n_generated;
    const std::string piece = detok.push(id);
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    if (n_generated == max_new) break;
    if (matcher && matcher->is_terminated()) break;  // only a stop token could follow
    ForwardSeq seq{{&id, 1}, static_cast<int32_t>(kv->size()), kv->view(), false};
    if (auto st = model.forward({&seq, 1}, mode); !st.ok()) {
      return cli_run_error("generate", o.model, st.error());
    }
    if (auto st = kv->advance(1); !st.ok()) return fail(st.error().message);
    ++n_decode_steps;
  }
  const double decode_s = seconds_since(t_decode);
  const std::string tail = detok.flush();
  std::fwrite(tail.data(), 1, tail.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);

  if (n_generated == max_new && max_new < o.max_tokens) {
    std::fprintf(stderr,
                 "novaserve generate: stopped after %lld tokens: the context (%lld) is full\n",
                 static_cast<long long>(n_generated), static_cast<long long>(cfg.n_ctx_train));
  }
  std::fprintf(stderr,
               "novaserve generate: %s, %s\n"
               "  prompt:     %lld tokens in %.1f ms (%.1f tok/s)\n"
               "  generation: %lld tokens, %lld decode steps in %.1f ms (%.1f tok/s)\n",
               model.describe().c_str(), o.exact ? "exact" : "fast (q8 activations)",
               static_cast<long long>(n_prompt), prefill_s * 1e3, n_prompt / prefill_s,
               static_cast<long long>(n_generated), static_cast<long long>(n_decode_steps),
               decode_s * 1e3, n_decode_steps > 0 ? n_decode_steps / decode_s : 0.0);
  return 0;
}

}  // namespace

void register_generate(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "generate", "Generate a completion for one prompt, streaming it to stdout");
  cmd->add_option("--model,-m", opts->model, "GGUF model file")->required();
  // Required, except on the ranks >= 1 of a multi-process pipeline (run_generate checks it).
  cmd->add_option("--prompt,-p", opts->prompt, "prompt text")->each([opts](const std::string&) {
    opts->prompt_given = true;
  });
  cmd->add_option("--max-tokens,-n", opts->max_tokens, "maximum tokens to generate")
      ->capture_default_str();
  cmd->add_option("--temperature,-t", opts->temperature, "sampling temperature; 0 = greedy")
      ->capture_default_str();
  cmd->add_option("--top-p", opts->top_p, "nucleus sampling mass in (0, 1]; 1 = off")
      ->capture_default_str();
  cmd->add_option("--top-k", opts->top_k, "keep the k most likely tokens; 0 = off")
      ->capture_default_str();
  cmd->add_option("--min-p", opts->min_p, "drop tokens below min_p * p_max; 0 = off")
      ->capture_default_str();
  cmd->add_option("--repeat-penalty", opts->repeat_penalty,
                  "repetition penalty over prompt and output; 1 = off")
      ->capture_default_str();
  cmd->add_option("--presence-penalty", opts->presence_penalty, "in [-2, 2]")
      ->capture_default_str();
  cmd->add_option("--frequency-penalty", opts->frequency_penalty, "in [-2, 2]")
      ->capture_default_str();
  cmd->add_option("--seed,-s", opts->seed, "sampling seed; -1 = random")->capture_default_str();
  cmd->add_flag("--chat", opts->chat,
                "send the prompt as a user message, rendered with the model's chat template "
                "(as serve renders /v1/chat/completions)");
  cmd->add_option("--system", opts->system, "with --chat: a system message before the prompt");
  cmd->add_option("--json-schema", opts->json_schema_file,
                  "constrain the output to this JSON Schema (a file)");
  cmd->add_option("--grammar", opts->grammar_file,
                  "constrain the output to this GBNF grammar (a file; start rule root)");
  cmd->add_option("--threads", opts->threads, "CPU threads; 0 = all cores")->capture_default_str();
  cmd->add_flag("--exact", opts->exact,
                "f32 activations in every matmul (default: 8-bit activations, faster)");
  cmd->add_option("--kv-cache-dtype", opts->kv_cache_dtype,
                  "KV cache type: auto (f32 on the CPU, f16 on a GPU), f32, f16, q8 or q4")
      ->capture_default_str();
  add_device_flags(*cmd, opts->device, /*with_memory_utilization=*/false);
  cmd->add_flag("--ignore-eos", opts->ignore_eos,
                "keep generating past end-of-generation tokens (benchmarks)");
  cmd->callback([opts, cmd, &exit_code] { exit_code = run_generate(*opts, *cmd); });
}

}  // namespace novaserve
