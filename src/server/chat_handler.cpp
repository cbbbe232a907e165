#include "server/chat_handler.h"

#include "server/chat_format.h"
#include "server/chat_prompt.h"
#include "server/chat_request.h"
#include "server/handler_common.h"
#include "server/prepared_request.h"
#include "server/prompt_fit.h"
#include "server/tool_grammar.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {

namespace {

// The template variables: the client's chat_template_kwargs plus `tools` (HF convention), which
// a kwarg of the same name overrides.
Json template_variables(const ChatRequest& req) {
  Json vars = req.template_kwargs.is_object() ? req.template_kwargs : Json::object();
  if (!req.tools.tools_json.is_null() && !vars.contains("tools"))
    vars["tools"] = req.tools.tools_json;
  return vars;
}

// The compiled constraint of the request: its response_format (or another dialect's field) or
// the grammar that enforces tool_choice; never both.
ApiResult<grammar::CompiledGrammarPtr> request_grammar(const ModelServices& m,
                                                       const ChatRequest& req) {
  std::optional<OutputConstraint> forced = tool_choice_constraint(req.tools);
  if (forced && req.gen.constraint) {
    return invalid_request(
        "tool_choice '" +
            std::string(req.tools.choice == ToolChoice::kNamed ? "function" : "required") +
            "' cannot be combined with " + req.gen.constraint->param,
        "tool_choice");
  }
  const std::optional<OutputConstraint>& c = forced ? forced : req.gen.constraint;
  if (!c) return grammar::CompiledGrammarPtr();
  return compile_output_constraint(m.grammar, *c);
}

// How replies carry calls, and which marker tokens the output must keep for the parser.
ToolReplyConfig tool_reply(const ModelServices& m, const ToolsRequest& t,
                           std::vector<int32_t>& shown_controls) {
  ToolReplyConfig cfg;
  cfg.parser = m.tool_parser;
  cfg.parallel = t.parallel_calls;
  if (!t.active()) return cfg;
  switch (t.choice) {
    case ToolChoice::kNamed:
      cfg.shape = ToolReplyShape::kArguments;
      cfg.named = t.named;
      return cfg;
    case ToolChoice::kRequired:
      cfg.shape = ToolReplyShape::kCallArray;
      return cfg;
    default:
      cfg.shape = ToolReplyShape::kFamily;
  }
  const Tokenizer& tok = *m.tokenizer;
  for (const char* marker :
       {"[TOOL_CALLS]", "[ARGS]", "<|python_tag|>", "<tool_call>", "</tool_call>"}) {
    const auto id = tok.find_token(marker);
    if (id && tok.token_type(*id) == TokenType::kControl) shown_controls.push_back(*id);
  }
  return cfg;
}

// tool_choice auto: once the model writes its family's call marker (a single token of the
// vocabulary), the call that follows is constrained to the tools and their schemas. Compiled
// whatever the vocabulary, so that a schema the engine cannot enforce is refused the same way on
// every model.
std::optional<ApiError> auto_call_grammar(const ModelServices& m, const ChatRequest& req,
                                          const ToolReplyConfig& tools, JobPlan& plan) {
  if (tools.shape != ToolReplyShape::kFamily) return std::nullopt;
  auto g = compile_output_constraint(m.grammar, tool_call_span_constraint(req.tools, tools.parser));
  if (!g.ok()) return g.error();
  const auto marker = m.tokenizer->find_token(tool_call_marker(tools.parser));
  if (marker && !plan.grammar) {
    plan.trigger_grammar = std::move(g.value());
    plan.trigger_tokens = {*marker};
  }
  return std::nullopt;
}

// On the tokenize pool (see prepared_request.h).
Prepared prepare_chat_completions(const ServerContext& ctx, const ModelServices& m,
                                  const std::string& body_text) {
  auto body = parse_json_object(body_text);
  if (!body.ok()) return HttpResponse::error(body.error());
  auto req = parse_chat_request(body.value(), m.engine->n_vocab());
  if (!req.ok()) return HttpResponse::error(req.error());
  const GenerationParams& gen = req->gen;
  if (auto e = check_model_name(ctx, gen.model)) return HttpResponse::error(*e);

  auto grammar = request_grammar(m, req.value());
  if (!grammar.ok()) return HttpResponse::error(grammar.error());

  auto text = render_messages(m, req->messages, req->add_generation_prompt,
                              req->continue_final_message, template_variables(req.value()));
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
  plan.grammar = std::move(grammar.value());
  ToolReplyConfig tools = tool_reply(m, req->tools, plan.shown_controls);
  if (auto e = auto_call_grammar(m, req.value(), tools, plan)) return HttpResponse::error(*e);
  plan.stream = gen.stream;
  plan.include_usage = gen.include_usage;

  ResponseMeta meta{make_response_id("chatcmpl-"), unix_now(), ctx.config.model_name,
                    gen.include_usage};
  auto format = std::make_unique<ChatFormat>(std::move(meta), tok, req->logprobs,
                                             plan.choices.size(), std::move(tools));
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
