#include "grammar/json_lexemes.h"

#include <string>

namespace novaserve::grammar::json_rx {
namespace {

Rx digit() {
  return Rx::cls({{'0', '9'}});
}
Rx digits(int64_t n) {
  return Rx::rep(digit(), n, n);
}
Rx hex() {
  return Rx::cls({{'0', '9'}, {'A', 'F'}, {'a', 'f'}});
}
Rx c(char lo, char hi) {
  return Rx::cls({{static_cast<uint32_t>(lo), static_cast<uint32_t>(hi)}});
}
Rx nothing() {
  return Rx::alt({});
}

// Decimal strings of equal length between a and b (a <= b), leading zeros allowed.
Rx same_length(std::string_view a, std::string_view b) {
  if (a.empty()) return Rx::lit("");
  if (a[0] == b[0])
    return Rx::seq({Rx::lit(a.substr(0, 1)), same_length(a.substr(1), b.substr(1))});
  const size_t n = a.size() - 1;
  const bool a_rest_min = a.substr(1).find_first_not_of('0') == std::string_view::npos;
  const bool b_rest_max = b.substr(1).find_first_not_of('9') == std::string_view::npos;
  std::vector<Rx> alts;
  char lo = a[0], hi = b[0];
  if (!a_rest_min) {
    alts.push_back(
        Rx::seq({Rx::lit(a.substr(0, 1)), same_length(a.substr(1), std::string(n, '9'))}));
    ++lo;
  }
  if (!b_rest_max) --hi;
  if (lo <= hi) alts.push_back(Rx::seq({c(lo, hi), digits(static_cast<int64_t>(n))}));
  if (!b_rest_max) {
    alts.push_back(
        Rx::seq({Rx::lit(b.substr(0, 1)), same_length(std::string(n, '0'), b.substr(1))}));
  }
  return Rx::alt(std::move(alts));
}

// Non-negative integers in [lo, hi] (hi absent: unbounded), canonical spelling.
Rx natural_range(uint64_t lo, std::optional<uint64_t> hi) {
  if (hi && *hi < lo) return nothing();
  const std::string a = std::to_string(lo);
  const size_t la = a.size(), lb = hi ? std::to_string(*hi).size() : la;
  std::vector<Rx> alts;
  for (size_t d = la; d <= lb; ++d) {
    std::string low(d, '0');  // 10...0, or lo itself for its own length
    low[0] = '1';
    if (d == la) low = a;
    const std::string high = hi && d == lb ? std::to_string(*hi) : std::string(d, '9');
    alts.push_back(same_length(low, high));
  }
  if (!hi) alts.push_back(Rx::seq({c('1', '9'), Rx::rep(digit(), static_cast<int64_t>(la), -1)}));
  return Rx::alt(std::move(alts));
}

uint64_t magnitude(int64_t v) {
  return v < 0 ? 0 - static_cast<uint64_t>(v) : v;
}

// Non-negative decimals I[.F] with L < x or L <= x (per l_excl) and x < H or x <= H (H absent:
// unbounded); integral bounds.
Rx decimal_range(uint64_t l, bool l_excl, std::optional<uint64_t> h, bool h_excl) {
  const Rx frac_opt = Rx::opt(Rx::seq({Rx::lit("."), Rx::rep(digit(), 1, -1)}));
  const Rx frac_nonzero =
      Rx::seq({Rx::lit("."), Rx::star(digit()), c('1', '9'), Rx::star(digit())});
  std::vector<Rx> alts;
  const uint64_t low_int = l + (l_excl ? 1 : 0);
  if (!h) {
    alts.push_back(Rx::seq({natural_range(low_int, std::nullopt), frac_opt}));
  } else if (*h >= 1 && *h - 1 >= low_int) {
    alts.push_back(Rx::seq({natural_range(low_int, *h - 1), frac_opt}));  // I < H: any fraction
  }
  if (l_excl && (!h || l < *h)) alts.push_back(Rx::seq({Rx::lit(std::to_string(l)), frac_nonzero}));
  if (h && !h_excl && (*h > l || (*h == l && !l_excl))) {
    alts.push_back(Rx::seq({Rx::lit(std::to_string(*h)),
                            Rx::opt(Rx::seq({Rx::lit("."), Rx::rep(Rx::lit("0"), 1, -1)}))}));
  }
  return Rx::alt(std::move(alts));
}

// A character JSON writes as itself: anything but controls, '"' and '\\' (RFC 8259, 7).
Rx unescaped_char() {
  return Rx::cls(subtract_ranges({{0, kMaxCodepoint}}, {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}));
}

// A two-character escape: \" \\ \/ \b \f \n \r \t (RFC 8259, 7).
Rx short_escape_char() {
  return Rx::seq({Rx::lit("\\"), Rx::cls({{'"', '"'},
                                          {'\\', '\\'},
                                          {'/', '/'},
                                          {'b', 'b'},
                                          {'f', 'f'},
                                          {'n', 'n'},
                                          {'r', 'r'},
                                          {'t', 't'}})});
}

}  // namespace

Rx string_char() {
  const Rx raw = unescaped_char();
  const Rx short_escape = short_escape_char();
  const Rx u_escape = Rx::seq(
      {Rx::lit("\\u"),
       Rx::alt({Rx::seq({Rx::cls({{'0', '9'}, {'a', 'c'}, {'A', 'C'}}), hex(), hex(), hex()}),
                Rx::seq({Rx::cls({{'d', 'd'}, {'D', 'D'}}), c('0', '7'), hex(), hex()}),
                Rx::seq({Rx::cls({{'e', 'f'}, {'E', 'F'}}), hex(), hex(), hex()})})});
  const Rx pair =
      Rx::seq({Rx::lit("\\u"), Rx::cls({{'d', 'd'}, {'D', 'D'}}),
               Rx::cls({{'8', '9'}, {'a', 'b'}, {'A', 'B'}}), hex(), hex(), Rx::lit("\\u"),
               Rx::cls({{'d', 'd'}, {'D', 'D'}}), Rx::cls({{'c', 'f'}, {'C', 'F'}}), hex(), hex()});
  return Rx::alt({raw, short_escape, u_escape, pair});
}

Rx quoted(Rx content) {
  return Rx::seq({Rx::lit("\""), std::move(content), Rx::lit("\"")});
}

Rx string(int64_t min, int64_t max) {
  if (min == 0 && max < 0) return quoted(Rx::star(string_char()));
  // Bounded strings unroll one copy per character: use the spellings compact serializers emit
  // (raw characters, short escapes, \u00XX for control characters), a subset with a third of
  // the rules.
  const Rx raw = unescaped_char();
  const Rx short_escape = short_escape_char();
  const Rx control = Rx::seq({Rx::lit("\\u00"), c('0', '1'), hex()});
  return quoted(Rx::rep(Rx::alt({raw, short_escape, control}), min, max));
}

Rx integer() {
  return Rx::seq(
      {Rx::opt(Rx::lit("-")), Rx::alt({Rx::lit("0"), Rx::seq({c('1', '9'), Rx::star(digit())})})});
}

Rx number() {
  return Rx::seq(
      {integer(), Rx::opt(Rx::seq({Rx::lit("."), Rx::rep(digit(), 1, -1)})),
       Rx::opt(Rx::seq({Rx::cls({{'e', 'e'}, {'E', 'E'}}),
                        Rx::opt(Rx::cls({{'+', '+'}, {'-', '-'}})), Rx::rep(digit(), 1, -1)}))});
}

Result<Rx> integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  if (lo && hi && *lo > *hi) return Err(ErrorCode::kInvalidInput, "unsatisfiable integer range");
  if (!lo && !hi) return integer();
  std::vector<Rx> alts;
  if (!hi || *hi >= 0) {
    alts.push_back(
        natural_range(lo && *lo > 0 ? static_cast<uint64_t>(*lo) : 0,
                      hi ? std::optional<uint64_t>(static_cast<uint64_t>(*hi)) : std::nullopt));
  }
  if (!lo || *lo < 0) {
    const uint64_t low = hi && *hi < 0 ? magnitude(*hi) : 1;
    std::optional<uint64_t> high;
    if (lo) high = magnitude(*lo);
    alts.push_back(Rx::seq({Rx::lit("-"), natural_range(low, high)}));
  }
  return Rx::alt(std::move(alts));
}

