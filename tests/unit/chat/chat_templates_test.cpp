// Renders every real chat template in ../shared/testdata/chat-templates with our engine and with
// Python jinja2 (Hugging Face's environment, tools/reference/render_templates.py) on fixed
// conversations, and compares the prompts byte for byte.
//
// Conversations: system+user, multi-turn (user/assistant/user), and one whose assistant turn has
// null content; each with add_generation_prompt false and true; no tools; bos "<s>", eos "</s>";
// strftime_now pinned. Both renderers get the context that render_chat builds, in which null
// content becomes "" (jinja2 itself would print "None" or fail on None + str in 19 of these
// templates; see build_chat_context).
//
// Per case, the outcomes must agree: same text, or both fail. A template "matches" when all its
// cases agree. The test fails on any wrong prompt (we render text that differs from jinja2's,
// or render where jinja2 fails), on a failure of ours that is not a kUnsupported error naming
// the missing construct, and when fewer than 45 of the templates match.
//
// A second test runs the same comparison on tool-calling conversations (tool definitions, an
// assistant tool call with dict arguments, a tool result), which reach far more of each
// template (tojson with indent, dictsort, macros over JSON schemas, namespaces).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "chat/chat_render.h"
#include "chat/chat_template.h"
#include "jinja_reference.h"

namespace novaserve {
namespace {

using testing::ReferenceJob;
using testing::ReferenceResult;

constexpr int kMinMatching = 45;

struct Conversation {
  std::string name;
  nlohmann::ordered_json messages;
  nlohmann::ordered_json extra = nullptr;  ///< further context variables (tools)
};

std::vector<Conversation> plain_conversations() {
  using J = nlohmann::ordered_json;
  // Non-ASCII text, quotes and surrounding whitespace exercise tojson, trim and escaping.
  return {
      {"system_user", J::array({{{"role", "system"}, {"content", "You are a helpful assistant."}},
                                {{"role", "user"}, {"content", "Hello! Wie geht's? 你好 😊"}}})},
      {"multi_turn", J::array({{{"role", "user"}, {"content", "What is 2+2?"}},
                               {{"role", "assistant"}, {"content", "  2 + 2 = 4.\n"}},
                               {{"role", "user"}, {"content", "And \"3*3\"?"}}})},
      {"null_assistant", J::array({{{"role", "user"}, {"content", "Hi"}},
                                   {{"role", "assistant"}, {"content", nullptr}},
                                   {{"role", "user"}, {"content", "Are you there?"}}})},
  };
}

std::vector<Conversation> tool_conversations() {
  using J = nlohmann::ordered_json;
  J tools = J::parse(R"([{"type": "function", "function": {
      "name": "get_weather", "description": "Get the weather.\nIn a city.",
      "parameters": {"type": "object", "properties": {
          "city": {"type": "string", "description": "City name"},
          "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
          "days": {"type": "integer", "minimum": 1},
          "hourly": {"type": "boolean"},
          "fields": {"type": "array", "items": {"type": "string"}}},
        "required": ["city"]}}}])");
  J call = J::parse(R"({"id": "call12345", "type": "function", "function": {
      "name": "get_weather",
      "arguments": {"city": "Zürich \"HB\"", "days": 2, "hourly": true, "fields": ["temp"]}}})");
  J base = J::array({{{"role", "system"}, {"content", "You are helpful."}},
                     {{"role", "user"}, {"content", "Weather in Zürich?"}}});
  J with_call = base;
  with_call.push_back(
      {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", J::array({call})}});
  with_call.push_back({{"role", "tool"},
                       {"tool_call_id", "call12345"},
                       {"name", "get_weather"},
                       {"content", "{\"temp\": 21.5}"}});
  J answered = with_call;
  answered.push_back({{"role", "assistant"}, {"content", "It is 21.5 °C."}});
  answered.push_back({{"role", "user"}, {"content", "Thanks!"}});
  J extra = {{"tools", tools}};
  // Two calls in one turn (parallel_tool_calls) with their two results, as the server passes
  // them: arguments parsed into mappings (normalize_tool_messages), OpenAI's 9+ character ids.
  J parallel = base;
  J call2 = J::parse(R"({"id": "call67890", "type": "function", "function": {
      "name": "get_weather", "arguments": {"city": "Bern", "unit": "f"}}})");
  parallel.push_back({{"role", "assistant"},
                      {"content", "Checking both."},
                      {"tool_calls", J::array({call, call2})}});
  parallel.push_back({{"role", "tool"}, {"tool_call_id", "call12345"}, {"content", "21.5"}});
  parallel.push_back({{"role", "tool"}, {"tool_call_id", "call67890"}, {"content", "70.1"}});
  return {{"tools_defined", base, extra},
          {"tool_call_pending", with_call, extra},
          {"tool_call_answered", answered, extra},
          {"tool_calls_parallel", parallel, extra}};
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// First differing position, with a little context, for failure messages.
std::string describe_diff(const std::string& ours, const std::string& ref) {
  size_t i = 0;
  while (i < ours.size() && i < ref.size() && ours[i] == ref[i]) ++i;
  size_t from = i > 40 ? i - 40 : 0;
  return "first difference at byte " + std::to_string(i) +
         "\n  ours:   " + nlohmann::json(ours.substr(from, 100)).dump() +
         "\n  jinja2: " + nlohmann::json(ref.substr(from, 100)).dump();
}

struct CorpusOutcome {
  int templates = 0;
  int matched = 0;
  int same_text_cases = 0;  ///< cases both rendered, identically
  int both_fail_cases = 0;  ///< cases both refused (raise_exception, undefined variable ...)
  std::vector<std::string> not_matching;  ///< "name: our error"
};

