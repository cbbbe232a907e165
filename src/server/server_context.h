// Everything the HTTP handlers share: configuration, lifecycle, metrics, auth, and the loaded
// model's services (published once loading finishes).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "chat/chat_template.h"
#include "engine/request.h"
#include "grammar/grammar.h"
#include "server/admission.h"
#include "server/auth.h"
#include "server/lifecycle.h"
#include "server/metrics.h"
#include "server/tool_call_parser.h"

namespace novaserve {

class Tokenizer;

struct ServerConfig {
  std::string model_name;  ///< --served-model-name (default: the model file's stem)
};

/// What requests need from the loaded model. Immutable once published.
struct ModelServices {
  EngineClient* engine = nullptr;
  const Tokenizer* tokenizer = nullptr;
  std::optional<ChatTemplate> chat_template;  ///< none: chat endpoints answer 400
  std::string bos_token;                      ///< texts passed to chat templates
  std::string eos_token;
  /// Compiles structured-output constraints for this model's vocabulary (thread-safe); null
  /// when none was built (then constrained requests answer 400).
  grammar::GrammarCompiler* grammar = nullptr;
  /// --tool-call-parser, else detected from the chat template (tool_call_parser.h).
  ToolParser tool_parser = ToolParser::kHermes;
};

class ServerContext {
 public:
  /// `model_name`: config.model_name and the model_name label of the metrics.
  explicit ServerContext(std::string model_name = "")
      : config{model_name}, metrics(std::move(model_name)) {}

  ServerConfig config;
  Lifecycle lifecycle;
  ServerMetrics metrics;
  ApiKeyAuth auth;
  Admission admission;
  /// Where handlers run their prepare phase (see prepared_request.h): the --threads-tokenize
  /// pool, set by HttpServer (tests set their own). Must stay valid while handlers run.
  boost::asio::any_io_executor tokenize_executor;

  /// Makes `m` (which must outlive the server's handlers) visible and switches to serving.
  void publish(const ModelServices* m) {
    model_ = m;
    lifecycle.set_serving();  // release: handlers that see kServing see model_
  }
  /// The model services, or null while loading.
  const ModelServices* model() const {
    return lifecycle.state() == ServeState::kLoading ? nullptr : model_;
  }

 private:
  const ModelServices* model_ = nullptr;
};

}  // namespace novaserve
