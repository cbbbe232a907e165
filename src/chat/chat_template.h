// Chat templates: a model's Jinja template (GGUF `tokenizer.chat_template`) parsed once and
// rendered per request, byte-for-byte as Hugging Face transformers renders it with jinja2
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, HF's tojson,
// raise_exception and strftime_now).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja_interpreter.h"
#include "common/result.h"

namespace novaserve {

/// A parsed chat template. Cheap to copy (the syntax tree is shared, immutable) and safe to
/// render from several threads at once.
class ChatTemplate {
 public:
  /// Parses `source`. Errors: kInvalidInput for syntax errors, kUnsupported for valid Jinja this
  /// engine lacks (include/extends/import tags, recursive loops); the message names the
  /// construct and the template line: "chat template line 3: unknown tag 'foo'".
  static Result<ChatTemplate> parse(std::string_view source);

  /// Renders with `context` (a JSON object: messages, add_generation_prompt, bos_token, ... as
  /// top-level variables; key order is kept, which `tojson` shows). JSON null is Python None
  /// and prints as "None", exactly as jinja2 does; render_chat avoids it for message content.
  /// Errors: kInvalidInput when the template fails at run time (raise_exception, undefined
  /// attribute access, type errors, runaway loops), kUnsupported when it reaches a construct
  /// this engine lacks (a filter such as groupby, a non-ASCII case mapping); the message names
  /// it and its line. Never returns partial output.
  Result<std::string> render(const nlohmann::ordered_json& context,
                             const jinja::RenderOptions& options = {}) const;

  const std::string& source() const { return *source_; }

 private:
  ChatTemplate(std::shared_ptr<const jinja::Body> body, std::shared_ptr<const std::string> source)
      : body_(std::move(body)), source_(std::move(source)) {}

  std::shared_ptr<const jinja::Body> body_;
  std::shared_ptr<const std::string> source_;
};

}  // namespace novaserve
