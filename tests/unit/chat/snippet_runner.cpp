#include "snippet_runner.h"

#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "jinja_reference.h"

namespace novaserve::testing {

void expect_engine_matches(const std::vector<Snippet>& snippets) {
  jinja::RenderOptions options;
  options.now = pinned_now();
  for (const Snippet& s : snippets) {
    SCOPED_TRACE(s.name);
    auto tmpl = ChatTemplate::parse(s.source);
    Result<std::string> out =
        tmpl.ok() ? tmpl->render(nlohmann::ordered_json::parse(s.context_json), options)
                  : Result<std::string>(tmpl.error());
    if (s.expected == nullptr) {
      EXPECT_FALSE(out.ok()) << "jinja2 fails on this template but we rendered: "
                             << (out.ok() ? out.value() : "");
      if (!out.ok()) {
        EXPECT_NE(out.error().message.find("line"), std::string::npos) << out.error().message;
      }
    } else {
      ASSERT_TRUE(out.ok()) << out.error().message;
      EXPECT_EQ(out.value(), s.expected);
    }
  }
}

void expect_jinja2_matches(const std::vector<Snippet>& snippets) {
  std::vector<ReferenceJob> jobs;
  for (const Snippet& s : snippets) {
    jobs.push_back({s.name, s.source, nlohmann::ordered_json::parse(s.context_json)});
  }
  std::string why;
  if (!reference_python(&why)) GTEST_SKIP() << why;
  auto results = run_reference(jobs, &why);
  ASSERT_TRUE(results.has_value()) << why;
  for (const Snippet& s : snippets) {
    SCOPED_TRACE(s.name);
    const ReferenceResult& r = results->at(s.name);
    if (s.expected == nullptr) {
      EXPECT_FALSE(r.ok) << "jinja2 rendered " << r.text;
    } else {
      ASSERT_TRUE(r.ok) << r.error;
      EXPECT_EQ(r.text, s.expected);
    }
  }
}

}  // namespace novaserve::testing
