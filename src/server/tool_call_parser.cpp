#include "server/tool_call_parser.h"

#include <random>

#include "server/json_body.h"

namespace novaserve {
namespace {

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kMistralOpen = "[TOOL_CALLS]";
constexpr std::string_view kMistralArgs = "[ARGS]";
constexpr std::string_view kPythonTag = "<|python_tag|>";

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

size_t skip_space(std::string_view s, size_t i) {
  while (i < s.size() && is_space(s[i])) ++i;
  return i;
}

std::string_view trim(std::string_view s) {
  const size_t b = skip_space(s, 0);
  size_t e = s.size();
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// Length of the longest proper suffix of `text` that is a prefix of `marker`: that much of the
// tail may still become the marker, so streaming holds it back.
size_t partial_marker_tail(std::string_view text, std::string_view marker) {
  const size_t most = std::min(text.size(), marker.size() - 1);
  for (size_t n = most; n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

// A call object {"name": str, <args_key>: object | JSON string}; false when it is not one.
bool read_call(const Json& obj, std::initializer_list<const char*> args_keys, ToolParser p,
               ToolCall& out) {
  if (!obj.is_object()) return false;
  const auto name = obj.find("name");
  if (name == obj.end() || !name->is_string()) return false;
  out.id = make_tool_call_id(p);
  out.name = name->get<std::string>();
  out.arguments = "{}";
  for (const char* key : args_keys) {
    const auto a = obj.find(key);
    if (a == obj.end()) continue;
    if (a->is_object()) {
      out.arguments = dump_json(*a);
    } else if (a->is_string()) {
      auto parsed = parse_json_object(a->get<std::string>());
      if (!parsed.ok()) return false;
      out.arguments = dump_json(parsed.value());
    } else {
      return false;
    }
    break;
  }
  return true;
}

// The JSON value (object or array) at text[pos], parsed; advances `pos` past it.
std::optional<Json> take_json(std::string_view text, size_t& pos) {
  const auto end = json_value_end(text, pos, kMaxJsonDepth);
  if (!end) return std::nullopt;
  Json j = Json::parse(text.substr(pos, *end - pos), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  pos = *end;
  return j;
}

bool parse_hermes(std::string_view text, ParsedReply& out) {
  size_t pos = 0;
  for (;;) {
    const size_t open = text.find(kHermesOpen, pos);
    if (open == std::string_view::npos) {
      out.content.append(text.substr(pos));
      return true;
    }
    out.content.append(text.substr(pos, open - pos));
    size_t at = skip_space(text, open + kHermesOpen.size());
    auto j = take_json(text, at);
    ToolCall call;
    if (!j || !read_call(*j, {"arguments", "parameters"}, ToolParser::kHermes, call)) return false;
    out.calls.push_back(std::move(call));
    at = skip_space(text, at);
    if (text.substr(at, kHermesClose.size()) == kHermesClose) {
      pos = at + kHermesClose.size();
    } else if (at == text.size()) {
      pos = at;  // the closing tag is often the stop token's neighbour and may be cut
    } else {
      return false;
    }
  }
}

bool parse_llama3(std::string_view text, ParsedReply& out) {
  size_t at = skip_space(text, 0);
  const size_t tag = text.find(kPythonTag);
  if (tag != std::string_view::npos) {
    out.content.append(text.substr(0, tag));
    at = skip_space(text, tag + kPythonTag.size());
  } else if (at >= text.size() || text[at] != '{') {
    out.content.append(text);
    return true;
  }
  for (;;) {
    auto j = take_json(text, at);
    ToolCall call;
    if (!j || !read_call(*j, {"parameters", "arguments"}, ToolParser::kLlama3Json, call)) {
      return false;
    }
    out.calls.push_back(std::move(call));
    at = skip_space(text, at);
    if (at < text.size() && text[at] == ';') at = skip_space(text, at + 1);
    if (at == text.size()) return true;
    if (text[at] != '{') return false;
  }
}

bool parse_mistral(std::string_view text, ParsedReply& out) {
  size_t open = text.find(kMistralOpen);
  if (open == std::string_view::npos) {
    out.content.append(text);
    return true;
  }
  out.content.append(text.substr(0, open));
  while (open != std::string_view::npos) {
    size_t at = skip_space(text, open + kMistralOpen.size());
    if (at < text.size() && (text[at] == '[' || text[at] == '{')) {
      auto j = take_json(text, at);
      if (!j) return false;
      const Json list = j->is_array() ? *j : Json::array({*j});
      for (const Json& item : list) {
        ToolCall call;
        if (!read_call(item, {"arguments", "parameters"}, ToolParser::kMistral, call)) return false;
        out.calls.push_back(std::move(call));
      }
    } else {
      // v11: name[ARGS]{...}
      const size_t args = text.find(kMistralArgs, at);
      if (args == std::string_view::npos) return false;
      ToolCall call;
      call.id = make_tool_call_id(ToolParser::kMistral);
      call.name = std::string(trim(text.substr(at, args - at)));
      at = skip_space(text, args + kMistralArgs.size());
      auto j = take_json(text, at);
      if (call.name.empty() || !j || !j->is_object()) return false;
      call.arguments = dump_json(*j);
      out.calls.push_back(std::move(call));
    }
    at = skip_space(text, at);
    open = text.find(kMistralOpen, at);
    if (open == std::string_view::npos && at != text.size()) return false;
    if (open != std::string_view::npos && trim(text.substr(at, open - at)).size() > 0) return false;
  }
  return true;
}

}  // namespace

std::optional<ToolParser> tool_parser_from_name(std::string_view name) {
  if (name == "llama3_json" || name == "llama3") return ToolParser::kLlama3Json;
  if (name == "hermes" || name == "qwen" || name == "qwen2_5") return ToolParser::kHermes;
  if (name == "mistral") return ToolParser::kMistral;
  return std::nullopt;
}

const char* tool_parser_name(ToolParser p) {
  switch (p) {
    case ToolParser::kLlama3Json:
      return "llama3_json";
    case ToolParser::kHermes:
      return "hermes";
    case ToolParser::kMistral:
      return "mistral";
  }
  return "hermes";
}

ToolParser detect_tool_parser(std::string_view src) {
  if (src.find(kMistralOpen) != std::string_view::npos) return ToolParser::kMistral;
  if (src.find(kHermesOpen) != std::string_view::npos) return ToolParser::kHermes;
  if (src.find("python_tag") != std::string_view::npos ||
      src.find("ipython") != std::string_view::npos) {
    return ToolParser::kLlama3Json;
  }
  return ToolParser::kHermes;
}

std::string make_tool_call_id(ToolParser p) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kAlnum[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  if (p == ToolParser::kMistral) {
    std::string id;
    for (int i = 0; i < 9; ++i) id += kAlnum[rng() % 62];
    return id;
  }
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kAlnum[rng() % 16];
  return id;
}

std::optional<size_t> json_value_end(std::string_view text, size_t pos, int max_depth) {
  if (pos >= text.size() || (text[pos] != '{' && text[pos] != '[')) return std::nullopt;
  int depth = 0;
  bool in_string = false;
  for (size_t i = pos; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) return std::nullopt;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::nullopt;
}

ParsedReply parse_tool_reply(ToolParser p, std::string_view text) {
  ParsedReply out;
  bool ok = false;
  switch (p) {
    case ToolParser::kHermes:
      ok = parse_hermes(text, out);
      break;
    case ToolParser::kLlama3Json:
      ok = parse_llama3(text, out);
      break;
    case ToolParser::kMistral:
      ok = parse_mistral(text, out);
      break;
  }
  if (!ok) {
    out.calls.clear();
    out.content.assign(text);
  }
  return out;
}

size_t tool_content_prefix(ToolParser p, std::string_view text, bool& call_started) {
  call_started = false;
  std::string_view marker = p == ToolParser::kMistral  ? kMistralOpen
                            : p == ToolParser::kHermes ? kHermesOpen
                                                       : kPythonTag;
  if (p == ToolParser::kLlama3Json) {
    const size_t first = skip_space(text, 0);
    if (first == text.size()) return 0;  // only blanks: a JSON call may still follow
    if (text[first] == '{') {
      call_started = true;
      return 0;
    }
    if (kPythonTag.substr(0, text.size() - first) == text.substr(first) &&
        text.size() - first < kPythonTag.size()) {
      return 0;  // the start of <|python_tag|>
    }
  }
  const size_t at = text.find(marker);
  if (at != std::string_view::npos) {
    call_started = true;
    return at;
  }
  return text.size() - partial_marker_tail(text, marker);
}

}  // namespace novaserve
