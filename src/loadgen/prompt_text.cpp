#include "loadgen/prompt_text.h"

#include <cctype>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

// Each of these is a single token (with its leading space) in SmolLM2's vocabulary, checked
// with `novaserve tokenize`; tests/unit/loadgen/prompt_text_test.cpp re-checks the estimate.
constexpr const char* kWords[] = {
    "about",      "across",      "adjusted",     "after",       "again",
    "against",    "all",         "already",      "also",        "analysts",
    "and",        "announced",   "annual",       "approved",    "approximately",
    "are",        "as",          "asset",        "assets",      "at",
    "average",    "balance",     "bank",         "basis",       "be",
    "been",       "before",      "between",      "billion",     "board",
    "bond",       "bonds",       "both",         "broadly",     "budget",
    "by",         "capacity",    "capital",      "cash",        "change",
    "changes",    "charge",      "charges",      "clients",     "commercial",
    "company",    "compared",    "completed",    "conditions",  "consumer",
    "contract",   "contracts",   "core",         "corporate",   "cost",
    "costs",      "could",       "credit",       "currency",    "current",
    "customer",   "customers",   "debt",         "decline",     "declined",
    "decrease",   "decreased",   "demand",       "did",         "dividend",
    "dividends",  "division",    "does",         "dollar",      "domestic",
    "driven",     "during",      "each",         "earnings",    "economy",
    "effect",     "environment", "equity",       "estimate",    "estimates",
    "euro",       "expected",    "expense",      "expenses",    "exposure",
    "fall",       "fee",         "fees",         "fell",        "firm",
    "fiscal",     "flow",        "flows",        "for",         "forecast",
    "from",       "fund",        "further",      "future",      "gain",
    "gains",      "global",      "grew",         "gross",       "group",
    "growth",     "guidance",    "had",          "has",         "have",
    "hedge",      "higher",      "how",          "however",     "impact",
    "improved",   "improvement", "in",           "income",      "increase",
    "increased",  "industry",    "inflation",    "interest",    "international",
    "into",       "inventory",   "investment",   "investments", "investors",
    "is",         "issued",      "largely",      "lenders",     "level",
    "levels",     "liabilities", "liability",    "loan",        "loans",
    "loss",       "losses",      "lower",        "mainly",      "maintained",
    "management", "margin",      "margins",      "market",      "markets",
    "million",    "moderate",    "modest",       "month",       "nearly",
    "net",        "new",         "note",         "notes",       "of",
    "offset",     "on",          "only",         "operating",   "orders",
    "organic",    "outlook",     "over",         "partly",      "payment",
    "payments",   "per",         "percent",      "period",      "point",
    "points",     "pressure",    "previous",     "price",       "prices",
    "pricing",    "primarily",   "prior",        "product",     "production",
    "products",   "profit",      "profits",      "quarter",     "raised",
    "range",      "rate",        "rates",        "ratio",       "recorded",
    "reduced",    "reflected",   "region",       "regulators",  "remained",
    "report",     "reported",    "reserve",      "reserves",    "results",
    "retail",     "return",      "returns",      "revenue",     "revenues",
    "rise",       "risk",        "risks",        "robust",      "rose",
    "roughly",    "sales",       "sector",       "segment",     "service",
    "services",   "share",       "shareholders", "shares",      "sharp",
    "sharply",    "sheet",       "should",       "significant", "slight",
    "slightly",   "solid",       "spending",     "stable",      "statement",
    "steady",     "still",       "stock",        "stocks",      "strong",
    "strongly",   "subsidiary",  "substantial",  "supply",      "target",
    "targets",    "tax",         "taxes",        "that",        "the",
    "therefore",  "this",        "through",      "to",          "total",
    "trend",      "trends",      "under",        "unit",        "value",
    "values",     "volume",      "volumes",      "was",         "weak",
    "were",       "what",        "when",         "where",       "which",
    "while",      "why",         "will",         "with",        "within",
    "without",    "would",       "year",         "yield",       "yields",
};

constexpr const char* kStarters[] = {"The",    "Revenue", "Management", "Net",    "Operating",
                                     "Our",    "This",    "In",         "During", "Total",
                                     "Cash",   "Sales",   "Capital",    "Costs",  "Demand",
                                     "Credit", "Growth",  "Risk",       "Outlook"};

template <typename T, size_t N>
const char* pick(LoadgenRng& rng, const T (&list)[N]) {
  return list[rng.uniform_int(0, static_cast<int64_t>(N) - 1)];
}

}  // namespace

std::string PromptText::units(LoadgenRng& rng, int32_t n_units) const {
  std::string out;
  int32_t made = 0;
  int64_t sentence_left = 0;  // words left in the current sentence; 0: start a new one
  int64_t paragraph_left = rng.uniform_int(3, 6);  // sentences left in the paragraph
  bool sentence_open = false;
  while (made < n_units) {
    if (!sentence_open) {
      if (paragraph_left == 0) {
        out += "\n\n";
        paragraph_left = rng.uniform_int(3, 6);
        ++made;
        continue;
      }
      out += ' ';
      out += pick(rng, kStarters);
      sentence_left = rng.uniform_int(6, 16);
      sentence_open = true;
    } else if (sentence_left == 0) {
      out += '.';
      sentence_open = false;
      --paragraph_left;
    } else {
      out += ' ';
      out += pick(rng, kWords);
      --sentence_left;
      if (sentence_left > 0 && made + 1 < n_units && rng.uniform_int(0, 9) == 0) {
        out += ',';
        ++made;
      }
    }
    ++made;
  }
  return out;
}

std::string PromptText::prose(LoadgenRng& rng, int32_t n_tokens) const {
  if (n_tokens < 1) return "";
  if (tokenizer_ == nullptr) return units(rng, n_tokens);
  // Generate more prose than needed (other vocabularies split some words), then cut at
  // exactly n tokens.
  int32_t n_units = n_tokens + n_tokens / 4 + 8;
  for (;;) {
    const std::string text = units(rng, n_units);
    std::vector<int32_t> ids = tokenizer_->encode(text, false, false);
    if (ids.size() >= static_cast<size_t>(n_tokens)) {
      ids.resize(static_cast<size_t>(n_tokens));
      return tokenizer_->decode(ids);
    }
    n_units *= 2;
  }
}

int32_t PromptText::count(std::string_view text) const {
  if (tokenizer_ != nullptr) {
    return static_cast<int32_t>(tokenizer_->encode(text, false, false).size());
  }
  int32_t n = 0;
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (std::isalpha(c) || c >= 0x80) {
      while (i < text.size() && (std::isalpha(static_cast<unsigned char>(text[i])) ||
                                 static_cast<unsigned char>(text[i]) >= 0x80)) {
        ++i;
      }
      ++n;
    } else if (std::isspace(c)) {
      bool line_break = false;
      while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) {
        line_break |= text[i] == '\n';
        ++i;
      }
      n += line_break ? 1 : 0;
    } else {
      ++n;  // a digit or punctuation mark
      ++i;
    }
  }
  return n;
}

}  // namespace novaserve
