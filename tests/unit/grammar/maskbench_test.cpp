// MaskBench protocol on the shared sample of 406 real-world schemas
// ($NOVASERVE_SHARED_DIR/testdata/json-schemas, README.md there): compile each schema or refuse
// it with a reason; walk every test instance (compact JSON, default model's tokens) through the
// masks. Valid instances must be accepted to the end, invalid ones rejected. Fails on any
// invalidation error (an invalid instance accepted) and below 65% passing schemas; prints the
// table that docs/structured-outputs.md reports, with TTFM and TBM percentiles.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "grammar_test_util.h"

namespace novaserve::grammar {
namespace {

namespace fs = std::filesystem;
using grammar_test::compiler;
using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * v.size()))];
}

// Property names by first appearance in any `properties` of the schema document.
void collect_order(const Json& s, std::map<std::string, size_t>& rank) {
  if (s.is_object()) {
    for (const auto& [k, v] : s.items()) {
      if (k == "properties" && v.is_object()) {
        for (const auto& [name, sub] : v.items()) rank.emplace(name, rank.size());
      }
      collect_order(v, rank);
    }
  } else if (s.is_array()) {
    for (const Json& v : s) collect_order(v, rank);
  }
}

// `v` with every object's keys in schema order (unknown names last, in their order).
Json reorder(const Json& v, const std::map<std::string, size_t>& rank) {
  if (v.is_array()) {
    Json out = Json::array();
    for (const Json& x : v) out.push_back(reorder(x, rank));
    return out;
  }
  if (!v.is_object()) return v;
  std::vector<std::pair<size_t, std::string>> keys;
  size_t i = 0;
  for (const auto& [k, x] : v.items()) {
    auto it = rank.find(k);
    keys.push_back({it == rank.end() ? 1000000 + i : it->second, k});
    ++i;
  }
  std::stable_sort(keys.begin(), keys.end());
  Json out = Json::object();
  for (const auto& [r, k] : keys) out[k] = reorder(v[k], rank);
  return out;
}

struct Totals {
  int schemas = 0, passing = 0, compile_error = 0, validation_error = 0, out_of_order = 0,
      invalidation_error = 0;
  std::vector<double> ttfm_us, tbm_us;
  std::map<std::string, int> refusals;  // reason -> schemas
  std::vector<std::string> invalidations, validations;
};

// Walks `text` through a fresh matcher; records TBM; returns true when every token was allowed
// and the end is accepting.
bool walk(const CompiledGrammarPtr& g, const std::string& text, Totals& t, bool first,
          double* first_mask_us) {
  const Tokenizer* tok = grammar_test::tokenizer();
  const auto ids = tok->encode(text, false, false);
  GrammarMatcher m(g);
  std::vector<uint32_t> mask((compiler()->vocab_size() + 31) / 32);
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto t0 = Clock::now();
    m.fill_next_token_mask(mask);
    const double us = us_since(t0);
    if (first && i == 0) {
      *first_mask_us = us;
    } else {
      t.tbm_us.push_back(us);
    }
    const bool in_mask = (mask[ids[i] >> 5] >> (ids[i] & 31)) & 1;
    const bool accepted = m.accept_token(ids[i]);
    EXPECT_EQ(in_mask, accepted) << "mask and accept_token disagree at token " << i << " of "
                                 << text;
    if (!accepted) return false;
  }
  m.fill_next_token_mask(mask);  // the stop token must be allowed at the end
  const int32_t eos = tok->eos_id();
  return m.is_accepting() && ((mask[eos >> 5] >> (eos & 31)) & 1);
}

std::string reason_of(const std::string& msg) {
  const size_t q = msg.find("unsupported keyword '");
  if (q != std::string::npos) {
    const size_t e = msg.find('\'', q + 21);
    std::string r = "unsupported " + msg.substr(q + 21, e - q - 21);
    if (msg.find("format '") != std::string::npos)
      r += " " + msg.substr(msg.find("format '") + 7,
                            msg.find('\'', msg.find("format '") + 8) - msg.find("format '") - 6);
    if (msg.find("not provably exclusive") != std::string::npos) r += " (not provably exclusive)";
    return r;
  }
  if (msg.find("unsatisfiable") != std::string::npos) return "unsatisfiable";
  if (msg.find("$ref") != std::string::npos) return "$ref";
  if (msg.find("allOf") != std::string::npos) return "allOf merge";
  return msg.substr(0, 60);
}