Result<Rx> number_range(std::optional<int64_t> lo, bool lo_x, std::optional<int64_t> hi,
                        bool hi_x) {
  if (!lo && !hi) return number();
  if (lo && hi && (*lo > *hi || (*lo == *hi && (lo_x || hi_x)))) {
    return Err(ErrorCode::kInvalidInput, "unsatisfiable number range");
  }
  std::vector<Rx> alts;
  if (!hi || *hi > 0 || (*hi == 0 && !hi_x)) {  // x >= 0
    const bool pos_lo = lo && *lo >= 0;
    alts.push_back(decimal_range(
        pos_lo ? static_cast<uint64_t>(*lo) : 0, pos_lo && lo_x,
        hi ? std::optional<uint64_t>(static_cast<uint64_t>(*hi)) : std::nullopt, hi_x));
  }
  if (!lo || *lo < 0) {  // x < 0 as "-" m with m > 0
    const bool neg_hi = hi && *hi < 0;
    alts.push_back(Rx::seq(
        {Rx::lit("-"),
         decimal_range(neg_hi ? magnitude(*hi) : 0, neg_hi ? hi_x : true,
                       lo ? std::optional<uint64_t>(magnitude(*lo)) : std::nullopt, lo_x)}));
  }
  return Rx::alt(std::move(alts));
}

