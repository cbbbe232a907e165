#include "server/chat_handler.h"

#include "server/chat_format.h"
#include "server/chat_prompt.h"
#include "server/chat_request.h"
#include "server/handler_common.h"
#include "server/prepared_request.h"
#include "server/prompt_fit.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {

namespace {

// On the tokenize pool (see prepared_request.h).
Prepared prepare_chat_completions(const ServerContext& ctx, const ModelServices& m,
                                  const std::string& body_text) {
  auto body = parse_json_object(body_text);
  if (!body.ok()) return HttpResponse::error(body.error());
  auto req = parse_chat_request(body.value(), m.engine->n_vocab());
  if (!req.ok()) return HttpResponse::error(req.error());
  const GenerationParams& gen = req->gen;
  if (auto e = check_model_name(ctx, gen.model)) return HttpResponse::error(*e);

  auto text = render_messages(m, req->messages, req->add_generation_prompt,
                              req->continue_final_message, req->template_kwargs);
  if (!text.ok()) return HttpResponse::error(text.error());
  const Tokenizer& tok = *m.tokenizer;
  // The template writes BOS itself where the model wants it (vLLM: add_special_tokens=false).
  std::vector<int32_t> ids =
      tok.encode(text.value(), /*add_special=*/false, /*parse_special=*/true);
  auto max_tokens = fit_prompt(ids, gen, m.engine->context_length(), -1, "messages");
  if (!max_tokens.ok()) return HttpResponse::error(max_tokens.error());

  JobPlan plan;
  plan.prompt_tokens = static_cast<int64_t>(ids.size());
  for (int32_t j = 0; j < gen.n; ++j) {
    ChoicePlan c{ids, max_tokens.value(), std::nullopt};
    if (gen.sampling.seed) c.seed = *gen.sampling.seed + static_cast<uint64_t>(j);
    plan.choices.push_back(std::move(c));
  }
  plan.sampling = gen.sampling;
  plan.min_tokens = gen.min_tokens;
  plan.ignore_eos = gen.ignore_eos;
  plan.stop_token_ids = gen.stop_token_ids;
  plan.stop = gen.stop;
  plan.priority = gen.priority;
  plan.top_logprobs = req->logprobs ? req->top_logprobs : -1;
  plan.stream = gen.stream;
  plan.include_usage = gen.include_usage;

  ResponseMeta meta{make_response_id("chatcmpl-"), unix_now(), ctx.config.model_name,
                    gen.include_usage};
  auto format = std::make_unique<ChatFormat>(std::move(meta), tok, req->logprobs);
  return PreparedJob{std::move(format), std::move(plan)};
}

}  // namespace

void handle_chat_completions(ServerContext& ctx, HttpRequest& request,
                             const std::shared_ptr<ResponseChannel>& channel) {
  const ModelServices* m = model_for_inference(ctx, *channel);
  if (m == nullptr) return;
  run_prepared(ctx, *m, request, channel, prepare_chat_completions);
}

}  // namespace novaserve
