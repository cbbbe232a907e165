#include "server/text_handlers.h"

#include "common/utf8.h"
#include "server/chat_prompt.h"
#include "server/chat_request.h"
#include "server/handler_common.h"
#include "server/json_fields.h"
#include "server/prepared_request.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

// Rendered messages of a body, with its add_generation_prompt (default true) and kwargs.
ApiResult<std::string> render_body(const ModelServices& m, const Json& body) {
  auto messages = parse_chat_messages(body);
  if (!messages.ok()) return messages.error();
  const FieldReader f(body);
  std::optional<bool> add_gen;
  if (auto e = f.get_bool("add_generation_prompt", add_gen)) return *e;
  Json kwargs;
  if (const Json* kw = f.find("chat_template_kwargs")) {
    if (!kw->is_object()) return f.type_error("chat_template_kwargs", "an object", *kw);
    kwargs = *kw;
  }
  return render_messages(m, messages.value(), add_gen.value_or(true), false, kwargs);
}

// The prepare phases (see prepared_request.h): they run on the tokenize pool.

Prepared prepare_tokenize(const ServerContext& ctx, const ModelServices& m,
                          const std::string& body_text) {
  auto body = parse_json_object(body_text);
  if (!body.ok()) return HttpResponse::error(body.error());
  const FieldReader f(body.value());
  std::optional<std::string> text, content, model;
  std::optional<bool> add_special_tokens, add_special, with_pieces;
  for (auto e : {f.get_string("prompt", text), f.get_string("content", content),
                 f.get_string("model", model), f.get_bool("add_special_tokens", add_special_tokens),
                 f.get_bool("add_special", add_special), f.get_bool("with_pieces", with_pieces)}) {
    if (e) return HttpResponse::error(*e);
  }
  if (auto e = check_model_name(ctx, model)) return HttpResponse::error(*e);
  bool add = false;
  if (f.find("messages") != nullptr) {
    auto rendered = render_body(m, body.value());
    if (!rendered.ok()) return HttpResponse::error(rendered.error());
    text = std::move(rendered.value());
    add = add_special_tokens.value_or(false);  // the template adds BOS where wanted
  } else if (text) {
    add = add_special_tokens.value_or(true);  // vLLM's default
  } else if (content) {
    text = std::move(content);
    add = add_special.value_or(false);  // llama.cpp-server's default
  } else {
    return HttpResponse::error(
        invalid_request("one of prompt, content or messages is required", "prompt"));
  }
  const Tokenizer& tok = *m.tokenizer;
  const std::vector<int32_t> ids = tok.encode(*text, add, /*parse_special=*/true);
  Json tokens = Json::array();
  for (int32_t id : ids) {
    if (with_pieces.value_or(false)) {
      Json p = Json::object();
      p["id"] = id;
      p["piece"] = utf8::sanitize(tok.token_to_piece(id, /*special=*/true));
      tokens.push_back(std::move(p));
    } else {
      tokens.push_back(id);
    }
  }
  Json out = Json::object();
  out["tokens"] = std::move(tokens);
  out["count"] = ids.size();
  out["max_model_len"] = m.engine->context_length();
  return HttpResponse::json(200, out);
}

Prepared prepare_detokenize(const ServerContext&, const ModelServices& m,
                            const std::string& body_text) {
  auto body = parse_json_object(body_text);
  if (!body.ok()) return HttpResponse::error(body.error());
  const FieldReader f(body.value());
  const Json* tokens = f.find("tokens");
  if (tokens == nullptr)
    return HttpResponse::error(invalid_request("tokens is required", "tokens"));
  if (!tokens->is_array()) {
    return HttpResponse::error(f.type_error("tokens", "an array of token ids", *tokens));
  }
  const int32_t n_vocab = m.tokenizer->n_vocab();
  std::vector<int32_t> ids;
  for (const Json& v : *tokens) {
    const auto id = v.is_number() ? json_integer(v) : std::nullopt;
    if (!id || *id < 0 || *id >= n_vocab) {
      return HttpResponse::error(invalid_request(
          "tokens must hold token ids in [0, " + std::to_string(n_vocab) + "), found " + v.dump(),
          "tokens"));
    }
    ids.push_back(static_cast<int32_t>(*id));
  }
  const std::string text = utf8::sanitize(m.tokenizer->decode(ids));
  Json out = Json::object();
  out["prompt"] = text;
  out["content"] = text;
  return HttpResponse::json(200, out);
}

Prepared prepare_apply_template(const ServerContext&, const ModelServices& m,
                                const std::string& body_text) {
  auto body = parse_json_object(body_text);
  if (!body.ok()) return HttpResponse::error(body.error());
  auto prompt = render_body(m, body.value());
  if (!prompt.ok()) return HttpResponse::error(prompt.error());
  return HttpResponse::json(200, Json{{"prompt", prompt.value()}});
}

// They answer while draining, so only a model that is still loading turns them away here.
void run_utility(ServerContext& ctx, HttpRequest& request,
                 const std::shared_ptr<ResponseChannel>& channel, PrepareFn prepare) {
  const ModelServices* m = model_for_utility(ctx, *channel);
  if (m == nullptr) return;
  run_prepared(ctx, *m, request, channel, prepare);
}

}  // namespace

void handle_tokenize(ServerContext& ctx, HttpRequest& request,
                     const std::shared_ptr<ResponseChannel>& channel) {
  run_utility(ctx, request, channel, prepare_tokenize);
}

void handle_detokenize(ServerContext& ctx, HttpRequest& request,
                       const std::shared_ptr<ResponseChannel>& channel) {
  run_utility(ctx, request, channel, prepare_detokenize);
}

void handle_apply_template(ServerContext& ctx, HttpRequest& request,
                           const std::shared_ptr<ResponseChannel>& channel) {
  run_utility(ctx, request, channel, prepare_apply_template);
}

}  // namespace novaserve
