// `novaserve tokenize`: token ids (and pieces) of a text or file with a GGUF model's tokenizer.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/cli_error.h"
#include "cli/commands.h"
#include "common/mmap_file.h"
#include "common/utf8.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  std::string file;
  bool ids_only = false;
  bool no_bos = false;
  bool special = false;
  const CLI::Option* text_opt = nullptr;  // to tell `--text ""` from no --text
  const CLI::Option* file_opt = nullptr;
};

int fail(std::string message) {
  return cli_error("tokenize", std::move(message));
}

// Quotes a piece so that each token stays on the one output line: \n, \t, \r, \\, \' and
// non-printable or non-UTF-8 bytes are escaped (\xNN); valid multi-byte UTF-8 is kept.
std::string quote(const std::string& piece) {
  std::string out = "'";
  for (size_t i = 0; i < piece.size(); ++i) {
    const auto c = static_cast<unsigned char>(piece[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\\' || c == '\'') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      // Keep a well-formed multi-byte character; escape anything else byte by byte.
      const utf8::Step st = utf8::next(std::string_view(piece).substr(i));
      if (st.kind == utf8::Step::kComplete && st.length > 1) {
        out.append(piece, i, st.length);
        i += st.length - 1;
      } else {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\x%02X", c);
        out += buf;
      }
    }
  }
  return out + "'";
}

int run_tokenize(const TokenizeOptions& o) {
  const bool has_text = o.text_opt->count() > 0, has_file = o.file_opt->count() > 0;
  if (has_text == has_file) return fail("give exactly one of --text or --file");
  std::string input = o.text;
  if (has_file) {
    // MmapFile rejects directories and other non-regular files and names the OS error.
    auto file = MmapFile::open(o.file);
    if (!file.ok()) return fail("--file: " + file.error().message);
    const auto& f = **file;
    input.assign(reinterpret_cast<const char*>(f.data()), f.size());
  }
  auto gguf = GgufFile::open(o.model);
  if (!gguf.ok()) return fail(gguf.error().message);  // names the path already
  auto tok = Tokenizer::from_gguf(**gguf);
  if (!tok.ok()) return fail(o.model + ": " + tok.error().message);
  const Tokenizer& t = **tok;

  std::vector<int32_t> ids;
  if (t.add_bos() && !o.no_bos) ids.push_back(t.bos_id());
  const auto body = t.encode(input, /*add_special=*/false, o.special);
  ids.insert(ids.end(), body.begin(), body.end());
  if (t.add_eos()) ids.push_back(t.eos_id());

  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) line += ' ';
    line += std::to_string(ids[i]);
    if (!o.ids_only) line += ":" + quote(t.token_to_piece(ids[i], /*special=*/true));
  }
  std::printf("%s\n", line.c_str());
  return 0;
}

}  // namespace

void register_tokenize(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "tokenize",
      "Tokenize a text or file with a GGUF model's tokenizer (a vocab-only GGUF works).\n"
      "Prints one line: space-separated `id:'piece'` entries, where piece is the token's bytes\n"
      "(control tokens shown by their text; \\n, \\t, \\r, \\\\, \\' and non-UTF-8 bytes\n"
      "escaped). With --ids-only, only the space-separated ids. BOS/EOS are added when the\n"
      "vocabulary asks for them. Exit status 2 on a bad file or bad arguments.");
  auto o = std::make_shared<TokenizeOptions>();
  cmd->add_option("--model,-m", o->model, "GGUF file with tokenizer.ggml.* metadata")->required();
  o->text_opt = cmd->add_option("--text,-t", o->text, "text to tokenize");
  o->file_opt = cmd->add_option("--file,-f", o->file, "file whose whole contents are tokenized");
  cmd->add_flag("--ids-only", o->ids_only, "print only the space-separated token ids");
  cmd->add_flag("--no-bos", o->no_bos, "do not add BOS even if the vocabulary asks for it");
  cmd->add_flag("--special", o->special,
                "parse special-token text such as <|im_start|> into its token");
  cmd->callback([o, &exit_code] { exit_code = run_tokenize(*o); });
}

}  // namespace novaserve