Result<std::optional<Rx>> format(std::string_view name) {
  const Rx d2 = digits(2);
  const Rx month31 = Rx::alt({Rx::lit("01"), Rx::lit("03"), Rx::lit("05"), Rx::lit("07"),
                              Rx::lit("08"), Rx::lit("10"), Rx::lit("12")});
  const Rx month30 = Rx::alt({Rx::lit("04"), Rx::lit("06"), Rx::lit("09"), Rx::lit("11")});
  const Rx day28 = Rx::alt({Rx::seq({Rx::lit("0"), c('1', '9')}), Rx::seq({Rx::lit("1"), digit()}),
                            Rx::seq({Rx::lit("2"), c('0', '8')})});
  // Every month has days 01-28; 29-30 all but February; 31 the long months. February 29 is
  // left out (valid only in leap years): a subset.
  const Rx date =
      Rx::seq({digits(4), Rx::lit("-"),
               Rx::alt({Rx::seq({Rx::alt({month31, month30, Rx::lit("02")}), Rx::lit("-"), day28}),
                        Rx::seq({Rx::alt({month31, month30}), Rx::lit("-"),
                                 Rx::alt({Rx::lit("29"), Rx::lit("30")})}),
                        Rx::seq({month31, Rx::lit("-31")})})});
  const Rx hour = Rx::alt({Rx::seq({c('0', '1'), digit()}), Rx::seq({Rx::lit("2"), c('0', '3')})});
  const Rx minute = Rx::seq({c('0', '5'), digit()});
  const Rx offset = Rx::alt(
      {Rx::lit("Z"), Rx::seq({Rx::cls({{'+', '+'}, {'-', '-'}}), hour, Rx::lit(":"), minute})});
  const Rx time = Rx::seq({hour, Rx::lit(":"), minute, Rx::lit(":"), minute,
                           Rx::opt(Rx::seq({Rx::lit("."), Rx::rep(digit(), 1, 9)})), offset});
  const Rx alnum = Rx::cls({{'0', '9'}, {'A', 'Z'}, {'a', 'z'}});
  const Rx label = Rx::seq(
      {alnum,
       Rx::opt(Rx::seq(
           {Rx::rep(Rx::cls({{'0', '9'}, {'A', 'Z'}, {'a', 'z'}, {'-', '-'}}), 0, 61), alnum}))});
  if (name == "date") return std::optional<Rx>(date);
  if (name == "time") return std::optional<Rx>(time);
  if (name == "date-time") return std::optional<Rx>(Rx::seq({date, Rx::lit("T"), time}));
  if (name == "uuid") {
    return std::optional<Rx>(Rx::seq({Rx::rep(hex(), 8, 8), Rx::lit("-"), Rx::rep(hex(), 4, 4),
                                      Rx::lit("-"), Rx::rep(hex(), 4, 4), Rx::lit("-"),
                                      Rx::rep(hex(), 4, 4), Rx::lit("-"), Rx::rep(hex(), 12, 12)}));
  }
  if (name == "email") {
    const Rx atom = Rx::rep(
        Rx::cls({{'0', '9'}, {'A', 'Z'}, {'a', 'z'}, {'_', '_'}, {'+', '+'}, {'-', '-'}}), 1, 32);
    return std::optional<Rx>(
        Rx::seq({atom, Rx::rep(Rx::seq({Rx::lit("."), atom}), 0, 3), Rx::lit("@"), label,
                 Rx::rep(Rx::seq({Rx::lit("."), label}), 1, 2)}));
  }
  if (name == "hostname") {
    return std::optional<Rx>(Rx::seq({label, Rx::rep(Rx::seq({Rx::lit("."), label}), 0, 2)}));
  }
  if (name == "ipv4") {
    const Rx octet = Rx::alt(
        {digit(), Rx::seq({c('1', '9'), digit()}), Rx::seq({Rx::lit("1"), digit(), digit()}),
         Rx::seq({Rx::lit("2"), c('0', '4'), digit()}), Rx::seq({Rx::lit("25"), c('0', '5')})});
    return std::optional<Rx>(
        Rx::seq({octet, Rx::lit("."), octet, Rx::lit("."), octet, Rx::lit("."), octet}));
  }
  if (name == "uri") {
    // scheme ":" ( "//" reg-name [":" port] path-abempty | path-rootless ) ["?" query] ["#"
    // fragment]
    const Rx pct = Rx::seq({Rx::lit("%"), hex(), hex()});
    const CodepointRanges unreserved_sub = {{'0', '9'}, {'A', 'Z'}, {'a', 'z'}, {'-', '.'},
                                            {'_', '_'}, {'~', '~'}, {'!', '!'}, {'$', '$'},
                                            {'&', ','}, {';', ';'}, {'=', '='}};
    CodepointRanges pchar_set = unreserved_sub;
    pchar_set.push_back({':', ':'});
    pchar_set.push_back({'@', '@'});
    const Rx pchar = Rx::alt({Rx::cls(pchar_set), pct});
    const Rx segment = Rx::star(pchar);
    const Rx reg_name = Rx::rep(Rx::alt({Rx::cls(unreserved_sub), pct}), 1, 253);
    const Rx authority_path =
        Rx::seq({Rx::lit("//"), reg_name, Rx::opt(Rx::seq({Rx::lit(":"), Rx::rep(digit(), 1, 5)})),
                 Rx::star(Rx::seq({Rx::lit("/"), segment}))});
    const Rx rootless =
        Rx::seq({Rx::rep(pchar, 1, -1), Rx::star(Rx::seq({Rx::lit("/"), segment}))});
    const Rx tail = Rx::star(Rx::alt({pchar, Rx::cls({{'/', '/'}, {'?', '?'}})}));
    return std::optional<Rx>(
        Rx::seq({c('a', 'z'), Rx::star(Rx::cls({{'a', 'z'}, {'0', '9'}, {'+', '+'}, {'-', '.'}})),
                 Rx::lit(":"), Rx::alt({authority_path, rootless}),
                 Rx::opt(Rx::seq({Rx::lit("?"), tail})), Rx::opt(Rx::seq({Rx::lit("#"), tail}))}));
  }
  static constexpr std::string_view kChecked[] = {
      "ipv6",         "idn-email",     "idn-hostname",
      "iri",          "iri-reference", "uri-reference",
      "uri-template", "json-pointer",  "relative-json-pointer",
      "regex",        "duration"};
  for (std::string_view k : kChecked) {
    if (name == k) {
      return Err(ErrorCode::kInvalidInput, "unsupported format '" + std::string(name) + "'");
    }
  }
  return std::optional<Rx>();
}

}  // namespace novaserve::grammar::json_rx
