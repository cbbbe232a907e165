#include "server/completions_handler.h"

#include "common/utf8.h"
#include "server/completion_format.h"
#include "server/completion_request.h"
#include "server/handler_common.h"
#include "server/prepared_request.h"
#include "server/prompt_fit.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

// OpenAI's default max_tokens for completions.
constexpr int64_t kDefaultMaxTokens = 16;

// On the tokenize pool (see prepared_request.h).
Prepared prepare_completions(const ServerContext& ctx, const ModelServices& m,
                             const std::string& body_text) {
  auto body = parse_json_object(body_text);
  if (!body.ok()) return HttpResponse::error(body.error());
  auto req = parse_completion_request(body.value(), m.engine->n_vocab());
  if (!req.ok()) return HttpResponse::error(req.error());
  const GenerationParams& gen = req->gen;
  if (auto e = check_model_name(ctx, gen.model)) return HttpResponse::error(*e);

  JobPlan plan;
  if (gen.constraint) {
    auto grammar = compile_output_constraint(m.grammar, *gen.constraint);
    if (!grammar.ok()) return HttpResponse::error(grammar.error());
    plan.grammar = std::move(grammar.value());
  }
  const Tokenizer& tok = *m.tokenizer;
  std::vector<std::string> echo;
  for (const PromptInput& in : req->prompts) {
    // Special-token text in a prompt ("<|im_start|>") becomes that token, as HF tokenizers do.
    std::vector<int32_t> ids =
        in.text ? tok.encode(*in.text, /*add_special=*/true, /*parse_special=*/true) : in.ids;
    const size_t before = ids.size();
    auto max_tokens = fit_prompt(ids, gen, m.engine->context_length(), kDefaultMaxTokens, "prompt");
    if (!max_tokens.ok()) return HttpResponse::error(max_tokens.error());
    std::string echo_text;
    if (req->echo) {
      echo_text = in.text && ids.size() == before ? *in.text : utf8::sanitize(tok.decode(ids));
    }
    plan.prompt_tokens += static_cast<int64_t>(ids.size());
    for (int32_t j = 0; j < gen.n; ++j) {
      ChoicePlan c{ids, max_tokens.value(), std::nullopt};
      // Choice j of every prompt gets seed + j: a choice's tokens do not depend on n or on the
      // other prompts of a batch.
      if (gen.sampling.seed) c.seed = *gen.sampling.seed + static_cast<uint64_t>(j);
      plan.choices.push_back(std::move(c));
      echo.push_back(echo_text);
    }
  }
  plan.sampling = gen.sampling;
  plan.min_tokens = gen.min_tokens;
  plan.ignore_eos = gen.ignore_eos;
  plan.stop_token_ids = gen.stop_token_ids;
  plan.stop = gen.stop;
  plan.priority = gen.priority;
  plan.top_logprobs = req->logprobs;
  plan.stream = gen.stream;
  plan.include_usage = gen.include_usage;

  ResponseMeta meta{make_response_id("cmpl-"), unix_now(), ctx.config.model_name,
                    gen.include_usage};
  auto format =
      std::make_unique<CompletionFormat>(std::move(meta), tok, std::move(echo), req->logprobs >= 0);
  return PreparedJob{std::move(format), std::move(plan)};
}

}  // namespace

void handle_completions(ServerContext& ctx, HttpRequest& request,
                        const std::shared_ptr<ResponseChannel>& channel) {
  const ModelServices* m = model_for_inference(ctx, *channel);
  if (m == nullptr) return;
  run_prepared(ctx, *m, request, channel, prepare_completions);
}

}  // namespace novaserve
