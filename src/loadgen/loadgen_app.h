// `novaserve loadgen`: connects, runs the load (or the --find-max-qps search) and reports.
#pragma once

#include "loadgen/loadgen_flags.h"

namespace novaserve {

/// Runs a validated configuration: the summary goes to stdout, progress (probes, soak samples)
/// to stderr, reports to --json/--svg. Returns the exit status: 0 when the run completed (a
/// missed SLO or failed requests are results, not failures of the tool); 2 after a one-line
/// error on stderr when it could not start: an unreadable --tokenizer-model, an unwritable
/// output file, an unresolvable host, a server that does not accept connections or refuses
/// the key (401/403 from /v1/models), a --server-pid that is not running, or a failed warm-up
/// request (e.g. 404 for a --model the server does not serve).
int run_loadgen(const LoadgenConfig& config);

}  // namespace novaserve