void run_maskbench(bool unlisted) {
  const fs::path dir = tokenizer_test::shared_dir() / "testdata" / "json-schemas";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  Totals t;
  const bool verbose = std::getenv("NOVASERVE_MASKBENCH_VERBOSE") != nullptr;
  const auto start = Clock::now();
  for (const fs::path& f : files) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    const Json doc = Json::parse(ss.str(), nullptr, false);
    if (doc.is_discarded() || !doc.contains("schema")) continue;
    ++t.schemas;
    // A private compiler per schema would hide the cache; the shared one is what a server uses,
    // and the specs differ, so each compile here is a miss.
    const auto t0 = Clock::now();
    GrammarSpec spec{GrammarSpec::Kind::kJsonSchema, doc["schema"].dump(), {}};
    spec.allow_unlisted_properties = unlisted;
    auto g = compiler()->compile(spec);
    const double compile_us = us_since(t0);
    if (!g.ok()) {
      ++t.compile_error;
      ++t.refusals[reason_of(g.error().message)];
      if (verbose)
        std::printf("  compile error %s: %s\n", f.filename().c_str(),
                    g.error().message.substr(0, 300).c_str());
      continue;
    }
    bool pass = true, first = true, ooo = false;
    const size_t tbm_before = t.tbm_us.size();
    double first_mask_us = 0;
    std::map<std::string, size_t> rank;
    collect_order(doc["schema"], rank);
    for (const Json& test : doc["tests"]) {
      const std::string text = test["data"].dump();
      const bool ok = walk(g.value(), text, t, first, &first_mask_us);
      if (first) t.ttfm_us.push_back(compile_us + first_mask_us);
      first = false;
      if (test["valid"].get<bool>() && !ok) {
        pass = false;
        const std::string sorted = reorder(test["data"], rank).dump();
        double unused = 0;
        if (sorted != text && walk(g.value(), sorted, t, false, &unused)) {
          ooo = true;
        } else {
          t.validations.push_back(f.filename().string() + ": " + text.substr(0, 160));
        }
      } else if (!test["valid"].get<bool>() && ok) {
        pass = false;
        ++t.invalidation_error;
        t.invalidations.push_back(f.filename().string() + ": " + text.substr(0, 200));
      }
    }
    if (verbose) {
      std::printf(
          "  schema %s compile %.0f us, slowest mask %.0f us\n", f.filename().c_str(), compile_us,
          t.tbm_us.empty() ? 0.0
                           : *std::max_element(t.tbm_us.begin() + tbm_before, t.tbm_us.end()));
    }
    if (pass) {
      ++t.passing;
    } else if (ooo) {
      ++t.out_of_order;
    } else {
      ++t.validation_error;
    }
  }
  const double seconds = us_since(start) / 1e6;
  const double pass_pct = 100.0 * t.passing / std::max(1, t.schemas);
  std::printf("MaskBench sample (%s): %d schemas in %.1f s\n",
              unlisted ? "unlisted properties allowed" : "listed properties only", t.schemas,
              seconds);
  std::printf(
      "| passing | compile error | validation error (out-of-order keys) | invalidation error |\n");
  std::printf("| %d (%.1f%%) | %d | %d (+%d) | %d |\n", t.passing, pass_pct, t.compile_error,
              t.validation_error, t.out_of_order, t.invalidation_error);
  std::printf(
      "TTFM us p50 %.0f p95 %.0f p99 %.0f | TBM us p50 %.0f p95 %.0f p99 %.0f (%zu masks)\n",
      percentile(t.ttfm_us, 50), percentile(t.ttfm_us, 95), percentile(t.ttfm_us, 99),
      percentile(t.tbm_us, 50), percentile(t.tbm_us, 95), percentile(t.tbm_us, 99),
      t.tbm_us.size());
  std::vector<std::pair<int, std::string>> reasons;
  for (const auto& [r, n] : t.refusals) reasons.push_back({n, r});
  std::sort(reasons.rbegin(), reasons.rend());
  for (const auto& [n, r] : reasons) std::printf("  refused %3d: %s\n", n, r.c_str());
  for (const std::string& v : t.validations) std::printf("  validation error: %s\n", v.c_str());
  for (const std::string& v : t.invalidations) std::printf("  INVALIDATION: %s\n", v.c_str());
  EXPECT_EQ(t.invalidation_error, 0);
  EXPECT_GE(pass_pct, 65.0);
  EXPECT_LT(seconds, 80.0);
}

// Default mode: objects carry their listed properties only.
TEST(GrammarMaskBench, SharedSchemas) {
  if (compiler() == nullptr) GTEST_SKIP() << "default model missing";
  const fs::path dir = tokenizer_test::shared_dir() / "testdata" / "json-schemas";
  if (!fs::is_directory(dir))
    GTEST_SKIP() << "shared schemas missing: " << dir << " (set NOVASERVE_SHARED_DIR)";
  run_maskbench(false);
}

// Spec-exact additionalProperties: unlisted keys allowed where the schema allows them.
TEST(GrammarMaskBench, SharedSchemasUnlistedProperties) {
  if (compiler() == nullptr) GTEST_SKIP() << "default model missing";
  const fs::path dir = tokenizer_test::shared_dir() / "testdata" / "json-schemas";
  if (!fs::is_directory(dir))
    GTEST_SKIP() << "shared schemas missing: " << dir << " (set NOVASERVE_SHARED_DIR)";
  run_maskbench(true);
}

}  // namespace
}  // namespace novaserve::grammar
