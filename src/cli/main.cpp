// novaserve command-line entry point: one CLI11 app, one subcommand per src/cli/<cmd>.cpp.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"novaserve: Llama-family inference server and tools", "novaserve"};
  app.set_version_flag("--version", NOVASERVE_VERSION);
  app.require_subcommand(1);

  // Subcommand callbacks run inside parse() and store their exit status here.
  int exit_code = 0;
  novaserve::register_inspect(app, exit_code);
  novaserve::register_generate(app, exit_code);
  novaserve::register_tokenize(app, exit_code);
  novaserve::register_synth(app, exit_code);
  novaserve::register_serve(app, exit_code);
  novaserve::register_bench(app, exit_code);
  novaserve::register_quantize(app, exit_code);
  novaserve::register_convert(app, exit_code);
  novaserve::register_perplexity(app, exit_code);
  novaserve::register_loadgen(app, exit_code);
  novaserve::register_doctor(app, exit_code);
  novaserve::register_governor(app, exit_code);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help/--version arrive as "errors" with exit code 0: CLI11 prints them.
    if (e.get_exit_code() == 0) return app.exit(e);
    // Every usage error exits 2 with one line on stderr (CLI11's own codes, e.g. 105, and its
    // two-line "Run with --help" form are not part of our contract).
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    // The same prefix as the commands' own errors (cli_error.h): "novaserve COMMAND: error:".
    std::string who = "novaserve";
    for (const CLI::App* sub : app.get_subcommands()) who += " " + sub->get_name();
    std::fprintf(stderr, "%s: error: %s (see %s --help)\n", who.c_str(), msg.c_str(), who.c_str());
    return 2;
  }
  return exit_code;
}