// Renders every template on every conversation (add_generation_prompt false and true) with both
// engines and checks the per-case rules described at the top of this file.
// `only_tool_templates`: only the templates whose source mentions `tools`.
CorpusOutcome compare_corpus(const std::vector<Conversation>& convs,
                             bool only_tool_templates = false) {
  CorpusOutcome outcome;
  std::filesystem::path dir =
      std::filesystem::path(testing::shared_dir()) / "testdata" / "chat-templates";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".jinja") continue;
    if (only_tool_templates && read_file(e.path()).find("tools") == std::string::npos) continue;
    files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  EXPECT_FALSE(files.empty());

  struct Case {
    std::string id;
    nlohmann::ordered_json context;
  };
  std::vector<ReferenceJob> jobs;
  std::map<std::string, std::vector<Case>> cases;
  for (const auto& f : files) {
    std::string source = read_file(f);
    for (const auto& conv : convs) {
      for (bool agp : {false, true}) {
        Case c;
        c.id = f.filename().string() + "/" + conv.name + (agp ? "/gen" : "/nogen");
        c.context = build_chat_context(conv.messages, agp, "<s>", "</s>", conv.extra);
        jobs.push_back({c.id, source, c.context});
        cases[f.string()].push_back(std::move(c));
      }
    }
  }
  std::string why;
  auto reference = testing::run_reference(jobs, &why);
  if (!reference) {
    ADD_FAILURE() << why;
    return outcome;
  }

  jinja::RenderOptions options;
  options.now = testing::pinned_now();
  for (const auto& f : files) {
    ++outcome.templates;
    auto tmpl = ChatTemplate::parse(read_file(f));
    bool all_agree = true;
    std::string reason;
    for (const Case& c : cases[f.string()]) {
      const ReferenceResult& ref = reference->at(c.id);
      Result<std::string> ours =
          tmpl.ok() ? tmpl->render(c.context, options) : Result<std::string>(tmpl.error());
      if (ours.ok() && ref.ok) {
        EXPECT_EQ(ours.value(), ref.text)
            << "WRONG PROMPT for " << c.id << ": " << describe_diff(ours.value(), ref.text);
        if (c.id.find("null_assistant") != std::string::npos) {
          EXPECT_EQ(ours.value().find("None"), std::string::npos)
              << c.id << ": null content must render as empty";
        }
        if (ours.value() != ref.text) {
          all_agree = false;
        } else {
          ++outcome.same_text_cases;
        }
      } else if (ours.ok() && !ref.ok) {
        ADD_FAILURE() << "WRONG PROMPT for " << c.id << ": jinja2 fails (" << ref.error
                      << ") but we rendered " << nlohmann::json(ours.value()).dump();
        all_agree = false;
      } else if (!ours.ok() && ref.ok) {
        all_agree = false;
        reason = ours.error().message;
        EXPECT_EQ(ours.error().code, ErrorCode::kUnsupported)
            << c.id << ": jinja2 renders it but we fail with an error that names no missing "
            << "construct: " << ours.error().message;
        EXPECT_NE(ours.error().message.find("line"), std::string::npos) << ours.error().message;
      } else {
        ++outcome.both_fail_cases;  // e.g. gemma's raise_exception for a system turn
      }
    }
    if (all_agree) {
      ++outcome.matched;
    } else {
      outcome.not_matching.push_back(f.filename().string() + ": " + reason);
    }
  }
  return outcome;
}

bool corpus_available(std::string* why) {
  std::filesystem::path dir =
      std::filesystem::path(testing::shared_dir()) / "testdata" / "chat-templates";
  if (!std::filesystem::is_directory(dir)) {
    *why = "no template directory " + dir.string();
    return false;
  }
  return testing::reference_python(why).has_value();
}

void report(const char* label, const CorpusOutcome& o) {
  std::cout << "[" << label << "] " << o.matched << "/" << o.templates
            << " templates match jinja2 byte for byte (cases: " << o.same_text_cases
            << " identical prompts, " << o.both_fail_cases << " refused by both)\n";
  for (const auto& n : o.not_matching) std::cout << "[" << label << "] not matching: " << n << "\n";
}

TEST(ChatTemplates, RealTemplatesMatchJinja2) {
  std::string why;
  if (!corpus_available(&why)) GTEST_SKIP() << why;
  CorpusOutcome o = compare_corpus(plain_conversations());
  report("chat templates", o);
  EXPECT_GE(o.matched, kMinMatching);
}

TEST(ChatTemplates, RealTemplatesWithToolsAgreeWithJinja2) {
  std::string why;
  if (!corpus_available(&why)) GTEST_SKIP() << why;
  CorpusOutcome o = compare_corpus(tool_conversations());
  report("chat templates, tools", o);
  EXPECT_GE(o.matched, kMinMatching);
}

// The server passes `tools`, assistant tool_calls and tool results to templates (issue 21), so
// every template that uses tools must render those conversations exactly as jinja2 does: no
// template may be left out, unlike the corpus-wide floor above.
TEST(ChatTemplates, EveryTemplateThatUsesToolsRendersCallsAndResultsLikeJinja2) {
  std::string why;
  if (!corpus_available(&why)) GTEST_SKIP() << why;
  CorpusOutcome o = compare_corpus(tool_conversations(), /*only_tool_templates=*/true);
  report("templates using tools", o);
  EXPECT_GE(o.templates, 40) << "the shared corpus lost its tool templates";
  EXPECT_EQ(o.matched, o.templates);
}

}  // namespace
}  // namespace novaserve
