// fit_prompt: default and explicit max_tokens against the context, truncation on request only.
#include "server/prompt_fit.h"

#include <gtest/gtest.h>

namespace novaserve {
namespace {

std::vector<int32_t> ids(int n) {
  std::vector<int32_t> v;
  for (int i = 0; i < n; ++i) v.push_back(i);
  return v;
}

TEST(PromptFit, DefaultsAreCappedByTheRoomLeft) {
  GenerationParams g;
  auto p = ids(10);
  EXPECT_EQ(fit_prompt(p, g, 100, 16, "prompt").value(), 16);
  EXPECT_EQ(fit_prompt(p, g, 20, 16, "prompt").value(), 10);
  EXPECT_EQ(fit_prompt(p, g, 100, -1, "messages").value(), 90);
}

TEST(PromptFit, ExplicitMaxTokensMustFit) {
  GenerationParams g;
  g.max_tokens = 90;
  auto p = ids(10);
  EXPECT_EQ(fit_prompt(p, g, 100, 16, "prompt").value(), 90);
  g.max_tokens = 91;
  auto r = fit_prompt(p, g, 100, 16, "prompt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().param, "max_tokens");
  EXPECT_EQ(r.error().code, "context_length_exceeded");
  EXPECT_NE(r.error().message.find("101 tokens (10 in the prompt, 91 for the completion)"),
            std::string::npos)
      << r.error().message;
}

TEST(PromptFit, PromptFillingTheContextIsRejectedUnlessTruncated) {
  GenerationParams g;
  auto p = ids(100);
  auto r = fit_prompt(p, g, 100, 16, "messages");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().param, "messages");
  EXPECT_NE(r.error().message.find("has 100 tokens"), std::string::npos);
  EXPECT_EQ(p.size(), 100u);  // untouched: truncation only when asked
  g.truncate_prompt_tokens = 60;
  EXPECT_EQ(fit_prompt(p, g, 100, 16, "prompt").value(), 16);
  ASSERT_EQ(p.size(), 60u);
  EXPECT_EQ(p.front(), 40);  // the last 60 tokens are kept
}

TEST(PromptFit, TruncationBeyondTheContextAndEmptyPromptsAreErrors) {
  GenerationParams g;
  g.truncate_prompt_tokens = 101;
  auto p = ids(5);
  EXPECT_EQ(fit_prompt(p, g, 100, 16, "prompt").error().param, "truncate_prompt_tokens");
  std::vector<int32_t> empty;
  EXPECT_EQ(fit_prompt(empty, GenerationParams{}, 100, 16, "prompt").error().param, "prompt");
}

TEST(PromptFit, MinTokensBeyondTheRoomIsAnError) {
  GenerationParams g;
  g.min_tokens = 50;
  auto p = ids(60);
  auto r = fit_prompt(p, g, 100, -1, "prompt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().param, "min_tokens");
}

}  // namespace
}  // namespace novaserve
