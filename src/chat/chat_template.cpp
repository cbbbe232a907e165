#include "chat/chat_template.h"

#include <exception>

#include "chat/jinja_error.h"
#include "chat/jinja_json.h"
#include "chat/jinja_parser.h"

namespace novaserve {
namespace {

Error to_error(const jinja::TemplateError& e) {
  std::string where = e.line > 0 ? "chat template line " + std::to_string(e.line) : "chat template";
  return Err(e.unsupported ? ErrorCode::kUnsupported : ErrorCode::kInvalidInput,
             where + ": " + e.message);
}

}  // namespace

Result<ChatTemplate> ChatTemplate::parse(std::string_view source) {
  try {
    auto body = std::make_shared<const jinja::Body>(jinja::parse_template(source));
    return ChatTemplate(std::move(body), std::make_shared<const std::string>(source));
  } catch (const jinja::TemplateError& e) {
    return to_error(e);
  } catch (const std::exception& e) {  // allocation failure on absurd input
    return Err(ErrorCode::kInternal, std::string("chat template parse failed: ") + e.what());
  }
}

Result<std::string> ChatTemplate::render(const nlohmann::ordered_json& context,
                                         const jinja::RenderOptions& options) const {
  if (!context.is_object()) {
    return Err(ErrorCode::kInvalidInput, "chat template context must be a JSON object");
  }
  try {
    jinja::Value ctx = jinja::from_json(context);
    jinja::Interpreter interpreter(options);
    return interpreter.render(*body_, ctx);
  } catch (const jinja::TemplateError& e) {
    return to_error(e);
  } catch (const std::exception& e) {
    return Err(ErrorCode::kInternal, std::string("chat template render failed: ") + e.what());
  }
}

}  // namespace novaserve
